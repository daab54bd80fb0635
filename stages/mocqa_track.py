"""DVC stage: one MLflow run per language of one ID-MoCQA (roster entry, prompt style) evaluation.

Apart from evaluate, with a ``cache: false`` marker output, so DVC's run-cache can never skip the
logging when an experiment restores evaluation outputs from cache.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.io import write_json
from cultureqa.mocqa.answers import PROMPT_STYLES
from cultureqa.mocqa.report import log_runs
from cultureqa.paths import project_root
from cultureqa.runlog import read_run, write_marker
from cultureqa.tracking import sweep_tags, tracking_uri


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="param path, e.g. model or baselines.random")
    parser.add_argument("--prompt", required=True, choices=PROMPT_STYLES)
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    tracking = select(params, "tracking")
    run_dir = root / "data" / "eval" / "mocqa" / args.model / args.prompt
    marker = root / "data" / "track" / "mocqa" / args.model / f"{args.prompt}.json"
    if not tracking.get("enabled", True):
        write_json(marker, {"enabled": False, "runs": []})
        return 0
    predictions, run = read_run(run_dir, project_root())
    experiment = f"{tracking['experiment_prefix']}/mocqa"
    figures = sorted((root / "reports" / "mocqa").glob("*.png"))
    sweep = sweep_tags(params, prompt=False)  # ID-MoCQA runs every style in mocqa_eval.prompts
    runs = log_runs(project_root(), experiment, run, predictions, tracking_uri(tracking), sweep,
                    figures)  # fmt: skip
    write_marker(marker, {"enabled": True, "experiment": experiment, "n_runs": len(runs)}, runs)
    print(f"logged {len(runs)} MLflow run(s) for mocqa/{run['model']['id']}/{args.prompt}")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
