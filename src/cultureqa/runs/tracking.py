"""MLflow tracking (DESIGN.md §7): one experiment per benchmark, one run per result.

A result is one roster entry × setting/prompt/language/seed with its predictions. Each MLflow
experiment is tagged "Machine learning" (``mlflow.experimentKind``) and described by where its
numbers are (:mod:`cultureqa.runs.mlflow_home`), holds one parent run per DVC experiment and,
under it, one child run per result, named ``<model id> · <prompt> · <setting>``; re-tracking a
result updates its run in place, nothing is deleted (:mod:`cultureqa.runs.mlflow_runs`). Each run
logs its dataset as an MLflow dataset input; the report's figures go to the parent. A child run
of the model slot holds its items as traces, as a build's run does (MLflow opens every
experiment on an overview of its traces: :mod:`cultureqa.runs.mlflow_home`).

The URI is ``sqlite:///<DVC_ROOT>/mlflow.db`` with an explicit artifact root, so queued DVC
experiments (which run in temp copies) log into the same database as the workspace; or, with
``tracking.uri`` set (``-S tracking=server``), an MLflow server that owns its artifact store, so
workers on several machines log into one place. mlflow is imported lazily: it is slow to import
and only the tracking stage needs it.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pandas as pd

from cultureqa.core.config import ParamsError
from cultureqa.runs.item_traces import ITEM_TRACE_SLOTS, build_item_record, log_item_traces
from cultureqa.runs.mlflow_home import EXPERIMENT_KIND, NOTE, NOTE_START, experiment_note
from cultureqa.runs.mlflow_runs import DatasetRef as DatasetRef  # re-exported for the families
from cultureqa.runs.mlflow_runs import ResultRun as ResultRun
from cultureqa.runs.mlflow_runs import (
    current_group,
    digest,
    ensure_parent,
    log_figures,
    predictions_md5,
    runs_tagged,
    upsert_result,
)
from cultureqa.runs.tracking_server import bound_requests, check_reachable, server_errors

_METRIC_SAFE = re.compile(r"[^A-Za-z0-9_\-. /]")
log = logging.getLogger(__name__)


def metric_key(*parts: object) -> str:
    """Stable dotted metric name with characters MLflow rejects replaced."""
    return ".".join(_METRIC_SAFE.sub("_", str(p)) for p in parts)


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
    if _is_server(uri):
        bound_requests(tracking)  # a lost server costs tracking.timeout_s × retries, not minutes
    return uri


def _is_server(uri: str) -> bool:
    """A tracking server (it stores artifacts itself), not a database or folder we write to."""
    return uri == "databricks" or urlsplit(uri).scheme in ("http", "https", "databricks")


def configure(root: Path, experiment: str, uri: str | None = None) -> str:
    """Point MLflow at the project database (or the server at ``uri``); return the experiment id.

    A server keeps its own artifact store (``mlflow server --artifacts-destination``), so its
    experiments are created without an artifact location; a database or file store gets
    ``<root>/mlartifacts`` explicitly (its default would be relative to a DVC temp copy). Every
    experiment is tagged :data:`EXPERIMENT_KIND`, also one created by an older version.
    """
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    import mlflow
    from mlflow import MlflowClient

    if uri and urlsplit(uri).scheme in ("http", "https"):
        check_reachable(uri)
    mlflow.set_tracking_uri(uri or f"sqlite:///{root / 'mlflow.db'}")
    note = experiment_note(experiment)
    tags = EXPERIMENT_KIND | ({NOTE: note} if note else {})
    found = mlflow.get_experiment_by_name(experiment)
    if found is None:
        location = None if uri and _is_server(uri) else (root / "mlartifacts").as_uri()
        return str(mlflow.create_experiment(experiment, location, tags=tags))
    for key, value in tags.items():
        # a description the user wrote is kept; one this project wrote is brought up to date
        ours = key != NOTE or found.tags.get(NOTE, "").startswith(NOTE_START)
        if found.tags.get(key) != value and (ours or NOTE not in found.tags):
            MlflowClient().set_experiment_tag(found.experiment_id, key, value)
    return str(found.experiment_id)


def open_store(root: Path, uri: str | None = None) -> None:
    """Import MLflow and open the tracking store once, before any part of the track stage logs.

    MLflow keeps one store per tracking URI for the process, so every later client and fluent
    call of the stage reuses this one; a server that does not answer ends the stage here, with
    one line, before anything is read or logged.
    """
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    with server_errors(uri):
        import mlflow
        from mlflow import MlflowClient

        if uri and urlsplit(uri).scheme in ("http", "https"):
            check_reachable(uri)
        mlflow.set_tracking_uri(uri or f"sqlite:///{root / 'mlflow.db'}")
        MlflowClient()  # its service client resolves (and MLflow caches) the store at init


def flatten_params(prefix: str, value: Any, out: dict[str, str]) -> dict[str, str]:
    """Flatten nested config into ``a.b.c`` params (MLflow params are flat strings)."""
    if isinstance(value, Mapping):
        for key, sub in value.items():
            flatten_params(f"{prefix}.{key}" if prefix else str(key), sub, out)
    else:
        out[prefix] = json.dumps(value) if isinstance(value, list | dict) else str(value)
    return out


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
        from cultureqa.core.runlog import NEAR_TIE

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
        out["usage_estimated"] = client.get("usage_estimated", 0)
        by_method = (client.get("usage_estimated_by") or {}).items()
        out |= {metric_key("usage_estimated", m): n for m, n in by_method}
        out["retry_after_capped"] = client.get("retry_after_capped", 0)
        out |= replica_metrics(client.get("replicas") or {})
    for name, value in (api.get("cache") or {}).items():
        out[metric_key("cache", name)] = value
    out |= budget_metrics(api.get("budget") or {})
    return {k: float(v) for k, v in (out | error_metrics(run_info)).items()}


def budget_metrics(budget: Mapping[str, Any]) -> dict[str, float]:
    """The budget's counters (``budget.*``); a team budget's under ``budget.team.*``.

    Refusals and released reservations are logged by reason, so a run stopped or slowed by the
    team's cap says so in MLflow as in its run record.
    """
    out: dict[str, float] = {}
    for name in ("spent_usd", "requests", "refused", "over_estimate"):
        if isinstance(budget.get(name), int | float):
            out[metric_key("budget", name)] = float(budget[name])
    team = budget.get("team") or {}
    for name in ("refused", "waits", "released_at_end"):
        if name in team:
            out[metric_key("budget", "team", name)] = float(team[name])
    for reason, count in (team.get("released") or {}).items():
        out[metric_key("budget", "team", "released", reason)] = float(count)
    return out


def error_metrics(run_info: Mapping[str, Any]) -> dict[str, float]:
    """The evaluation's unusable items by cause (``unusable.<cause>``) and their total share.

    ``unusable.failed``, ``unusable.empty``, ``unusable.unparsable`` count items; their sum over
    the items is ``error_share``, which ``max_error_share`` limits.
    """
    out: dict[str, float] = {}
    if run_info.get("error_share") is not None:
        out["error_share"] = float(run_info["error_share"])
    for cause, found in (run_info.get("error_causes") or {}).items():
        out[metric_key("unusable", cause)] = float(found["items"])
        for why, n in (found.get("by_cause") or {}).items():  # unparsable: several, negated, …
            out[metric_key("unusable", cause, why)] = float(n)
    return out


def replica_metrics(replicas: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Per-replica counters (``llm/api/replicas.py``) as ``replica.<host_port>.<counter>``."""
    out: dict[str, float] = {}
    for base, counts in replicas.items():
        name = urlsplit(base).netloc or base
        out |= {metric_key("replica", name, k): counts[k] for k in ("sent", "ok", "backoffs")}
        out[metric_key("replica", name, "backoff_s")] = counts["backoff_s"]
        for cause, n in counts["failed_by_cause"].items():
            out[metric_key("replica", name, "failed", cause)] = n
    return out


