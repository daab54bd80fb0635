"""DVC stage: tables, metrics and plots for one benchmark across the roster."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.analysis.headline import indoculture_headline
from cultureqa.analysis.plotdata import slot_accuracy
from cultureqa.analysis.roster import key_by_roster, roster_slots
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.config import load_params, run_stage, setup_stage
from cultureqa.core.io import write_csv, write_json
from cultureqa.evaluation.report import (
    ReportPaths,
    analyze_benchmark,
    collect_predictions,
    collect_records,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--benchmark", required=True)
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    spec = BenchmarkSpec.from_params(params, args.benchmark)
    eval_dir = root / "data" / "eval" / args.benchmark
    raw = collect_predictions(eval_dir)
    predictions = key_by_roster(raw)
    metrics = root / "metrics" / args.benchmark
    paths = ReportPaths(metrics=metrics / "summary.json", reports=root / "reports" / args.benchmark)
    checked = root / "metrics" / "validate" / f"{args.benchmark}.json"
    validation = json.loads(checked.read_text(encoding="utf-8")) if checked.exists() else None
    summary = analyze_benchmark(spec, predictions, paths, validation, collect_records(eval_dir))
    write_json(metrics / "headline.json", indoculture_headline(summary, roster_slots(raw)))
    write_csv(metrics / "accuracy_by_setting.csv", slot_accuracy(raw, ["setting"]))
    for model, settings in summary.items():
        cells = ", ".join(f"{s}={v['accuracy']:.3f}" for s, v in settings.items())
        print(f"{args.benchmark} {model}: {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
