"""DVC stage: log a dataset build's per-step counts (kept, removed and why) as one MLflow run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.io import write_json
from cultureqa.paths import project_root
from cultureqa.runlog import write_marker
from cultureqa.runs.tracking import log_build, tracking_uri


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", required=True, help="mocqa or cases")
    parser.add_argument("--params", nargs="+", required=True, help="param paths to record")
    parser.add_argument("--metrics", nargs="+", required=True, help="per-step metrics JSON files")
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    tracking = select(params, "tracking")
    marker = root / "data" / "track" / "build" / f"{args.build}.json"
    if not tracking.get("enabled", True):
        write_json(marker, {"enabled": False})
        return 0
    steps = {Path(p).stem: json.loads((root / p).read_text(encoding="utf-8")) for p in args.metrics}
    recorded = {key: select(params, key) for key in args.params}
    experiment = f"{tracking['experiment_prefix']}/{args.build}-build"
    run_id = log_build(project_root(), experiment, steps, recorded, tracking_uri(tracking))
    write_marker(marker, {"enabled": True, "experiment": experiment}, run_id)
    print(f"logged the {args.build} build ({len(steps)} steps) to MLflow run {run_id}")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