SLICE = "slice"
"""Prefix of slice metrics (``slice.acc.<slice>.<value>``): after the headline (``accuracy``,
its CI, ``n``, the rates) in MLflow's alphabetical metric lists, not before it."""


def slice_metrics(tables: Mapping[str, pd.DataFrame]) -> dict[str, float]:
    """Slice accuracies under stable names: ``slice.acc.<slice>.<value>[.<value>]``, ``slice.n...``.

    Each table is keyed by its slice name (columns joined by ``×``) and already filtered to one
    model and setting.
    """
    out: dict[str, float] = {}
    for name, table in tables.items():
        columns = name.split("×")
        for row in table.to_dict(orient="records"):
            cell = ("_x_".join(columns), *(row[c] for c in columns))
            out[metric_key(SLICE, "acc", *cell)] = float(row["accuracy"])
            out[metric_key(SLICE, "n", *cell)] = float(row["n"])
    return out


def run_name(model_id: str, slot: str, *parts: str) -> str:
    """``<model id> · <prompt> · <setting>``: what differs between runs, in the runs table.

    The model under test is named by its id alone; another roster slot adds ``[<slot>]``, so
    ``-S model=random`` (the random baseline under test) and the random baseline stay apart.
    """
    who = model_id if slot == "model" else f"{model_id} [{slot}]"
    return " · ".join(x for x in (who, *parts) if x)


