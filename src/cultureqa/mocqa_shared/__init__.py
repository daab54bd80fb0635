"""ID-MoCQA types shared by the build and the evaluation (DESIGN.md §5–§6).

``schema`` (column contracts, ids, removal records) and ``models`` (LLM panel calls through the
response store). A package of its own so that the build stages' DVC code deps name it and not
:mod:`cultureqa.mocqa`: editing evaluation code then reruns only the stages that evaluate
(``mocqa_hop`` among them), never ingest → rebalance. Nothing here imports either side.
"""
