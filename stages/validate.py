"""DVC stage: check a benchmark's source against its GX suite; stop the pipeline if it fails."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from cultureqa.benchmarks.load import items_frame
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.evaluation.task import load_benchmark_items
from cultureqa.io import SourceError, write_json
from cultureqa.validation import run_suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--benchmark", required=True)
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    spec = BenchmarkSpec.from_config(select(params, f"benchmarks.{args.benchmark}"))
    try:
        items, origin, _ = load_benchmark_items(spec, root)
    except SourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    frame = items_frame([i for lang in sorted(items) for i in items[lang]])
    if not spec.expectations:
        print(f"error: benchmark '{spec.name}' declares no expectations suite", file=sys.stderr)
        return 2
    report = run_suite(root / spec.expectations, frame)
    summary = {"source": origin, "rows": len(frame), **asdict(report)}
    write_json(root / "metrics" / "validate" / f"{args.benchmark}.json", summary)
    if not report.success or report.crashes:
        print(f"error: {origin} breaks dataset invariants\n{report.message()}", file=sys.stderr)
        return 1
    print(f"{origin}: {len(frame)} item rows pass {report.evaluated} expectations")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
