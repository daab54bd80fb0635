"""DVC stage: one MLflow run per language of every ID-MoCQA (roster entry, prompt style) evaluation.

One process for the family, so MLflow's import is paid once. Apart from evaluate, with
``persist`` marker outputs: DVC's run-cache never skips a stage with a persisted output, and the
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
from cultureqa.mocqa.answers import PROMPT_STYLES
from cultureqa.mocqa.report import log_runs
from cultureqa.paths import project_root
from cultureqa.runlog import prune_markers, read_run, write_marker
from cultureqa.runs.tracking import sweep_tags, tracking_uri


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--model", action="append", help="param path, e.g. model; default: mocqa_eval.roster"
    )
    parser.add_argument(
        "--prompt", action="append", choices=PROMPT_STYLES, help="default: mocqa_eval.prompts"
    )
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    cfg = select(params, "mocqa_eval")
    written = {
        _track(root, params, entry, prompt)
        for entry in args.model or list(cfg["roster"])
        for prompt in args.prompt or list(cfg["prompts"])
    }
    if not (args.model or args.prompt):  # the whole roster: markers of entries that left it go
        prune_markers(root / "data" / "track" / "mocqa", written)
    return 0


def _track(root: Path, params: Any, entry: str, prompt: str) -> Path:
    tracking = select(params, "tracking")
    run_dir = root / "data" / "eval" / "mocqa" / entry / prompt
    marker = root / "data" / "track" / "mocqa" / entry / f"{prompt}.json"
    if not tracking.get("enabled", True):
        write_json(marker, {"enabled": False, "runs": []})
        return marker
    predictions, run = read_run(run_dir, project_root())
    experiment = f"{tracking['experiment_prefix']}/mocqa"
    figures = sorted((root / "reports" / "mocqa").glob("*.png"))
    sweep = sweep_tags(params, prompt=False)  # ID-MoCQA runs every style in mocqa_eval.prompts
    runs = log_runs(project_root(), experiment, run, predictions, tracking_uri(tracking), sweep,
                    figures)  # fmt: skip
    write_marker(marker, {"enabled": True, "experiment": experiment, "n_runs": len(runs)}, runs)
    print(f"logged {len(runs)} MLflow run(s) for mocqa/{run['model']['id']}/{prompt}")
    return marker


if __name__ == "__main__":
    sys.exit(run_stage(main))
