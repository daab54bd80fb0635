"""MLflow tracking (DESIGN.md §7): one experiment per benchmark, one run per result.

A result is one roster entry × setting/prompt/language/seed with its predictions. Logging is
idempotent: each run carries a ``result_key`` tag (experiment, identity, predictions MD5), so
re-tracking the same result skips it (same DVC experiment) or replaces it (another one); runs of
one DVC experiment share a ``dvc.exp_name`` tag (the UI groups and filters on it:
``tags.`dvc.exp_name` = 'exp'``); each run logs its dataset as an MLflow dataset input.

The URI is ``sqlite:///<DVC_ROOT>/mlflow.db`` with an explicit artifact root, so queued DVC
experiments (which run in temp copies) log into the same database as the workspace; or, with
``tracking.uri`` set (``-S tracking=server``), an MLflow server that owns its artifact store, so
workers on several machines log into one place. mlflow is imported lazily: it is slow to import
and only the tracking stage needs it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pandas as pd

from cultureqa.config import ParamsError

_METRIC_SAFE = re.compile(r"[^A-Za-z0-9_\-. /]")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DatasetRef:
    """The dataset a run evaluated, logged as its MLflow dataset input."""

    name: str
    digest: str
    """The MD5 recorded in the run's provenance (the hash DVC records for a single file)."""
    source: str
    """Repository-relative path, or ``hf:<dataset>:<split>``."""


def metric_key(*parts: object) -> str:
    """Stable dotted metric name with characters MLflow rejects replaced."""
    return ".".join(_METRIC_SAFE.sub("_", str(p)) for p in parts)


def current_exp_name(provenance: Mapping[str, Any]) -> str:
    """The DVC experiment running *now*, falling back to the one recorded in ``provenance``.

    A tracking stage must not trust the name its inputs recorded: when DVC restores an
    evaluation from its run-cache, that name belongs to an older experiment.
    """
    return str(os.environ.get("DVC_EXP_NAME") or provenance.get("dvc_exp_name"))


class TrackingConfigError(ParamsError):
    """``tracking.uri`` is missing where required, relative, or carries a password."""


def tracking_uri(tracking: Mapping[str, Any]) -> str | None:
    """The configured tracking server URI, or None for the project's own sqlite database.

    A relative ``sqlite:`` or file path would land in a queued experiment's temp copy (and vanish
    with it), and a password in the URI would be logged with the params: both are refused, naming
    the fix. Server credentials come from MLflow's own variables (``MLFLOW_TRACKING_USERNAME``,
    ``MLFLOW_TRACKING_PASSWORD``, ``MLFLOW_TRACKING_TOKEN``), never from params.
    """
    uri = tracking.get("uri")
    if uri is None:
        return None
    uri = str(uri).strip()
    if uri in ("", "???"):
        raise TrackingConfigError(
            "tracking.uri is required with tracking=server: "
            "dvc exp run -S tracking=server -S tracking.uri=http://HOST:5000"
        )
    parts = urlsplit(uri)
    if parts.password:
        raise TrackingConfigError(
            "tracking.uri carries a password; remove it and export MLFLOW_TRACKING_USERNAME and "
            "MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) instead"
        )
    path = parts.path[1:] if parts.scheme == "sqlite" else parts.path
    local = parts.scheme in ("", "file", "sqlite") and not _is_server(uri)
    if local and not Path(path).is_absolute():
        raise TrackingConfigError(
            f"tracking.uri {uri!r} is relative: queued experiments run in temp copies; "
            "give an absolute path, a server URL, or leave tracking.uri unset for "
            "<project>/mlflow.db"
        )
    return uri


def _is_server(uri: str) -> bool:
    """A tracking server (it stores artifacts itself), not a database or folder we write to."""
    return uri == "databricks" or urlsplit(uri).scheme in ("http", "https", "databricks")


def configure(root: Path, experiment: str, uri: str | None = None) -> str:
    """Point MLflow at the project database (or the server at ``uri``); return the experiment id.

    A server keeps its own artifact store (``mlflow server --artifacts-destination``), so its
    experiments are created without an artifact location; a database or file store gets
    ``<root>/mlartifacts`` explicitly (its default would be relative to a DVC temp copy).
    """
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    import mlflow

    mlflow.set_tracking_uri(uri or f"sqlite:///{root / 'mlflow.db'}")
    found = mlflow.get_experiment_by_name(experiment)
    if found is not None:
        return str(found.experiment_id)
    location = None if uri and _is_server(uri) else (root / "mlartifacts").as_uri()
    return str(mlflow.create_experiment(experiment, artifact_location=location))


