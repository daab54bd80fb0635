"""DVC stage: log every result and dataset build to MLflow, in one process at the end of the run.

Parts (:mod:`cultureqa.runs.tracking_parts`): one MLflow run per setting of each roster entry of
every benchmark of ``evaluate.benchmarks``, per language of each ID-MoCQA (roster entry, prompt
style), per seed of each cases roster entry, and one run per dataset build (cases, each two-hop
set). One process, so MLflow is imported and its store opened once per ``dvc repro``, not once
per family. A part whose inputs did not change since its marker is skipped and counted.

The markers (``data/track/<part>.json``) are one ``persist`` output: DVC's run-cache never skips
a stage with a persisted output, so an experiment that restores evaluation outputs from cache
still logs its runs, and the markers are cached, so a pulled tree finds this stage up to date.

    python3 stages/track.py [--only indoculture/model mocqa build/cases ...] [--force]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.core.config import load_params, run_stage, setup_stage
from cultureqa.core.paths import project_root
from cultureqa.runs.tracking_parts import TRACK_DIR, Part, digest, plan, select, up_to_date

SKIP_REASON = "inputs unchanged since logged into this DVC experiment"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--only", nargs="+", metavar="PART",
        help="parts to log (a part's name or its folder: indoculture, mocqa/model, build/cases); "
             "default: every part, and markers of parts no longer planned are removed",
    )  # fmt: skip
    parser.add_argument(
        "--force",
        action="store_true",
        help="log every selected part, also one whose inputs match its marker (after mlflow.db "
        "was removed or replaced: re-logging updates existing runs in place)",
    )
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    from omegaconf import OmegaConf

    params: dict[str, Any] = OmegaConf.to_container(  # type: ignore[assignment]
        load_params(root / "params.yaml"), resolve=True
    )
    planned = plan(root, params)
    parts = select(planned, args.only)
    tracking = params["tracking"]
    if not tracking.get("enabled", True):
        from cultureqa.core.io import write_json

        for part in parts:
            write_json(part.marker, {"enabled": False})
        print(f"track: tracking.enabled is false: {len(parts)} part(s) marked, nothing logged")
        summary: dict[str, Any] = {"enabled": False, "logged": [], "skipped": {}}
    else:
        from cultureqa.runs.mlflow_runs import current_group

        group = current_group(root).key  # each DVC experiment logs its own parent runs
        inputs = {part.name: digest(root, part, group) for part in parts}
        todo = [p for p in parts if args.force or not up_to_date(root, p, inputs[p.name])]
        skipped = {part.name: SKIP_REASON for part in parts if part not in todo}
        if skipped:
            print(f"track: skipped {len(skipped)} of {len(parts)} part(s), {SKIP_REASON}: "
                  f"{', '.join(skipped)}")  # fmt: skip
        retired = _log(root, params, todo, inputs) if todo else None
        summary = {"enabled": True, "logged": [p.name for p in todo], "skipped": skipped,
                   "default_experiment_deleted": retired}  # fmt: skip
    from cultureqa.core.io import write_json
    from cultureqa.core.runlog import prune_markers, runlog_dir

    if not args.only:  # every part: markers of parts that left the params go
        prune_markers(root / TRACK_DIR, {part.marker for part in planned})
    write_json(runlog_dir(root / TRACK_DIR) / "stage.json", summary)
    return 0


def _log(
    root: Path, params: dict[str, Any], todo: list[Part], inputs: dict[str, str]
) -> str | None:
    """Log each part, then write its marker: a part that fails leaves no marker, and is retried.

    Returns the line saying the empty ``Default`` experiment was deleted, or None."""
    from cultureqa.runs.tracking import open_store, tracking_uri

    uri = tracking_uri(params["tracking"])
    open_store(project_root(), uri)  # MLflow imported and its store opened once, for every part
    from cultureqa.core.runlog import write_marker
    from cultureqa.runs.mlflow_home import mark_modified, retire_default

    retired = retire_default(uri)  # MLflow would open it on an empty overview
    if retired:
        print(retired)

    loggers = {"eval": _log_eval, "mocqa": _log_mocqa, "cases": _log_cases, "build": _log_build}
    for part in todo:
        stable, run_ids = loggers[part.family](part, params, uri)
        write_marker(part.marker, stable, run_ids, inputs[part.name])
    mark_modified(_written(params, todo))  # the home page lists the last modified: results first
    return retired


def _written(params: dict[str, Any], parts: list[Part]) -> list[str]:
    """The MLflow experiments the parts wrote: builds, then families, then the results one."""
    prefix = params["tracking"]["experiment_prefix"]
    builds = [f"{prefix}/{p.args['build']}-build" for p in parts if p.family == "build"]
    family = {"eval": lambda p: p.args["benchmark"], "mocqa": lambda p: "mocqa",
              "cases": lambda p: "cases"}  # fmt: skip
    families = [f"{prefix}/{family[p.family](p)}" for p in parts if p.family in family]
    from cultureqa.runs.parent_summary import RESULTS

    return builds + families + ([f"{prefix}/{RESULTS}"] if families else [])


def _log_eval(part: Part, params: dict[str, Any], uri: str | None) -> tuple[dict[str, Any], Any]:
    from cultureqa.core.runlog import read_run
    from cultureqa.runs.tracking import (
        benchmark_dataset,
        evaluation_metrics,
        log_runs,
        source_metrics,
        sweep_tags,
    )

    benchmark = part.args["benchmark"]
    predictions, run_info = read_run(part.args["run_dir"], project_root())
    slices = [tuple(s) for s in part.recorded["slices"]]
    dataset = benchmark_dataset(run_info["provenance"]["dataset"])
    runs = log_runs(
        project_root(),
        f"{params['tracking']['experiment_prefix']}/{benchmark}",
        run_info,
        predictions,
        "setting",
        lambda p: {**evaluation_metrics(p, slices), **source_metrics(run_info["details"])},
        lambda _: dataset,
        uri,
        sweep_tags(params),
        _figures(part),
    )
    print(f"logged {len(runs)} MLflow run(s) for {benchmark}/{run_info['model']['id']}")
    return {"enabled": True, "runs": sorted(runs)}, runs


def _log_mocqa(part: Part, params: dict[str, Any], uri: str | None) -> tuple[dict[str, Any], Any]:
    from cultureqa.core.runlog import read_run
    from cultureqa.mocqa.report import log_runs
    from cultureqa.runs.tracking import sweep_tags

    predictions, run = read_run(part.args["run_dir"], project_root())
    experiment = f"{params['tracking']['experiment_prefix']}/mocqa"
    sweep = sweep_tags(params, prompt=False)  # ID-MoCQA runs every style in mocqa_eval.prompts
    runs = log_runs(project_root(), experiment, run, predictions, uri, sweep, _figures(part))
    print(f"logged {len(runs)} MLflow run(s) for mocqa/{run['model']['id']}/{part.args['prompt']}")
    return {"enabled": True, "experiment": experiment, "n_runs": len(runs)}, runs


def _log_cases(part: Part, params: dict[str, Any], uri: str | None) -> tuple[dict[str, Any], Any]:
    from cultureqa.cases.report import log_entry_runs
    from cultureqa.core.runlog import read_run
    from cultureqa.runs.tracking import sweep_tags

    predictions, run_info = read_run(part.args["run_dir"], project_root())
    experiment = f"{params['tracking']['experiment_prefix']}/cases"
    runs = log_entry_runs(project_root(), experiment, run_info, predictions, _figures(part), uri,
                          sweep_tags(params))  # fmt: skip
    print(f"cases track: {len(runs)} MLflow run(s) for {run_info['model']['id']}")
    return {"enabled": True, "experiment": experiment, "runs": sorted(runs)}, runs


def _log_build(part: Part, params: dict[str, Any], uri: str | None) -> tuple[dict[str, Any], Any]:
    import json

    import pandas as pd

    from cultureqa.runs.tracking import log_build

    build = part.args["build"]
    root = Path.cwd()
    steps = {Path(p).stem: json.loads((root / p).read_text(encoding="utf-8"))
             for p in part.args["metrics"]}  # fmt: skip
    items = pd.read_parquet(root / part.args["items"])
    experiment = f"{params['tracking']['experiment_prefix']}/{build}-build"
    run_id = log_build(project_root(), experiment, steps, part.args["recorded"], uri, items)
    print(f"logged the {build} build ({len(steps)} steps, {len(items)} items as traces) "
          f"to MLflow run {run_id}")  # fmt: skip
    return {"enabled": True, "experiment": experiment}, run_id


def _figures(part: Part) -> list[Path]:
    return [path for path in part.files if path.suffix == ".png"]


if __name__ == "__main__":
    sys.exit(run_stage(main))
