"""MLflow tracking (DESIGN.md §7): one experiment per benchmark, one run per model × setting.

The URI is always ``sqlite:///<DVC_ROOT>/mlflow.db`` with an explicit artifact root, so queued DVC
experiments (which run in temp copies) log into the same database as the workspace. mlflow is
imported lazily: it is slow to import and only the tracking stage needs it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

_METRIC_SAFE = re.compile(r"[^A-Za-z0-9_\-. /]")


def metric_key(*parts: object) -> str:
    """Stable dotted metric name with characters MLflow rejects replaced."""
    return ".".join(_METRIC_SAFE.sub("_", str(p)) for p in parts)


def current_exp_name(provenance: Mapping[str, Any]) -> str:
    """The DVC experiment running *now*, falling back to the one recorded in ``provenance``.

    A tracking stage must not trust the name its inputs recorded: when DVC restores an
    evaluation from its run-cache, that name belongs to an older experiment.
    """
    return str(os.environ.get("DVC_EXP_NAME") or provenance.get("dvc_exp_name"))


def configure(root: Path, experiment: str) -> str:
    """Point MLflow at the project database and return the experiment id."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    found = mlflow.get_experiment_by_name(experiment)
    if found is None:
        return str(
            mlflow.create_experiment(experiment, artifact_location=(root / "mlartifacts").as_uri())
        )
    return str(found.experiment_id)


def flatten_params(prefix: str, value: Any, out: dict[str, str]) -> dict[str, str]:
    """Flatten nested config into ``a.b.c`` params (MLflow params are flat strings)."""
    if isinstance(value, Mapping):
        for key, sub in value.items():
            flatten_params(f"{prefix}.{key}" if prefix else str(key), sub, out)
    else:
        out[prefix] = json.dumps(value) if isinstance(value, list | dict) else str(value)
    return out


def log_setting_run(
    experiment_id: str,
    run_name: str,
    params: Mapping[str, str],
    tags: Mapping[str, str],
    metrics: Mapping[str, float],
    predictions: pd.DataFrame,
    artifacts: Mapping[str, Any],
) -> str:
    """Create one finished run; metrics go in one batch; returns the run id."""
    import mlflow

    with mlflow.start_run(experiment_id=experiment_id, run_name=run_name, tags=dict(tags)) as run:
        mlflow.log_params({k: v[:6000] for k, v in params.items()})
        mlflow.log_metrics({k: float(v) for k, v in metrics.items() if pd.notna(v)})
        mlflow.log_table(predictions, artifact_file="predictions.json")
        for name, payload in artifacts.items():
            mlflow.log_dict(payload, name)
        return str(run.info.run_id)


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


def log_evaluation(
    root: Path,
    experiment: str,
    run_info: Mapping[str, Any],
    predictions: pd.DataFrame,
    slices: list[tuple[str, ...]],
) -> dict[str, str]:
    """Log one run per setting of an evaluation; returns {setting: run_id}."""
    from cultureqa.analysis.tables import overall_table, slice_tables

    experiment_id = configure(root, experiment)
    model = run_info["model"]
    prov = run_info["provenance"]
    exp_name = current_exp_name(prov)
    overall = overall_table(predictions).set_index("setting")
    runs: dict[str, str] = {}
    for setting, part in predictions.groupby("setting", sort=True):
        setting = str(setting)
        params = flatten_params("model", model, {})
        params.update(
            {
                "benchmark": str(run_info["benchmark"]),
                "setting": setting,
                "prompt.style": str(run_info["prompt"].get("style")),
                "prompt.template_sha256": str(run_info["templates"].get(setting)),
                "dataset.name": str(prov["dataset"].get("name")),
                "dataset.md5": str(prov["dataset"].get("md5")),
                "git.commit": str(prov["git"].get("commit")),
                "git.dirty": str(prov["git"].get("dirty")),
                "dvc.exp_name": str(exp_name),
            }
        )
        params.update({f"package.{k}": v for k, v in prov["packages"].items()})
        row = overall.loc[setting]
        metrics = {
            "accuracy": row["accuracy"],
            "accuracy.ci_low": row["ci_low"],
            "accuracy.ci_high": row["ci_high"],
            "n": row["n"],
            "parse_error_rate": row["parse_error_rate"],
            "error_rate": row["error_rate"],
            "tokens.prompt": float(part["prompt_tokens"].sum()),
            "tokens.completion": float(part["completion_tokens"].sum()),
            "cost_usd": float(part["cost_usd"].sum()),
            "latency_s.p50": float(part["latency_s"].quantile(0.5)),
            "latency_s.p95": float(part["latency_s"].quantile(0.95)),
        }
        usable = [s for s in slices if all(c in part.columns for c in s)]
        metrics.update(slice_metrics(slice_tables(part, usable)))
        tags = {
            "benchmark": str(run_info["benchmark"]),
            "model": str(model["id"]),
            "setting": setting,
            "roster_entry": str(run_info["roster_entry"]),
            "dvc.exp_name": str(exp_name),
        }
        artifacts = {
            "metrics.json": {k: float(v) for k, v in metrics.items()},
            "run.json": dict(run_info),
        }
        runs[setting] = log_setting_run(
            experiment_id,
            f"{model['id']}/{setting}",
            params,
            tags,
            metrics,
            part.reset_index(drop=True),
            artifacts,
        )
    return runs


def numeric_leaves(prefix: str, value: Any, out: dict[str, float]) -> dict[str, float]:
    """Every number in a nested metrics document, keyed by its dotted path (MLflow-safe)."""
    if isinstance(value, Mapping):
        for key, sub in value.items():
            numeric_leaves(f"{prefix}.{key}" if prefix else str(key), sub, out)
    elif isinstance(value, int | float):  # bools included: True/False become 1/0
        out[metric_key(prefix)] = float(value)
    return out


def log_build(
    root: Path, experiment: str, step_metrics: Mapping[str, Any], params: Mapping[str, Any]
) -> str:
    """One MLflow run for a dataset build: counts kept and removed at every step (DESIGN.md §7)."""
    import mlflow

    from cultureqa.provenance import git_revision

    experiment_id = configure(root, experiment)
    metrics: dict[str, float] = {}
    for step, document in step_metrics.items():
        numeric_leaves(step, document, metrics)
    git = git_revision(root)
    flat = flatten_params("", params, {})
    flat.update({"git.commit": str(git["commit"]), "git.dirty": str(git["dirty"])})
    tags = {"pipeline": "build", "dvc.exp_name": str(os.environ.get("DVC_EXP_NAME"))}
    name = f"build/{os.environ.get('DVC_EXP_NAME', 'workspace')}"
    with mlflow.start_run(experiment_id=experiment_id, run_name=name, tags=tags) as run:
        mlflow.log_params({k: v[:6000] for k, v in flat.items()})
        mlflow.log_metrics(metrics)
        mlflow.log_dict(dict(step_metrics), "build_metrics.json")
        return str(run.info.run_id)