def flatten_params(prefix: str, value: Any, out: dict[str, str]) -> dict[str, str]:
    """Flatten nested config into ``a.b.c`` params (MLflow params are flat strings)."""
    if isinstance(value, Mapping):
        for key, sub in value.items():
            flatten_params(f"{prefix}.{key}" if prefix else str(key), sub, out)
    else:
        out[prefix] = json.dumps(value) if isinstance(value, list | dict) else str(value)
    return out


def predictions_md5(predictions: pd.DataFrame) -> str:
    """MD5 of a predictions table's stable content, for the result key.

    The run log's volatile columns (per-item latency, cache flag) are left out: they are joined
    back at tracking time and missing after a restore, and a result is the same without them.
    """
    from cultureqa.runlog import VOLATILE_COLUMNS

    stable = predictions.drop(columns=[c for c in VOLATILE_COLUMNS if c in predictions.columns])
    text = stable.to_csv(index=False)
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def result_key(experiment_id: str, identity: Mapping[str, str], content_md5: str) -> str:
    """What makes two runs the same result: experiment, identity fields, content MD5."""
    doc = {"experiment": experiment_id, **identity, "content": content_md5}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def _runs_tagged(experiment_id: str, tag: str, value: str) -> list[Any]:
    """Active runs of the experiment whose ``tag`` equals ``value``, oldest first."""
    import mlflow

    runs = mlflow.search_runs(
        experiment_ids=[experiment_id],
        filter_string=f"tags.`{tag}` = '{value}'",
        output_format="list",
        order_by=["attributes.start_time ASC"],
    )
    return list(runs)


def _earlier(experiment_id: str, key: str, exp_name: str) -> str | None:
    """Skip or replace the runs already logged for ``key``: returns the one to keep, if any.

    The same result in the same DVC experiment is kept (the rerun is skipped); from another
    experiment (say, restored from DVC's run-cache) the old runs are deleted and logged anew under
    the current experiment's tag. Either way there is one run per result, and the log says so.
    """
    from mlflow import MlflowClient

    found = _runs_tagged(experiment_id, "result_key", key)
    keep = next((r for r in found if r.data.tags.get("dvc.exp_name") == exp_name), None)
    for run in found:
        if run is not keep:
            MlflowClient().delete_run(run.info.run_id)
            log.info("replaced MLflow run %s (same result, re-tracked)", run.info.run_id)
    if keep is not None:
        log.info("skipped: result already tracked as MLflow run %s", keep.info.run_id)
        return str(keep.info.run_id)
    return None


def dataset_input(dataset: DatasetRef) -> Any:
    """An MLflow meta dataset (name, digest, source) for ``mlflow.log_input``."""
    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.huggingface_dataset_source import HuggingFaceDatasetSource
    from mlflow.data.meta_dataset import MetaDataset

    if dataset.source.startswith("hf:"):
        _, name, split = dataset.source.split(":", 2)
        source: Any = HuggingFaceDatasetSource(name, split=split)
    else:
        with warnings.catch_warnings():  # mlflow registers its local source class twice
            warnings.filterwarnings("ignore", message=".*interpreted in multiple ways")
            source = resolve_dataset_source(dataset.source)
    return MetaDataset(source, name=dataset.name, digest=dataset.digest)  # type: ignore[abstract]


@dataclass(frozen=True)
class ResultRun:
    """One result to log: who and what it is, what it scored, and what it carries."""

    name: str
    identity: Mapping[str, str]
    """Roster entry, benchmark and setting/prompt/language/seed: the result's key fields."""
    params: Mapping[str, str]
    tags: Mapping[str, str]
    metrics: Mapping[str, float]
    predictions: pd.DataFrame
    artifacts: Mapping[str, Any]
    dataset: DatasetRef


def log_result(experiment_id: str, result: ResultRun) -> str:
    """Log one finished run, unless this result is already tracked; returns the run id."""
    import mlflow

    exp_name = str(result.tags.get("dvc.exp_name"))
    key = result_key(experiment_id, result.identity, predictions_md5(result.predictions))
    kept = _earlier(experiment_id, key, exp_name)
    if kept is not None:
        return kept
    tags = {
        **result.tags,
        **result.identity,
        "result_key": key,
    }
    with mlflow.start_run(experiment_id=experiment_id, run_name=result.name, tags=tags) as run:
        mlflow.log_params({k: v[:6000] for k, v in result.params.items()})
        mlflow.log_metrics({k: float(v) for k, v in result.metrics.items() if pd.notna(v)})
        mlflow.log_input(dataset_input(result.dataset), context="evaluation")
        mlflow.log_table(result.predictions, artifact_file="predictions.json")
        for name, payload in result.artifacts.items():
            mlflow.log_dict(payload, name)
        return str(run.info.run_id)


