"""ID-MoCQA build: single-hop IndoCulture items become two-hop cultural questions (DESIGN.md §5).

Stages, each a pure function over DataFrames with a thin script in ``stages/mocqa_<step>.py``:
ingest → expand (template or LLM clue generator) → judge (rules or LLM panel) → verify (leakage,
option copying, structure) → rebalance (both languages per pair) → finalize (ids, balanced gold
positions, dataset card) → validate (GX suite ``expectations/mocqa_dataset.json``). ``human``
exports annotation sheets and scores agreement. The LLM clue generator lives in :mod:`.llm`.
Imports flow one way: build → :mod:`cultureqa.mocqa_shared` (shared types), never back; only
:mod:`.hop_stage` (the ``mocqa_hop`` stage, which evaluates) imports :mod:`cultureqa.mocqa`.
"""
