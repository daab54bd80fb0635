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
from typing import TYPE_CHECKING, Any

from cultureqa.core.io import write_json, write_parquet
from cultureqa.core.provenance import file_md5, git_revision

if TYPE_CHECKING:  # pandas is imported where a table is read or built
    import pandas as pd

    from cultureqa.llm.base import GenerateResponse, LoglikResponse

log = logging.getLogger(__name__)

CALL_COLUMNS: dict[str, str] = {
    "latency_s": "float64",
    "cached": "bool",
    "attempts": "int64",
    "retries_by_cause": "str",
    "server_latency_s": "float64",
    "wait_s": "float64",
}
"""How each item's answer was obtained (the accounting fields of a response), with dtypes.

``latency_s`` is the item's whole time in the client; ``server_latency_s`` the successful HTTP
exchange alone; ``wait_s`` the slot wait and backoff sleeps; ``attempts`` the HTTP requests made
for it; ``retries_by_cause`` a JSON object such as ``{"429": 1}`` (``{}`` when none)."""

SCORE_COLUMNS: dict[str, str] = {"scores": "str", "score_normalisation": "str", "margin": "float64"}
"""A log-likelihood row's per-option scores (JSON), how they were normalised, and the best score's
margin over the runner-up: in ``predictions.parquet`` beside the row's item id, at
:data:`cultureqa.core.records.SCORE_SIGNIFICANT` digits, so a researcher can compare scoring
rules or check agreement with another harness from the DVC-tracked outputs.

A float32 model's scores move by ~1e-5 with the CPU and with the other items of a padded batch, so
on another machine a fresh run's scores (and the file's hash) can differ in their last digits
while every pick holds, unless two options are within noise of each other: :data:`NEAR_TIE`
counts those."""

NEAR_TIE = 1e-3
"""A pick whose margin is below this (100× the batch noise) could flip on another machine; the run
log (``near_ties``) and MLflow (metric ``near_ties`` per run) count them. Exact ties go to the
first option (lowest letter)."""

RUNLOG_COLUMNS: dict[str, str] = dict(CALL_COLUMNS)
VOLATILE_COLUMNS = tuple(RUNLOG_COLUMNS)
"""Prediction columns that differ between a fresh run, a rerun from the response store, and a
run on another machine: they go to the run log, never into a DVC output."""

NO_CALL: dict[str, Any] = {
    "latency_s": 0.0,
    "cached": False,
    "attempts": 0,
    "retries_by_cause": "{}",
    "server_latency_s": 0.0,
    "wait_s": 0.0,
}
"""The call columns of a row no response filled in."""

VOLATILE_KEYS = ("model_calls", "api", "timings", "near_ties")
"""Run-record keys that count this process's work (calls, retries, leases, time), not the result."""

RUNLOG = ".runlog"


def call_columns(*responses: GenerateResponse | LoglikResponse) -> dict[str, Any]:
    """The call columns of a prediction row answered by ``responses`` (summed over them).

    Every driver fills its rows through this one function, so the accounting reaches all
    predictions alike. A log-likelihood response (local model) has no HTTP exchange: its
    ``latency_s`` is the model's own time and counts as its server latency.
    """
    retries: dict[str, int] = {}
    out = {**NO_CALL, "cached": bool(responses) and all(r.cached for r in responses)}
    for r in responses:
        out["latency_s"] += r.latency_s
        out["attempts"] += getattr(r, "attempts", 0)
        out["server_latency_s"] += getattr(r, "server_latency_s", r.latency_s)
        out["wait_s"] += getattr(r, "wait_s", 0.0)
        for cause, n in getattr(r, "retries_by_cause", {}).items():
            retries[cause] = retries.get(cause, 0) + n
    out["retries_by_cause"] = json.dumps(dict(sorted(retries.items())))
    return out


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
    if "margin" in predictions.columns:
        close = predictions["margin"] < NEAR_TIE
        volatile["near_ties"] = {"below": NEAR_TIE, "count": int(close.sum())}
    volatile["predictions_md5"] = file_md5(out_dir / "predictions.parquet")
    write_json(side / "run.json", volatile)


