"""DVC stage: one MLflow run per setting of every roster entry of one benchmark.

One process per benchmark, so MLflow's import is paid once, not per roster entry. Kept apart from
evaluate, with ``persist`` marker outputs: DVC's run-cache never skips a stage with a persisted
output, so an experiment that restores evaluation outputs from cache still logs its runs, and the
markers are cached, so a pulled tree finds this stage up to date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.io import write_json
from cultureqa.paths import project_root
from cultureqa.runlog import prune_markers, read_run, write_marker
from cultureqa.runs.tracking import (
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
    parser.add_argument(
        "--model", action="append", help="roster entry (param path); default: evaluate.roster"
    )
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    entries = args.model or list(select(params, "evaluate")["roster"])
    written = {_track(root, params, args.benchmark, entry) for entry in entries}
    if not args.model:  # the whole roster: markers of entries that left it go
        prune_markers(root / "data" / "track" / args.benchmark, written)
    return 0


def _track(root: Path, params: Any, benchmark: str, entry: str) -> Path:
    tracking = select(params, "tracking")
    run_dir = root / "data" / "eval" / benchmark / entry
    marker = root / "data" / "track" / benchmark / f"{entry}.json"
    if not tracking.get("enabled", True):
        write_json(marker, {"enabled": False, "runs": {}})
        return marker
    predictions, run_info = read_run(run_dir, project_root())
    slices = [tuple(s) for s in select(params, f"benchmarks.{benchmark}").get("slices") or []]
    dataset = benchmark_dataset(run_info["provenance"]["dataset"])
    runs = log_runs(
        project_root(),
        f"{tracking['experiment_prefix']}/{benchmark}",
        run_info,
        predictions,
        "setting",
        lambda part: {**evaluation_metrics(part, slices), **source_metrics(run_info["details"])},
        lambda _: dataset,
        tracking_uri(tracking),
        sweep_tags(params),
        sorted((root / "reports" / benchmark).glob("*.png")),
    )
    write_marker(marker, {"enabled": True, "runs": sorted(runs)}, runs)
    print(f"logged {len(runs)} MLflow run(s) for {benchmark}/{run_info['model']['id']}")
    return marker


if __name__ == "__main__":
    sys.exit(run_stage(main))
