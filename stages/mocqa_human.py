"""ID-MoCQA human validation through a CSV sheet (manual tool, not a DVC stage).

  python stages/mocqa_human.py export --out annotation.csv [--from expand|finalize]
  python stages/mocqa_human.py report --labels labels.csv [--from expand|finalize]

The same code as ``cultureqa human export|report`` (and, with a Label Studio server,
``cultureqa human push|pull``): a stratified sample (clue type × language) with blank annotation
columns out; the annotators' labels (one row per item × annotator) in, and Cohen's κ per clue
type, judge-vs-human precision/recall, ICC(2,1) and the human baseline written to
metrics/human/mocqa.json and an MLflow run. docs/human-validation.md has the details.
"""

from __future__ import annotations

import sys

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.cli import main as cli_main


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    return cli_main(["human", *args[:1], "--dataset", "mocqa", *args[1:]])


if __name__ == "__main__":
    sys.exit(main())