def usage_metrics(part: pd.DataFrame) -> dict[str, float]:
    """Tokens, cost, server latency and client wait, named alike in every family's runs.

    ``latency.server`` is the successful HTTP exchange alone (the model's time for local
    backends); ``wait.item`` the slot wait and backoff sleeps an item spent in the client. Their
    columns are volatile: a run log restored without them (NaN) logs no latency metric.
    """
    out = {
        "tokens.prompt": float(part["prompt_tokens"].sum()),
        "tokens.completion": float(part["completion_tokens"].sum()),
        "cost_usd": float(part["cost_usd"].sum()),
    }
    if "margin" in part.columns and part["margin"].notna().any():  # log-likelihood picks
        from cultureqa.runlog import NEAR_TIE

        out["near_ties"] = float((part["margin"] < NEAR_TIE).sum())
    for name, column in (("latency.server", "server_latency_s"), ("wait.item", "wait_s")):
        if column in part.columns:
            out[f"{name}.p50"] = float(part[column].quantile(0.5))
            out[f"{name}.p95"] = float(part[column].quantile(0.95))
    return out


def api_metrics(run_info: Mapping[str, Any]) -> dict[str, float]:
    """The evaluation's request counters as metrics: requests sent, retries by cause, not sent.

    They count the whole evaluation (every setting of the roster entry), so each of its runs
    carries the same values. Absent counters (local backends have no HTTP client) are not logged.
    """
    out: dict[str, float] = {}
    if run_info.get("model_calls") is not None:
        out["model_calls"] = float(run_info["model_calls"])
    api = run_info.get("api") or {}
    client = api.get("client") or {}
    if client:
        out |= {"requests": client["sent"], "requests.ok": client["ok"]}
        out |= {"retries": client["retries"], "not_sent": client["not_sent"]}
        out |= {metric_key("retries", c): n for c, n in client["retries_by_cause"].items()}
        out |= {metric_key("failed", c): n for c, n in client["failed_by_cause"].items()}
        out |= replica_metrics(client.get("replicas") or {})
    for name, value in (api.get("cache") or {}).items():
        out[metric_key("cache", name)] = value
    return {k: float(v) for k, v in out.items()}


