"""ID-MoCQA types shared by the build (the two-hop engine) and the evaluation (DESIGN.md §5–§6).

``schema`` (column contracts, ids, removal records), ``models`` (LLM panel calls through the
response store), ``positions`` (assigned gold positions), ``templates`` (the province names'
bilingual rules the province tables read) and ``textchecks`` (the option-copy check). A package
of its own so that the build stages' DVC code deps name it and not :mod:`cultureqa.mocqa`:
editing evaluation code then reruns only the stages that evaluate (``twohop_hop`` among them),
never the build. Nothing here imports either side.
"""