def read_run(out_dir: Path, project: Path | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Predictions and run record of ``out_dir`` with the run log's fields joined back.

    ``project`` is the repository whose revision stands in when the run log is missing.
    """
    import pandas as pd

    predictions = pd.read_parquet(out_dir / "predictions.parquet")
    record: dict[str, Any] = json.loads((out_dir / "run.json").read_text(encoding="utf-8"))
    side = runlog_dir(out_dir)
    problem = _runlog_problem(out_dir, side)
    if problem:
        _report(out_dir, problem)
        record["runlog"] = f"{problem}; git revision read at tracking time"
        now = volatile_provenance(project) if project else {"git": {"commit": None, "dirty": None}}
        record.setdefault("provenance", {}).update(now)
        for column, dtype in RUNLOG_COLUMNS.items():
            predictions[column] = _unknown(dtype, len(predictions))
        return predictions, record
    volatile = json.loads((side / "run.json").read_text(encoding="utf-8"))
    calls = pd.read_parquet(side / "calls.parquet")
    for column in calls.columns:
        predictions[column] = calls[column].to_numpy()
    record.update({k: volatile[k] for k in VOLATILE_KEYS if k in volatile})
    record.setdefault("provenance", {}).update(volatile.get("provenance", {}))
    return predictions, record


_RESTORED = "no run log"
_said: set[str] = set()


def _report(out_dir: Path, problem: str) -> None:
    """A run log missing because DVC restored the outputs is normal: INFO, once per process.

    A run log that belongs to other predictions is not: a WARNING each time. Either way the run
    record says it (``runlog``), and so does MLflow.
    """
    if not problem.startswith(_RESTORED):
        log.warning("%s: %s; latencies and cache flags are left empty", out_dir, problem)
        return
    if _RESTORED not in _said:
        _said.add(_RESTORED)
        log.info(
            "outputs restored by DVC: no run log, latencies and cache flags empty (%s)", out_dir
        )


def _unknown(dtype: str, n: int) -> pd.Series:  # type: ignore[type-arg]
    """A column of ``n`` missing values that keeps its kind (NaN floats, NA ints/bools/str)."""
    import pandas as pd

    if dtype == "float64":
        return pd.Series([float("nan")] * n, dtype="float64")
    nullable = {"bool": "boolean", "int64": "Int64", "str": "string"}
    return pd.Series([pd.NA] * n, dtype=nullable[dtype])


def _runlog_problem(out_dir: Path, side: Path) -> str:
    if not (side / "run.json").is_file() or not (side / "calls.parquet").is_file():
        return f"no run log at {side} (outputs restored from a DVC cache?)"
    volatile = json.loads((side / "run.json").read_text(encoding="utf-8"))
    if volatile.get("predictions_md5") != file_md5(out_dir / "predictions.parquet"):
        return f"the run log at {side} belongs to other predictions"
    return ""


def prune_markers(folder: Path, kept: set[Path]) -> list[Path]:
    """Remove the markers under ``folder`` of roster entries no longer tracked, and name them.

    Track stages keep their markers as ``persist`` outputs (DVC's run-cache never skips such a
    stage), so DVC does not clear the folder before a run: a marker of an entry that left the
    roster would otherwise stay in the output's hash.
    """
    stale = sorted(p for p in folder.rglob("*.json") if p not in kept) if folder.is_dir() else []
    for path in stale:
        path.unlink()
        print(f"removed the marker of an entry no longer tracked: {path}")
    return stale


def write_marker(
    marker: Path, stable: dict[str, Any], run_ids: Any, inputs: str | None = None
) -> None:
    """A track stage's DVC output (stable: what was logged) and its MLflow run ids (run log).

    ``inputs`` (the run log's too) is what the part logged, with the DVC experiment it logged
    into: the track stage skips a part whose inputs still match.
    """
    write_json(marker, stable)
    side = {"run_ids": run_ids} | ({"inputs": inputs} if inputs else {})
    write_json(runlog_dir(marker.parent) / marker.name, side)