def replica_metrics(replicas: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Per-replica counters (``llm/replicas.py``) as ``replica.<host_port>.<counter>``."""
    out: dict[str, float] = {}
    for base, counts in replicas.items():
        name = urlsplit(base).netloc or base
        out |= {metric_key("replica", name, k): counts[k] for k in ("sent", "ok", "backoffs")}
        out[metric_key("replica", name, "backoff_s")] = counts["backoff_s"]
        for cause, n in counts["failed_by_cause"].items():
            out[metric_key("replica", name, "failed", cause)] = n
    return out


def slice_metrics(tables: Mapping[str, pd.DataFrame]) -> dict[str, float]:
    """Slice accuracies under stable names: ``acc.<slice>.<value>[.<value>]``.

    Each table is keyed by its slice name (columns joined by ``×``) and already filtered to one
    model and setting.
    """
    out: dict[str, float] = {}
    for name, table in tables.items():
        columns = name.split("×")
        for row in table.to_dict(orient="records"):
            key = metric_key("acc", "_x_".join(columns), *(row[c] for c in columns))
            out[key] = float(row["accuracy"])
            out[metric_key("n", "_x_".join(columns), *(row[c] for c in columns))] = float(row["n"])
    return out


def log_runs(
    root: Path,
    experiment: str,
    run: Mapping[str, Any],
    predictions: pd.DataFrame,
    by: str,
    metrics_of: Callable[[pd.DataFrame], Mapping[str, float]],
    dataset_of: Callable[[str], DatasetRef],
    uri: str | None = None,
) -> dict[str, str]:
    """One MLflow run per ``by`` value (setting, language or seed) of an engine run record.

    Every family logs the same params (model, benchmark, prompt and template hash, dataset, git,
    DVC experiment, packages) and the same request counters; ``metrics_of`` adds the family's
    own metrics. ``uri`` is ``tracking.uri`` (a tracking server); None logs into
    ``<root>/mlflow.db``. Returns ``{value: run_id}``.
    """
    experiment_id = configure(root, experiment, uri)
    model, prov = run["model"], run["provenance"]
    exp_name = current_exp_name(prov)
    entry, prompt = str(run["roster_entry"]), str(run["prompt"])
    runs: dict[str, str] = {}
    for value, part in predictions.groupby(by, sort=False):
        key, dataset = str(value), dataset_of(str(value))
        params = flatten_params("model", model, {}) | {
            "benchmark": str(run["benchmark"]), by: key, "prompt.style": prompt,
            "prompt.template_sha256": str(run["templates"].get(key)),
            "dataset.name": dataset.name, "dataset.md5": dataset.digest,
            "dataset.source": dataset.source, "git.commit": str(prov["git"].get("commit")),
            "git.dirty": str(prov["git"].get("dirty")), "dvc.exp_name": exp_name,
        }  # fmt: skip
        params |= {f"package.{k}": str(v) for k, v in prov["packages"].items()}
        metrics = {**metrics_of(part), **api_metrics(run)}
        identity = {"benchmark": str(run["benchmark"]), "roster_entry": entry, by: key}
        identity |= {"prompt": prompt} if prompt else {}
        tags = {"model": str(model["id"]), "dvc.exp_name": exp_name}
        name = "/".join(x for x in (entry, prompt, key) if x)
        artifacts = {"metrics.json": metrics, "run.json": dict(run)}
        frame = part.reset_index(drop=True)
        result = ResultRun(name, identity, params, tags, metrics, frame, artifacts, dataset)
        runs[key] = log_result(experiment_id, result)
    return runs


def evaluation_metrics(part: pd.DataFrame, slices: list[tuple[str, ...]]) -> dict[str, float]:
    """Metrics of one setting of a generic MCQ benchmark: accuracy with CI, rates, slices."""
    from cultureqa.analysis.tables import overall_table, slice_tables

    row = overall_table(part).iloc[0]
    metrics = {"accuracy": row["accuracy"], "accuracy.ci_low": row["ci_low"],
               "accuracy.ci_high": row["ci_high"], "n": row["n"],
               "parse_error_rate": row["parse_error_rate"], "empty_rate": row["empty_rate"],
               "error_rate": row["error_rate"],
               **usage_metrics(part)}  # fmt: skip
    usable = [s for s in slices if all(c in part.columns for c in s)]
    metrics.update(slice_metrics(slice_tables(part, usable)))
    return {k: float(v) for k, v in metrics.items()}


def benchmark_dataset(record: Mapping[str, Any]) -> DatasetRef:
    """The dataset input of a generic benchmark's run, from its provenance record."""
    version = record.get("version")
    name = f"{record['name']}@{version}" if version else str(record["name"])
    return DatasetRef(name, str(record.get("md5")), str(record["source"]))


def numeric_leaves(prefix: str, value: Any, out: dict[str, float]) -> dict[str, float]:
    """Every number in a nested metrics document, keyed by its dotted path (MLflow-safe)."""
    if isinstance(value, Mapping):
        for key, sub in value.items():
            numeric_leaves(f"{prefix}.{key}" if prefix else str(key), sub, out)
    elif isinstance(value, int | float):  # bools included: True/False become 1/0
        out[metric_key(prefix)] = float(value)
    return out


def log_build(
    root: Path,
    experiment: str,
    step_metrics: Mapping[str, Any],
    params: Mapping[str, Any],
    uri: str | None = None,
) -> str:
    """One MLflow run for a dataset build: counts kept and removed at every step (DESIGN.md §7).

    Idempotent like evaluation runs: the same counts and params re-tracked are skipped (same DVC
    experiment) or replace the earlier run (another one).
    """
    import mlflow

    from cultureqa.provenance import git_revision

    experiment_id = configure(root, experiment, uri)
    metrics: dict[str, float] = {}
    for step, document in step_metrics.items():
        numeric_leaves(step, document, metrics)
    git = git_revision(root)
    flat = flatten_params("", params, {})
    flat.update({"git.commit": str(git["commit"]), "git.dirty": str(git["dirty"])})
    exp_name = str(os.environ.get("DVC_EXP_NAME"))
    content = json.dumps([step_metrics, params], sort_keys=True, default=str).encode("utf-8")
    key = result_key(experiment_id, {"pipeline": "build"}, hashlib.md5(content).hexdigest())
    kept = _earlier(experiment_id, key, exp_name)
    if kept is not None:
        return kept
    tags = {"pipeline": "build", "dvc.exp_name": exp_name, "result_key": key}
    name = f"build/{os.environ.get('DVC_EXP_NAME', 'workspace')}"
    with mlflow.start_run(experiment_id=experiment_id, run_name=name, tags=tags) as run:
        mlflow.log_params({k: v[:6000] for k, v in flat.items()})
        mlflow.log_metrics(metrics)
        mlflow.log_dict(dict(step_metrics), "build_metrics.json")
        return str(run.info.run_id)
