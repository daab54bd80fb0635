"""ID-MoCQA evaluation (DESIGN.md §6).

``evaluate`` (one model × prompt style), ``answers`` (reply parsing, prompt styles, human answer
sheets), ``hop`` (hop-necessity diagnostic), ``metrics`` and ``report`` (tables, plots, MLflow),
``question_analysis``. The types the build shares with it (``schema``, ``models``) live in
:mod:`cultureqa.mocqa_shared`, so the build stages do not depend on this folder. Nothing here
imports the build package, so a build edit never reruns evaluation code deps.
"""
