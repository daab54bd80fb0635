"""Split every run record into what DVC hashes (stable) and what changes run to run (volatile).

``dvc.lock`` records the hash of every stage output. A fresh clone reruns the pipeline, so any
output field that depends on when, where or how often a run happened — latencies, whether a reply
came from the response store, the number of model calls, the git commit, the DVC experiment
name, MLflow run ids — would give a new hash, a modified ``dvc.lock`` and ``git.dirty=True`` in
every MLflow run. Those fields are written to a run log beside the outputs instead
(``.runlog/<output path>/``, git-ignored, not a DVC output), tied to the exact output by its md5;
:func:`read_run` joins them back for the track stages. A run log that is missing (outputs restored
from a DVC cache) or belongs to other outputs is reported and its latencies and cache flags are
left empty; the git revision is then read at tracking time, which is sound because DVC restores an
output only when the code and data it depends on hash the same.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.io import write_json, write_parquet
from cultureqa.provenance import file_md5, git_revision

log = logging.getLogger(__name__)

VOLATILE_COLUMNS = ("latency_s", "cached")
"""Prediction columns that differ between a fresh run and a rerun from the response store."""

VOLATILE_KEYS = ("model_calls", "api", "timings")
"""Run-record keys that count this process's work (calls, retries, leases, time), not the result."""

RUNLOG = ".runlog"


def runlog_dir(out_dir: Path, root: Path | None = None) -> Path:
    """Where the volatile half of ``out_dir`` lives: ``<root>/.runlog/<out_dir relative>``."""
    root = (root or Path.cwd()).resolve()
    out = out_dir.resolve()
    relative = out.relative_to(root) if out.is_relative_to(root) else Path(*out.parts[1:])
    return root / RUNLOG / relative


def volatile_provenance(root: Path) -> dict[str, Any]:
    """Code revision and experiment name: true of this run, not of its (reproducible) result."""
    import os

    return {"git": git_revision(root), "dvc_exp_name": os.environ.get("DVC_EXP_NAME")}


def write_predictions(out_dir: Path, predictions: pd.DataFrame) -> None:
    """``predictions.parquet`` without latencies and cache flags; those go to the run log."""
    volatile_cols = [c for c in VOLATILE_COLUMNS if c in predictions.columns]
    write_parquet(out_dir / "predictions.parquet", predictions.drop(columns=volatile_cols))
    side = runlog_dir(out_dir)
    write_parquet(side / "calls.parquet", predictions[volatile_cols].reset_index(drop=True))


def write_run(
    out_dir: Path,
    predictions: pd.DataFrame,
    record: dict[str, Any],
    project: Path,
) -> None:
    """Write ``predictions.parquet`` and ``run.json`` (stable) and their run log (volatile)."""
    stable = {k: v for k, v in record.items() if k not in VOLATILE_KEYS}
    write_predictions(out_dir, predictions)
    write_json(out_dir / "run.json", stable)
    side = runlog_dir(out_dir)
    volatile = {k: record[k] for k in VOLATILE_KEYS if k in record}
    volatile["provenance"] = volatile_provenance(project)
    volatile["predictions_md5"] = file_md5(out_dir / "predictions.parquet")
    write_json(side / "run.json", volatile)


def read_run(out_dir: Path, project: Path | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Predictions and run record of ``out_dir`` with the run log's fields joined back.

    ``project`` is the repository whose revision stands in when the run log is missing.
    """
    predictions = pd.read_parquet(out_dir / "predictions.parquet")
    record: dict[str, Any] = json.loads((out_dir / "run.json").read_text(encoding="utf-8"))
    side = runlog_dir(out_dir)
    problem = _runlog_problem(out_dir, side)
    if problem:
        log.warning("%s: %s; latencies and cache flags are left empty", out_dir, problem)
        record["runlog"] = f"{problem}; git revision read at tracking time"
        now = volatile_provenance(project) if project else {"git": {"commit": None, "dirty": None}}
        record.setdefault("provenance", {}).update(now)
        predictions["latency_s"] = float("nan")
        predictions["cached"] = pd.Series([pd.NA] * len(predictions), dtype="boolean")
        return predictions, record
    volatile = json.loads((side / "run.json").read_text(encoding="utf-8"))
    calls = pd.read_parquet(side / "calls.parquet")
    for column in calls.columns:
        predictions[column] = calls[column].to_numpy()
    record.update({k: volatile[k] for k in VOLATILE_KEYS if k in volatile})
    record.setdefault("provenance", {}).update(volatile.get("provenance", {}))
    return predictions, record


def _runlog_problem(out_dir: Path, side: Path) -> str:
    if not (side / "run.json").is_file() or not (side / "calls.parquet").is_file():
        return f"no run log at {side} (outputs restored from a DVC cache?)"
    volatile = json.loads((side / "run.json").read_text(encoding="utf-8"))
    if volatile.get("predictions_md5") != file_md5(out_dir / "predictions.parquet"):
        return f"the run log at {side} belongs to other predictions"
    return ""


def write_marker(marker: Path, stable: dict[str, Any], run_ids: Any) -> None:
    """A track stage's DVC output (stable: what was logged) and its MLflow run ids (run log)."""
    write_json(marker, stable)
    write_json(runlog_dir(marker.parent) / marker.name, {"run_ids": run_ids})
