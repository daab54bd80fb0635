"""DVC stage: cases track — one MLflow run per (roster entry, seed), with the report's plots.

Kept apart from evaluate, with a ``cache: false`` marker output, so DVC's run-cache can never skip
the logging when an experiment restores evaluation outputs from cache.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.cases.report import log_entry_runs
from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.io import write_json
from cultureqa.paths import project_root
from cultureqa.runlog import read_run, write_marker
from cultureqa.tracking import sweep_tags, tracking_uri


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="roster entry (param path)")
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    cfg, tracking = select(params, "cases"), select(params, "tracking")
    marker = root / cfg["paths"]["track"] / f"{args.model}.json"
    if not tracking.get("enabled", True):
        write_json(marker, {"enabled": False, "runs": {}})
        return 0
    run_dir = root / cfg["paths"]["eval"] / args.model
    predictions, run_info = read_run(run_dir, project_root())
    plots = sorted((root / cfg["paths"]["reports"]).glob("*.png"))
    experiment = f"{tracking['experiment_prefix']}/cases"
    runs = log_entry_runs(
        project_root(), experiment, run_info, predictions, plots, tracking_uri(tracking),
        sweep_tags(params),
    )  # fmt: skip
    stable = {"enabled": True, "experiment": experiment, "runs": sorted(runs)}
    write_marker(marker, stable, runs)
    print(f"cases track: {len(runs)} MLflow run(s) for {run_info['model']['id']}")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
