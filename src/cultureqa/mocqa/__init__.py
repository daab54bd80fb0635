"""ID-MoCQA evaluation and the types the build shares with it (DESIGN.md §6).

Evaluation: ``evaluate`` (one model × prompt style), ``answers`` (reply parsing, prompt styles,
human answer sheets), ``hop`` (hop-necessity diagnostic), ``metrics`` and ``report`` (tables,
plots, MLflow), ``question_analysis``. Shared with :mod:`cultureqa.mocqa_build`: ``schema``
(column contracts, ids) and ``models`` (LLM panel calls through the response store). Nothing here
imports the build package, so a build edit never reruns evaluation code deps.
"""
