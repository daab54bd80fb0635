"""DVC stage: one MLflow run per setting of one (benchmark, roster entry); figures to the parent.

Kept apart from evaluate, with a ``cache: false`` marker output, so DVC's run-cache can never skip
the logging when an experiment restores evaluation outputs from cache.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.io import write_json
from cultureqa.paths import project_root
from cultureqa.runlog import read_run, write_marker
from cultureqa.tracking import (
    benchmark_dataset,
    evaluation_metrics,
    log_runs,
    source_metrics,
    sweep_tags,
    tracking_uri,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--benchmark", required=True)
    parser.add_argument("--model", required=True)
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    tracking = select(params, "tracking")
    run_dir = root / "data" / "eval" / args.benchmark / args.model
    marker = root / "data" / "track" / args.benchmark / f"{args.model}.json"
    if not tracking.get("enabled", True):
        write_json(marker, {"enabled": False, "runs": {}})
        return 0
    predictions, run_info = read_run(run_dir, project_root())
    slices = [tuple(s) for s in select(params, f"benchmarks.{args.benchmark}").get("slices") or []]
    dataset = benchmark_dataset(run_info["provenance"]["dataset"])
    runs = log_runs(
        project_root(),
        f"{tracking['experiment_prefix']}/{args.benchmark}",
        run_info,
        predictions,
        "setting",
        lambda part: {**evaluation_metrics(part, slices), **source_metrics(run_info["details"])},
        lambda _: dataset,
        tracking_uri(tracking),
        sweep_tags(params),
        sorted((root / "reports" / args.benchmark).glob("*.png")),
    )
    write_marker(marker, {"enabled": True, "runs": sorted(runs)}, runs)
    print(f"logged {len(runs)} MLflow run(s) for {args.benchmark}/{run_info['model']['id']}")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
