"""ID-MoCQA human validation through a CSV sheet (manual tool, not a DVC stage).

  python stages/mocqa_human.py export --out annotation.csv
  python stages/mocqa_human.py report --labels labels.csv

The same code as ``cultureqa human export|report --dataset mocqa`` (and, with a Label Studio
server, ``cultureqa human push|pull``): a stratified sample (clue type × language) with blank
annotation columns out; the annotators' labels (one row per item × annotator) in, and Cohen's κ
per clue type, judge-vs-human precision/recall, ICC(2,1) and the human baseline written to
metrics/human/mocqa.json, data/human/mocqa/report.json and an MLflow run.
docs/human-validation.md has the details.
"""

from __future__ import annotations

import sys

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.human.cli import main as human_main


def main(argv: list[str] | None = None) -> int:
    return human_main(sys.argv[1:] if argv is None else argv, dataset="mocqa")


if __name__ == "__main__":
    sys.exit(main())
