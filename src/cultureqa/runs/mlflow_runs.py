"""MLflow runs of one DVC experiment: a parent run per experiment, child runs updated in place.

Three identities decide where a result goes (DESIGN.md §7, idempotent tracking):

- **group**: the DVC experiment running now (``DVC_EXP_NAME``), else the workspace at its git
  commit. Each MLflow experiment holds one *parent* run per group, found by its
  ``cultureqa.group`` tag, so every part of the track stage (one per benchmark × roster entry)
  finds the same parent, also when one part is re-tracked alone (``--only``).
- **slot**: group + roster slot + benchmark + setting/language/seed + prompt (``slot_key``).
- **result**: slot + params + predictions MD5 (``result_key``). Re-tracking the same result
  updates that run (same id, so links keep working). A different result in the same slot (new
  code, new config on the same commit) is a new run; the older one gets a ``superseded_by`` tag.

Nothing is ever deleted and no run moves between groups: a baseline logged by one experiment stays
in that experiment's parent.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas comes with MLflow: the track stage decides what to log without it
    import pandas as pd

log = logging.getLogger(__name__)

PARENT_TAG = "cultureqa.group"
"""On parent runs only: the group key. Children carry ``mlflow.parentRunId``."""
SUPERSEDED_TAG = "superseded_by"


@dataclass(frozen=True)
class DatasetRef:
    """The dataset a run evaluated, logged as its MLflow dataset input."""

    name: str
    digest: str
    """The MD5 recorded in the run's provenance (the hash DVC records for a single file)."""
    source: str
    """Repository-relative path, or ``hf:<dataset>:<split>``."""


