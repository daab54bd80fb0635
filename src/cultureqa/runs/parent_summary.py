"""What a researcher opens a DVC experiment's parent run for, on the parent itself.

MLflow's runs table opens on collapsed parent runs; without numbers on them a user has to expand
each one and build a view. So the track stage adds, for each (benchmark, roster slot, prompt),
the headline its children stand for to the parent: as the parent's own metrics
(``indoculture.accuracy`` with ``.ci_low``/``.ci_high``/``.n_items``; ``mocqa.multi_hop.cot``;
``cases.accuracy``; other slots as ``indoculture.baselines.random.accuracy``), and as one row of
a comparison table logged with ``mlflow.log_table`` (``comparison.json``). The numbers are the
ones ``make compare`` prints (:mod:`cultureqa.runs.compare`): accuracy over all the slot's rows
with a 95% t-interval over items.

The table is rewritten, not appended: ``log_table`` concatenates onto an existing file, so a
re-tracked stage would add its row twice. The first stage logs it with ``log_table`` (which
registers it as a table in the run's ``mlflow.loggedArtifacts`` tag); later ones replace their
own row and write the same file in the same format.
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

log = logging.getLogger(__name__)

TABLE = "comparison.json"
HEADLINE = {"correct": "accuracy", "province_correct": "first_hop"}
"""Correctness columns and their headline names (ID-MoCQA calls ``correct`` multi-hop)."""
MOCQA_HEADLINE = {"correct": "multi_hop", "province_correct": "first_hop"}
METRIC_SIGNIFICANT = 4
"""Significant digits of a logged metric's fractional part (``0.2811``, not
``0.28107922931825335``); digits before the point are kept (a token count stays whole)."""


def rounded(value: float) -> float:
    """``value`` at :data:`METRIC_SIGNIFICANT` significant digits, whole part kept."""
    if not math.isfinite(value) or value == 0 or float(value).is_integer():
        return float(value)
    digits = METRIC_SIGNIFICANT - 1 - math.floor(math.log10(abs(value)))
    return float(round(value, max(digits, 0)))


def headline(
    benchmark: str, slot: str, prompt: str, predictions: pd.DataFrame, model_id: str = ""
) -> tuple[dict[str, float], dict[str, Any]]:
    """The parent's metrics for one (benchmark, slot, prompt) and its comparison-table row.

    The row reads left to right as a researcher does (the UI cuts wide tables on the right):
    slot and model, the headline with its CI as text, then the numbers and what they cover.
    """
    from cultureqa.runs.compare import estimate

    unit = "case_id" if "case_id" in predictions.columns else "item_id"
    names = MOCQA_HEADLINE if benchmark == "mocqa" else HEADLINE
    prefix = benchmark if slot == "model" else f"{benchmark}.{slot}"
    metrics: dict[str, float] = {}
    row: dict[str, Any] = {"slot": slot, "model": model_id}
    tail: dict[str, Any] = {"prompt": prompt or "own", "benchmark": benchmark}
    if "setting" in predictions.columns:
        tail["settings"] = int(predictions["setting"].nunique())
    for column, name in names.items():
        if column not in predictions.columns:
            continue
        per_item = predictions.groupby(predictions[unit].astype(str))[column].mean()
        found = estimate(per_item.astype(float))
        key = f"{prefix}.{name}" + (f".{prompt}" if benchmark == "mocqa" and prompt else "")
        metrics |= {key: found.value, f"{key}.ci_low": found.low, f"{key}.ci_high": found.high}
        metrics[f"{key}.n_items"] = float(found.n)
        row[f"{name} (95% CI)"] = (
            f"{found.value:.3f} [{found.low:.3f}, {found.high:.3f}]"
            if math.isfinite(found.low) else f"{found.value:.3f}"
        )  # fmt: skip
        tail |= {name: found.value, f"{name}.ci_low": found.low, f"{name}.ci_high": found.high}
        tail["n_items"] = found.n
    row |= tail
    clean = {k: rounded(v) for k, v in metrics.items() if math.isfinite(v)}
    return clean, {k: rounded(v) if isinstance(v, float) else v for k, v in row.items()}


def log_parent_summary(
    parent_id: str, metrics: Mapping[str, float], row: Mapping[str, Any], params: Mapping[str, str]
) -> None:
    """Headline metrics, the table row and the sweep's params (``model.id``, ``prompt.style``).

    Params are write-once in MLflow: one the parent already has with another value (a workspace
    parent whose params.yaml changed without a commit) is left as it is, with a warning.
    """
    from mlflow import MlflowClient

    client = MlflowClient()
    run = client.get_run(parent_id)
    fresh = {k: v for k, v in params.items() if k not in run.data.params}
    for key, value in params.items():
        if key in run.data.params and run.data.params[key] != value:
            log.warning(
                "MLflow parent run %s keeps param %s=%s (now %s): params cannot change; "
                "commit or run as a DVC experiment to get a parent of its own",
                parent_id, key, run.data.params[key], value,
            )  # fmt: skip
    from mlflow.entities import Metric, Param

    now = _now_ms()
    client.log_batch(
        parent_id,
        metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()],
        params=[Param(k, v) for k, v in fresh.items()],
    )
    _replace_row(client, parent_id, dict(row))


def _replace_row(client: Any, run_id: str, row: dict[str, Any]) -> None:
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # no bar in stage logs
    key = ("benchmark", "slot", "prompt")
    listed = {f.path for f in client.list_artifacts(run_id)}
    new = pd.DataFrame([row])
    if TABLE not in listed:
        client.log_table(run_id, new, TABLE)
        return
    with tempfile.TemporaryDirectory() as tmp:
        old = pd.read_json(client.download_artifacts(run_id, TABLE, tmp), orient="split")
        mine = pd.Series(True, index=old.index)
        for column in key:
            mine &= old.get(column, pd.Series("", index=old.index)).astype(str) == str(row[column])
        table = pd.concat([old[~mine], new], ignore_index=True).sort_values(list(key))
        path = Path(tmp) / "out" / TABLE
        path.parent.mkdir()
        table.to_json(path, orient="split", index=False)
        client.log_artifact(run_id, str(path))


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)


RESULTS = "results"
"""The sweep-level MLflow experiment, ``<prefix>/results``: one flat run per DVC experiment ×
benchmark × roster slot × prompt with its headline and 95% CI as metrics."""
ROW_TAG = "cultureqa.result_row"
RESULTS_NOTE = (
    "Sweep table: Evaluation runs (left, GenAI view), one run per DVC experiment × benchmark × "
    "roster slot × prompt: accuracy (ID-MoCQA: multi-hop) over items with its 95% t-interval "
    "(ci_low, ci_high) and n_items, the numbers `make compare` prints; click a run for its items."
)


def results_experiment(experiment: str) -> str:
    """``cultureqa/indoculture`` → ``cultureqa/results``."""
    prefix = experiment.rsplit("/", 1)[0] if "/" in experiment else experiment
    return f"{prefix}/{RESULTS}"


def log_result_row(
    experiment_id: str, group: Any, row: Mapping[str, Any], tags: Mapping[str, str]
) -> str:
    """The sweep-level run of one (group, benchmark, slot, prompt), created once, then updated.

    MLflow 3's runs table shows no metric column until a user picks one, but its GenAI
    "Evaluation runs" page lists every run of an experiment with its metrics as columns: a flat
    experiment whose runs carry only the headline (``accuracy``, ``ci_low``, ``ci_high``,
    ``n_items``; ``first_hop…`` for ID-MoCQA) reads as the sweep's table there, two clicks from
    MLflow's home page. Re-tracking the same cell updates its run (same id); nothing is deleted.
    """
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    from cultureqa.runs.mlflow_runs import digest, runs_tagged

    client = MlflowClient()
    if client.get_experiment(experiment_id).tags.get("mlflow.note.content") != RESULTS_NOTE:
        client.set_experiment_tag(experiment_id, "mlflow.note.content", RESULTS_NOTE)
    cell = {k: str(row[k]) for k in ("benchmark", "slot", "prompt")}
    key = digest({"group": group.key, **cell})
    name = f"{row['model']} · {row['prompt']} · {row['benchmark']}"
    names = [n for n in ("accuracy", "multi_hop", "first_hop") if n in row]
    metrics: dict[str, float] = {}
    for n, shown in zip(names, ["accuracy", *names[1:]], strict=True):
        prefix = "" if shown == "accuracy" else f"{shown}_"  # the headline's CI reads ci_low
        metrics |= {shown: row[n], f"{prefix}ci_low": row[f"{n}.ci_low"],
                    f"{prefix}ci_high": row[f"{n}.ci_high"]}  # fmt: skip
    metrics["n_items"] = float(row["n_items"])
    finite = {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}
    labels = {"dvc_experiment": group.label, "model": str(row["model"]), **cell}
    found = runs_tagged(experiment_id, {ROW_TAG: key})
    now = _now_ms()
    if found:
        run_id = str(found[0].info.run_id)
    else:
        run = client.create_run(experiment_id, run_name=name,
                                tags={**group.tags, **tags, ROW_TAG: key})  # fmt: skip
        run_id = str(run.info.run_id)
        client.log_batch(run_id, params=[Param(k, v) for k, v in labels.items()])
        client.set_terminated(run_id, "FINISHED")
    client.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, v in finite.items()])
    return run_id