def sweep_tags(params: Mapping[str, Any], prompt: bool = True) -> dict[str, str]:
    """What a sweep varies, for the parent run's name and tags: model id (and prompt style)."""
    tags = {"model": str(params["model"]["id"])}
    if prompt:
        tags["prompt"] = str(params["prompt"]["style"])
    return tags


def log_runs(
    root: Path,
    experiment: str,
    run: Mapping[str, Any],
    predictions: pd.DataFrame,
    by: str,
    metrics_of: Callable[[pd.DataFrame], Mapping[str, float]],
    dataset_of: Callable[[str], DatasetRef],
    uri: str | None = None,
    sweep: Mapping[str, str] | None = None,
    figures: Iterable[Path] = (),
) -> dict[str, str]:
    """One MLflow child run per ``by`` value (setting, language or seed) of an engine run record.

    Every family logs the same params (model, benchmark, prompt and template hash, dataset,
    packages), the same tags (roster entry, benchmark, prompt, git, DVC experiment) and the same
    request counters; ``metrics_of`` adds the family's own metrics. The runs go under the DVC
    experiment's parent run (named after ``sweep``: :func:`sweep_tags`), which gets ``figures``.
    ``uri`` is ``tracking.uri`` (a tracking server); None logs into ``<root>/mlflow.db``. The git
    state is read from the working directory (a queued experiment's temp copy). The parent also
    gets this slot's headline (:mod:`cultureqa.runs.parent_summary`). A tracking server that stops
    answering ends the stage with one line (:mod:`cultureqa.runs.tracking_server`). Returns
    ``{value: run_id}``.
    """
    with server_errors(uri):
        return _log_runs(root, experiment, run, predictions, by, metrics_of, dataset_of, uri,
                         sweep, figures)  # fmt: skip


def _log_runs(
    root: Path,
    experiment: str,
    run: Mapping[str, Any],
    predictions: pd.DataFrame,
    by: str,
    metrics_of: Callable[[pd.DataFrame], Mapping[str, float]],
    dataset_of: Callable[[str], DatasetRef],
    uri: str | None,
    sweep: Mapping[str, str] | None,
    figures: Iterable[Path],
) -> dict[str, str]:
    from cultureqa.runs.parent_summary import (
        headline,
        log_parent_summary,
        log_result_row,
        results_experiment,
    )

    experiment_id = configure(root, experiment, uri)
    group = current_group(Path.cwd())
    parent = ensure_parent(experiment_id, group, dict(sweep or {}))
    log_figures(parent, figures)
    model = run["model"]
    entry, prompt = str(run["roster_entry"]), str(run["prompt"])
    packages = packages_tag(run["provenance"]["packages"])
    runs: dict[str, str] = {}
    for value, part in predictions.groupby(by, sort=False):
        key, dataset = str(value), dataset_of(str(value))
        params = flatten_params("model", model, {}) | {
            "benchmark": str(run["benchmark"]), by: key, "prompt.style": prompt,
            "prompt.template_sha256": str(run["templates"].get(key)),
            "dataset.name": dataset.name, "dataset.md5": dataset.digest,
            "dataset.source": dataset.source,
        }  # fmt: skip
        metrics = {**metrics_of(part), **api_metrics(run)}
        identity = {"benchmark": str(run["benchmark"]), "roster_entry": entry, by: key}
        identity |= {"prompt": prompt} if prompt else {}
        label = f"seed {key}" if by == "seed" else key
        name = run_name(str(model["id"]), entry, prompt, label)
        artifacts = {"metrics.json": metrics, "run.json": dict(run)}
        frame = part.reset_index(drop=True)
        tags = {"model": str(model["id"]), "packages": packages}
        result = ResultRun(name, identity, params, tags, metrics, frame, artifacts, dataset)
        runs[key] = upsert_result(experiment_id, group, parent, result)
        if entry in ITEM_TRACE_SLOTS:  # the experiment's overview lands on its own items
            traced = {"benchmark": str(run["benchmark"]), "slot": entry,
                      "prompt": prompt or "own", "model": str(model["id"]),
                      "dvc_experiment": group.label}  # fmt: skip
            log_item_traces(experiment_id, runs[key], frame, traced, predictions_md5(frame))
    metrics, row = headline(str(run["benchmark"]), entry, prompt, predictions, str(model["id"]))
    swept = {"model.id": "model", "prompt.style": "prompt"}  # the experiment's, on its parent
    given = dict(sweep or {})
    log_parent_summary(parent, metrics, row, {k: given[v] for k, v in swept.items() if v in given})
    results_id = configure(root, results_experiment(experiment), uri)
    row_run = log_result_row(results_id, group, row, {"roster_entry": entry})
    if entry in ITEM_TRACE_SLOTS:
        tags = {"benchmark": str(run["benchmark"]), "slot": entry, "prompt": prompt or "own",
                "model": str(model["id"]), "dvc_experiment": group.label}  # fmt: skip
        written = log_item_traces(results_id, row_run, predictions, tags,
                                  predictions_md5(predictions))  # fmt: skip
        if written:
            log.info("logged %d item traces for %s", written, row["model"])
    return runs


