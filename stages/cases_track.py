"""DVC stage: cases track — one MLflow run per (roster entry, seed), with the report's plots.

One process for the family, so MLflow's import is paid once. Kept apart from evaluate, with
``persist`` marker outputs: DVC's run-cache never skips a stage with a persisted output, and the
markers are cached, so a pulled tree finds this stage up to date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.cases.report import log_entry_runs
from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.io import write_json
from cultureqa.paths import project_root
from cultureqa.runlog import prune_markers, read_run, write_marker
from cultureqa.runs.tracking import sweep_tags, tracking_uri


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--model", action="append", help="roster entry (param path); default: cases.roster"
    )
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    cfg = select(params, "cases")
    written = {_track(root, params, entry) for entry in args.model or list(cfg["roster"])}
    if not args.model:  # the whole roster: markers of entries that left it go
        prune_markers(root / cfg["paths"]["track"], written)
    return 0


def _track(root: Path, params: Any, entry: str) -> Path:
    cfg, tracking = select(params, "cases"), select(params, "tracking")
    marker = root / cfg["paths"]["track"] / f"{entry}.json"
    if not tracking.get("enabled", True):
        write_json(marker, {"enabled": False, "runs": {}})
        return marker
    run_dir = root / cfg["paths"]["eval"] / entry
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
    return marker


if __name__ == "__main__":
    sys.exit(run_stage(main))
