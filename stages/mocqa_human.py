"""ID-MoCQA human validation (manual tool, not a DVC stage).

  python stages/mocqa_human.py export --out annotation.csv [--from expand|finalize]
  python stages/mocqa_human.py report --labels labels.csv [--from expand|finalize]

``export`` writes a stratified sample (clue type × language) with blank annotation columns;
``report`` reads the annotators' labels (one row per item × annotator) and writes Cohen's κ per
clue type, judge-vs-human precision/recall, ICC(2,1) per clue type and the human baseline to
metrics/mocqa/human.json. Annotate the expand output to measure the judge (it has not filtered
it yet), or the final dataset for a human baseline.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)
import pandas as pd

from cultureqa.config import load_params, run_stage, setup_stage
from cultureqa.io import SourceError, write_csv, write_json
from cultureqa.knowledge.gazetteer import normalize_province
from cultureqa.mocqa_build import human
from cultureqa.mocqa_build.pipeline import MocqaSettings


def _items(settings: MocqaSettings, stage: str) -> pd.DataFrame:
    frame = settings.read(stage)
    return frame.rename(columns={"variant_id": "item_id"}) if "variant_id" in frame else frame


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("command", choices=["export", "report"])
    parser.add_argument("--from", dest="stage", default="expand", choices=["expand", "finalize"])
    parser.add_argument("--out", type=Path, default=Path("annotation_sample.csv"))
    parser.add_argument("--labels", type=Path)
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    settings = MocqaSettings.from_params(load_params(root / "params.yaml"), root)
    items = _items(settings, args.stage)
    if args.command == "export":
        sample = human.export_annotation_sample(items, settings.human_per_stratum, settings.seed)
        write_csv(args.out, sample)
        print(f"wrote {len(sample)} items to {args.out}")
        return 0
    if args.labels is None:
        parser.error("report needs --labels")
    try:
        labels = human.import_labels(args.labels)
    except SourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    kept = set(settings.read("judge")["variant_id"])
    judge_keep = {item: item in kept for item in items["item_id"]}
    tables = {
        "kappa_quality": human.kappa_by_clue_type(labels, items),
        "judge_vs_human": human.judge_vs_human(labels, judge_keep, items),
        "icc_quality": human.icc_by_class(labels, items, "quality"),
        "human_baseline": human.human_baseline(labels, items, normalize_province),
    }
    write_json(settings.metrics_dir / "human.json", human.summarize(tables))
    print(tables["judge_vs_human"].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
