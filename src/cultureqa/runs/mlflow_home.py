"""What MLflow's home page offers: every experiment listed there lands on a page with data.

MLflow 3.17.2's UI opens every experiment, whatever its ``mlflow.experimentKind`` tag, on its
GenAI "Overview": its workflow toggle is built in as on, and the kind becomes the browser's
workflow type (``mlflow.workflowType`` in local storage, GenAI in a new profile; a
``?workflowType=`` in the address counts for that address only). The overview counts the
experiment's traces of its time window, "Last 7 days" unless the address says
``?startTimeLabel=`` (or the browser stored another choice for that experiment); the server
cannot set either. So the project makes the overview worth landing on: every experiment it
writes holds traces (the results experiment and each family experiment their items, each build
its built items: :mod:`cultureqa.runs.item_traces`), the empty ``Default`` experiment is
deleted (:func:`retire_default`), and each description says where the sweep's table is
(:func:`experiment_note`). An experiment that would still land on an empty overview (no trace
in the window: an experiment no stage writes any more, or a sweep tracked over 7 days ago) is
named by ``make ui`` with the address of its runs table (:func:`landing_gaps`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}
"""The UI's own label for "Machine learning". MLflow 3.17.2's UI does not pick the landing page
from it (see the module's docstring): the addresses of :func:`ui_links` carry
``workflowType=machine_learning`` for the runs table, and every experiment's description
(:func:`experiment_note`) says where its numbers are."""
NOTE = "mlflow.note.content"
"""An experiment's description: MLflow's home page shows it beside the experiment's name."""
NOTE_START = "Sweep table: "
"""How every description this project writes starts (one a user wrote is left alone)."""
WINDOW_S = 7 * 24 * 3600
"""The overview's default time window, "Last 7 days" (``LAST_7_DAYS`` in MLflow 3.17.2's UI)."""
RUNS_VIEW = "#/experiments/{id}/runs?workflowType=machine_learning"
"""The runs table of an experiment: this address switches MLflow to "Model training"."""


def experiment_note(experiment: str) -> str | None:
    """The description of a project experiment other than the results one, which has its own.

    The home page shows descriptions beside the names, so each one starts with where the sweep's
    table is, then says what this experiment's overview counts and how to reach its runs.
    """
    from cultureqa.runs.parent_summary import RESULTS, results_experiment

    results = results_experiment(experiment)
    if experiment.rsplit("/", 1)[-1] == RESULTS:
        return None
    return (
        f"{NOTE_START}{results} → Evaluation runs (accuracy ± 95% CI per model × prompt × "
        "benchmark; a run there opens its items). Here: the overview counts this experiment's "
        "items (one trace each, Traces lists them); its runs (one parent per DVC experiment, "
        "children per setting, language or seed; a build's counts per step) are in its runs "
        'table: switch MLflow to "Model training" (top left).'
    )


def ui_links(root: Path, base: str) -> list[str]:
    """``<experiment>: <address of its runs table>`` for each project experiment.

    Then a line for each experiment whose overview would be empty (:func:`landing_gaps`).
    """
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    found = mlflow.search_experiments(order_by=["name ASC"])
    lines = [f"{e.name}: {base}/{RUNS_VIEW.format(id=e.experiment_id)}" for e in found]
    for name, why in landing_gaps().items():
        lines.append(f"note: {name} opens on an empty overview ({why}); use its address above")
    return lines


def landing_gaps(now_s: float | None = None) -> dict[str, str]:
    """Active experiments whose GenAI overview shows no trace in its default window, and why.

    Uses the tracking URI already set. ``now_s`` (seconds since the epoch) is for tests.
    """
    import mlflow

    since_ms = int(((now_s if now_s is not None else time.time()) - WINDOW_S) * 1000)
    gaps: dict[str, str] = {}
    for experiment in mlflow.search_experiments():
        where = [experiment.experiment_id]
        if not mlflow.search_traces(locations=where, max_results=1, return_type="list"):
            gaps[experiment.name] = "no traces"
        elif not mlflow.search_traces(
            locations=where, filter_string=f"trace.timestamp_ms > {since_ms}", max_results=1,
            return_type="list",
        ):  # fmt: skip
            gaps[experiment.name] = 'no trace in the last 7 days: pick "All" in its time range'
    return gaps


def retire_default(uri: str | None = None) -> str | None:
    """Delete MLflow's ``Default`` experiment (id 0) of the project database when it is empty.

    MLflow creates it with every new store; the project never logs into it, and MLflow 3.17
    opens it, as every experiment, on an overview that is empty without traces. An experiment
    holding any run or trace is kept, as is one on a tracking server (a shared store's Default
    is not the project's). Deleting is MLflow's own soft delete: ``mlflow experiments restore
    --experiment-id 0`` brings it back. Uses the tracking URI already set; returns the line
    saying what was done, or None.
    """
    if uri is not None:
        return None
    import mlflow
    from mlflow import MlflowClient
    from mlflow.entities import ViewType

    client = MlflowClient()
    found = client.get_experiment("0")
    if found is None or found.lifecycle_stage != "active":
        return None
    if client.search_runs(["0"], run_view_type=ViewType.ALL, max_results=1):
        return None
    if mlflow.search_traces(locations=["0"], max_results=1, return_type="list"):
        return None
    client.delete_experiment("0")
    return (
        "MLflow: deleted the empty Default experiment (id 0): MLflow opens it on an empty "
        "overview; `mlflow experiments restore --experiment-id 0` restores it"
    )


def mark_modified(experiments: list[str]) -> list[str]:
    """Set the "Last modified" time of each experiment, in order; return the names marked.

    MLflow's home page lists the five experiments modified last ("Recent Experiments", sorted by
    ``last_update_time``), but logging runs or traces does not change that time: only a rename,
    a delete or a restore does. So the track stage marks the experiments it wrote with MLflow's
    own rename to the same name, ``cultureqa/results`` last: the sweep's table is then first on
    the home page, whatever the order the experiments were created in. Each mark waits for the
    next millisecond, so the order is strict. Uses the tracking URI already set.
    """
    from mlflow import MlflowClient

    client = MlflowClient()
    marked: list[str] = []
    for name in dict.fromkeys(experiments):  # once each, in order
        found = client.get_experiment_by_name(name)
        if found is None or found.lifecycle_stage != "active":
            continue
        start = time.time_ns() // 1_000_000
        while time.time_ns() // 1_000_000 == start:
            time.sleep(0.0005)
        client.rename_experiment(found.experiment_id, name)
        marked.append(name)
    return marked