@dataclass(frozen=True)
class Group:
    """The DVC experiment (or workspace commit) that is logging now: one parent run each."""

    key: str
    """``exp:<name>`` or ``workspace:<commit>``: the parent's identity."""
    label: str
    """The experiment name, or ``workspace @ <short commit>``."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """``git.commit``, ``git.dirty`` and ``dvc.exp_name`` (only when there is one)."""


def current_group(root: Path) -> Group:
    """The group of whatever runs now, read at tracking time (never from a restored record).

    ``git.dirty`` leaves out what DVC itself writes during an experiment (see
    :func:`cultureqa.core.provenance.git_revision`).
    """
    from cultureqa.core.provenance import git_revision

    git = git_revision(root)
    commit = str(git["commit"]) if git["commit"] else "no-git"
    tags = {"git.commit": commit, "git.dirty": str(git["dirty"])}
    exp = os.environ.get("DVC_EXP_NAME")
    if exp:
        return Group(f"exp:{exp}", exp, {**tags, "dvc.exp_name": exp})
    return Group(f"workspace:{commit}", f"workspace @ {commit[:7]}", tags)


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


def digest(doc: Any) -> str:
    """Short SHA-256 of a JSON document (sorted keys): tag values for identities."""
    text = json.dumps(doc, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(text).hexdigest()[:32]


def predictions_md5(predictions: pd.DataFrame) -> str:
    """MD5 of a predictions table's stable content, for the result key.

    The run log's volatile columns (per-item latency, cache flag) are left out: they are joined
    back at tracking time and missing after a restore, and a result is the same without them.
    """
    from cultureqa.core.runlog import VOLATILE_COLUMNS

    stable = predictions.drop(columns=[c for c in VOLATILE_COLUMNS if c in predictions.columns])
    text = stable.to_csv(index=False)
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def runs_tagged(experiment_id: str, tags: Mapping[str, str]) -> list[Any]:
    """Active runs of the experiment carrying every tag in ``tags``, oldest first."""
    import mlflow

    where = " and ".join(f"tags.`{k}` = '{v}'" for k, v in tags.items())
    runs = mlflow.search_runs(
        experiment_ids=[experiment_id],
        filter_string=where,
        output_format="list",
        order_by=["attributes.start_time ASC"],
    )
    return list(runs)


def ensure_parent(experiment_id: str, group: Group, tags: Mapping[str, str]) -> str:
    """The group's parent run in this experiment, created on first use; tags refreshed.

    ``tags`` say what the experiment varies (the model under test, the prompt); the run name is
    ``<model id> · <prompt> · <group label>`` so parents tell experiments apart at a glance, even
    where the runs table cuts names short.
    """
    from mlflow import MlflowClient

    client = MlflowClient()
    name = " · ".join(x for x in (tags.get("model"), tags.get("prompt"), group.label) if x)
    wanted = {**group.tags, **tags, "mlflow.runName": name}
    found = runs_tagged(experiment_id, {PARENT_TAG: group.key})
    if found:
        run_id = str(found[0].info.run_id)
        changed = {k: v for k, v in wanted.items() if found[0].data.tags.get(k) != v}
        for key, value in changed.items():
            client.set_tag(run_id, key, value)
        return run_id
    run = client.create_run(experiment_id, run_name=name, tags={**wanted, PARENT_TAG: group.key})
    client.set_terminated(run.info.run_id, "FINISHED")
    log.info("MLflow parent run %s for %s", run.info.run_id, group.label)
    return str(run.info.run_id)


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


def _metrics(result: ResultRun) -> dict[str, float]:
    import pandas as pd

    from cultureqa.runs.parent_summary import rounded

    return {k: rounded(float(v)) for k, v in result.metrics.items() if pd.notna(v)}


def upsert_result(experiment_id: str, group: Group, parent_id: str, result: ResultRun) -> str:
    """Log ``result`` as a child of ``parent_id``, or update the run that already holds it.

    Returns the run id. An update refreshes tags, metrics and the JSON artifacts in place; the
    predictions table and dataset input are logged once (``log_table`` appends on re-logging).
    """
    import mlflow

    slot = digest({"experiment": experiment_id, "group": group.key, **result.identity})
    key = digest({"slot": slot, "params": dict(result.params),
                  "content": predictions_md5(result.predictions)})  # fmt: skip
    tags = {**result.tags, **group.tags, **result.identity, "slot_key": slot, "result_key": key}
    found = runs_tagged(experiment_id, {"result_key": key})
    if found:
        run_id = str(found[0].info.run_id)
        with mlflow.start_run(run_id=run_id, experiment_id=experiment_id):
            mlflow.set_tags({**tags, "mlflow.runName": result.name})
            mlflow.log_metrics(_metrics(result))
            for name, payload in result.artifacts.items():
                mlflow.log_dict(payload, name)
        log.info("updated MLflow run %s (same result re-tracked)", run_id)
        return run_id
    with mlflow.start_run(
        experiment_id=experiment_id, run_name=result.name, tags=tags, parent_run_id=parent_id
    ) as run:
        mlflow.log_params({k: v[:6000] for k, v in result.params.items()})
        mlflow.log_metrics(_metrics(result))
        mlflow.log_input(dataset_input(result.dataset), context="evaluation")
        mlflow.log_table(result.predictions, artifact_file="predictions.json")
        for name, payload in result.artifacts.items():
            mlflow.log_dict(payload, name)
        run_id = str(run.info.run_id)
    supersede(experiment_id, slot, run_id)
    return run_id


def supersede(experiment_id: str, slot: str, newest: str) -> None:
    """Tag the slot's older runs ``superseded_by`` the newest one (they are kept, not deleted)."""
    from mlflow import MlflowClient

    for run in runs_tagged(experiment_id, {"slot_key": slot}):
        if run.info.run_id != newest and SUPERSEDED_TAG not in run.data.tags:
            MlflowClient().set_tag(run.info.run_id, SUPERSEDED_TAG, newest)
            log.info(
                "MLflow run %s superseded by %s (new result, same slot)", run.info.run_id, newest
            )


def log_figures(run_id: str, figures: Iterable[Path], folder: str = "figures") -> int:
    """Attach report figures to a run (overwriting same-named ones); returns how many."""
    from mlflow import MlflowClient

    client, count = MlflowClient(), 0
    for figure in figures:
        client.log_artifact(run_id, str(figure), artifact_path=folder)
        count += 1
    return count