def packages_tag(packages: Mapping[str, Any]) -> str:
    """Package versions as one tag value (``dvc==3.67.1 mlflow==3.17.2 …``), not one param each.

    Dozens of ``package.*`` params pushed ``model.id`` and ``prompt.style`` out of the compare
    view's parameter lists; the full record stays in the ``run.json`` artifact.
    """
    return " ".join(f"{name}=={version}" for name, version in sorted(packages.items()))[:8000]


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


def source_metrics(details: Mapping[str, Any]) -> dict[str, float]:
    """A config benchmark's source facts from its run record.

    Rows read, skipped, blank, dropped (by reason), items per language, items with several
    golds, chance accuracy, the gold balance and the checks only reported.
    """
    rows = details.get("rows") or {}
    out = {
        "rows.read": rows.get("rows_read"),
        "rows.skipped": rows.get("rows_skipped"),
        "rows.blank": rows.get("rows_blank"),
        "rows.dropped": rows.get("rows_dropped"),
        "items.multi_gold": rows.get("multi_gold_items"),
        "chance_accuracy": details.get("chance_accuracy"),
    }
    for reason, n in (rows.get("dropped_by_reason") or {}).items():
        out[metric_key("rows.dropped", reason)] = n
    for language, n in (rows.get("items_by_language") or {}).items():
        out[metric_key("items.language", language)] = n
    validation = details.get("validation") or {}
    if validation.get("found"):
        out["validation.reported"] = len(validation.get("reported") or [])
        for on, found in (validation.get("gold_balance") or {}).items():
            if found:
                out[f"gold_balance.{on}.max_gap"] = found.get("max_deviation")
                out[f"gold_balance.{on}.gap_bound"] = found.get("deviation_bound")
                out[f"gold_balance.{on}.passes"] = bool(found.get("success"))
                out[f"gold_balance.{on}.warning"] = bool(found.get("warning"))
    return {k: float(v) for k, v in out.items() if isinstance(v, int | float)}


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
    items: pd.DataFrame | None = None,
) -> str:
    """One MLflow run for a dataset build: counts kept and removed at every step (DESIGN.md §7).

    Idempotent like evaluation runs: the same counts and params re-tracked by the same DVC
    experiment (or workspace commit) update that run; another experiment logs its own run, and
    nothing is deleted. ``items`` (the build's items with its judge's verdicts) are logged as
    one trace each, linked to the run (:func:`cultureqa.runs.item_traces.build_item_record`).
    """
    with server_errors(uri):
        return _log_build(root, experiment, step_metrics, params, uri, items)


def _log_build(
    root: Path,
    experiment: str,
    step_metrics: Mapping[str, Any],
    params: Mapping[str, Any],
    uri: str | None,
    items: pd.DataFrame | None = None,
) -> str:
    import mlflow

    experiment_id = configure(root, experiment, uri)
    metrics: dict[str, float] = {}
    for step, document in step_metrics.items():
        numeric_leaves(step, document, metrics)
    flat = flatten_params("", params, {})
    group = current_group(Path.cwd())
    key = digest({"experiment": experiment_id, "group": group.key, "pipeline": "build",
                  "content": [step_metrics, params]})  # fmt: skip
    tags = {"pipeline": "build", **group.tags, "result_key": key}
    name = f"build · {group.label}"
    found = runs_tagged(experiment_id, {"result_key": key})
    with mlflow.start_run(
        run_id=str(found[0].info.run_id) if found else None,
        experiment_id=experiment_id,
        run_name=None if found else name,
        tags=None if found else tags,
    ) as run:
        if found:
            mlflow.set_tags(tags)
        else:
            mlflow.log_params({k: v[:6000] for k, v in flat.items()})
        mlflow.log_metrics(metrics)
        mlflow.log_dict(dict(step_metrics), "build_metrics.json")
        run_id = str(run.info.run_id)
    if items is not None and len(items):
        tags = {"pipeline": "build", "build": experiment.rsplit("/", 1)[-1],
                "dvc_experiment": group.label}  # fmt: skip
        log_item_traces(experiment_id, run_id, items, tags, predictions_md5(items),
                        build_item_record)  # fmt: skip
    return run_id
