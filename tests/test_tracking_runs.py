"""MLflow logging against a real (temporary) store: one run per result, dataset input, counters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from cultureqa.runs.tracking import benchmark_dataset, evaluation_metrics, log_runs

EXPERIMENT = "cultureqa/test"


def _predictions(correct: list[bool]) -> pd.DataFrame:
    n = len(correct)
    return pd.DataFrame({
        "benchmark": "indoculture", "model": "random", "setting": "mcq_en",
        "item_id": [f"i{i}" for i in range(n)], "correct": correct, "status": "ok",
        "prompt_tokens": 10, "completion_tokens": 1, "cost_usd": 0.0, "latency_s": 0.9,
        "server_latency_s": 0.2, "wait_s": 0.5,
    })  # fmt: skip


def _run_info() -> dict[str, Any]:
    dataset = {"name": "indoculture", "version": "v1", "md5": "0" * 32,
               "source": "data/sources/indoculture.jsonl"}  # fmt: skip
    client = {"sent": 12, "ok": 10, "retries": 2, "not_sent": 1, "stopped": None,
              "retries_by_cause": {"429": 1, "timeout": 1},
              "failed_by_cause": {"InternalServerError": 1}}  # fmt: skip
    return {
        "benchmark": "indoculture", "roster_entry": "model", "model": {"id": "random"},
        "prompt": "plain", "templates": {"mcq_en": "abc"}, "model_calls": 12,
        "api": {"client": client, "cache": {"hits": 3, "sent": 9}},
        "provenance": {"dataset": dataset, "git": {"commit": "c", "dirty": False},
                       "packages": {}, "dvc_exp_name": None},
    }  # fmt: skip


def log_evaluation(
    root: Path, experiment: str, run: dict[str, Any], preds: pd.DataFrame, slices: list[Any]
) -> dict[str, str]:
    """What ``stages/track.py`` does for a generic benchmark's run record."""
    dataset = benchmark_dataset(run["provenance"]["dataset"])
    metrics = lambda part: evaluation_metrics(part, slices)  # noqa: E731
    return log_runs(root, experiment, run, preds, "setting", metrics, lambda _: dataset)


def _runs(root: Path, view: str = "ACTIVE_ONLY") -> pd.DataFrame:
    import mlflow
    from mlflow.entities import ViewType

    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    kind = getattr(ViewType, view)
    return mlflow.search_runs(experiment_names=[EXPERIMENT], run_view_type=kind)


def _children(root: Path) -> pd.DataFrame:
    runs = _runs(root)
    return runs[runs["tags.mlflow.parentRunId"].notna()].sort_values("start_time")


def test_retracking_updates_the_same_run_and_deletes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_EXP_NAME", "first-exp")
    preds = _predictions([True, False, True, True])
    first = log_evaluation(tmp_path, EXPERIMENT, _run_info(), preds, [])
    assert log_evaluation(tmp_path, EXPERIMENT, _run_info(), preds, []) == first  # updated
    restored = preds.assign(latency_s=float("nan"))  # volatile columns are not the result
    assert log_evaluation(tmp_path, EXPERIMENT, _run_info(), restored, []) == first
    assert len(_children(tmp_path)) == 1 and len(_runs(tmp_path, "DELETED_ONLY")) == 0

    monkeypatch.setenv("DVC_EXP_NAME", "second-exp")  # same result, restored in another exp
    second = log_evaluation(tmp_path, EXPERIMENT, _run_info(), preds, [])
    children = _children(tmp_path)
    assert second != first and children["run_id"].tolist() == [first["mcq_en"], second["mcq_en"]]
    assert children["tags.dvc.exp_name"].tolist() == ["first-exp", "second-exp"]  # stays put
    parents = _runs(tmp_path).set_index("run_id")["tags.cultureqa.group"].dropna()
    assert sorted(parents) == ["exp:first-exp", "exp:second-exp"]
    assert children["tags.mlflow.parentRunId"].map(parents).tolist() == sorted(parents)

    changed = _predictions([False, False, True, True])  # a new result in the same slot
    third = log_evaluation(tmp_path, EXPERIMENT, _run_info(), changed, [])
    children = _children(tmp_path).set_index("run_id")
    assert len(children) == 3 and len(_runs(tmp_path, "DELETED_ONLY")) == 0
    assert children.loc[second["mcq_en"], "tags.superseded_by"] == third["mcq_en"]
    assert children["tags.superseded_by"].isna().sum() == 2  # first-exp's run is untouched

    kind = MlflowClient().get_experiment_by_name(EXPERIMENT).tags["mlflow.experimentKind"]
    assert kind == "custom_model_development"  # "Machine learning"
    run = MlflowClient().get_run(second["mcq_en"])
    assert run.info.run_name == "random · plain · mcq_en"
    assert run.data.tags["git.dirty"] == "None" and "git.commit" not in run.data.params
    (given,) = run.inputs.dataset_inputs
    assert (given.dataset.name, given.dataset.digest) == ("indoculture@v1", "0" * 32)
    assert "data/sources/indoculture.jsonl" in given.dataset.source
    metrics = run.data.metrics
    assert metrics["accuracy"] == 0.75 and metrics["requests"] == 12
    assert metrics["retries"] == 2 and metrics["retries.429"] == 1
    assert metrics["not_sent"] == 1 and metrics["failed.InternalServerError"] == 1
    assert metrics["cache.hits"] == 3 and metrics["latency.server.p50"] == pytest.approx(0.2)
    assert metrics["wait.item.p50"] == pytest.approx(0.5) and "latency.item.p50" not in metrics
    assert run.data.tags["roster_entry"] == "model" and run.data.tags["setting"] == "mcq_en"


def _parent(root: Path) -> Any:
    from mlflow import MlflowClient

    runs = _runs(root)
    (parent_id,) = runs[runs["tags.cultureqa.group"].notna()]["run_id"]
    return MlflowClient().get_run(parent_id)


def test_the_parent_run_carries_its_childrens_headline_and_a_comparison_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runs table shows results without expanding: headline metrics and a table on the parent.

    Two settings of 4 items (the accuracy over items is the mean of item means); a baseline slot
    adds its own prefixed metrics and table row; re-tracking replaces rows, never appends.
    """
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_EXP_NAME", "exp-a")
    preds = pd.concat([
        _predictions([True, False, True, True]),
        _predictions([True, False, False, True]).assign(setting="mcq_id"),
    ], ignore_index=True)  # fmt: skip
    run = _run_info() | {"provenance": _run_info()["provenance"] | {
        "packages": {"mlflow": "3.17.2", "dvc": "3.67.1"}}}  # fmt: skip
    sweep = {"model": "random", "prompt": "plain"}
    dataset = benchmark_dataset(run["provenance"]["dataset"])
    metrics = lambda part: evaluation_metrics(part, [])  # noqa: E731
    for _ in range(2):  # re-tracked: same metrics, same one row
        log_runs(tmp_path, EXPERIMENT, run, preds, "setting", metrics, lambda _: dataset,
                 sweep=sweep)  # fmt: skip
    baseline = run | {"roster_entry": "baselines.first_option", "model": {"id": "first-option"}}
    log_runs(tmp_path, EXPERIMENT, baseline, preds.assign(correct=False), "setting", metrics,
             lambda _: dataset, sweep=sweep)  # fmt: skip

    parent = _parent(tmp_path)
    got = parent.data.metrics
    assert got["indoculture.accuracy"] == 0.625 and got["indoculture.accuracy.n_items"] == 4
    # item means 1, 0, .5, 1: t-interval over 4 items, at 4 significant digits
    half = stats.t.ppf(0.975, 3) * np.std([1, 0, 0.5, 1], ddof=1) / 2
    assert got["indoculture.accuracy.ci_low"] == round(0.625 - half, 4) == -0.1367
    assert got["indoculture.baselines.first_option.accuracy"] == 0.0
    assert parent.data.params == {"model.id": "random", "prompt.style": "plain"}
    table = MlflowClient().load_table(
        parent.info.experiment_id, "comparison.json", run_ids=[parent.info.run_id]
    )
    assert list(table.columns[:3]) == ["slot", "model", "accuracy (95% CI)"]
    assert table[["slot", "accuracy", "n_items"]].values.tolist() == [
        ["baselines.first_option", 0.0, 4], ["model", 0.625, 4]]  # fmt: skip
    assert '"type": "table"' in parent.data.tags["mlflow.loggedArtifacts"]

    child = MlflowClient().get_run(_children(tmp_path)["run_id"].iloc[0])
    assert not [k for k in child.data.params if k.startswith("package.")]
    assert child.data.tags["packages"] == "dvc==3.67.1 mlflow==3.17.2"
    assert {"model.id", "prompt.style"} <= set(child.data.params)

    import mlflow  # the sweep-level cultureqa/results: one run per cell, re-tracking updates it

    rows = mlflow.search_runs(experiment_names=["cultureqa/results"], order_by=["params.slot"])
    assert rows[["params.slot", "params.dvc_experiment", "metrics.accuracy"]].values.tolist() == [
        ["baselines.first_option", "exp-a", 0.0], ["model", "exp-a", 0.625]]  # fmt: skip
    assert rows["metrics.ci_low"].tolist()[1] == got["indoculture.accuracy.ci_low"]
    assert set(rows["tags.mlflow.runName"]) == {"random · plain · indoculture",
                                                "first-option · plain · indoculture"}  # fmt: skip


def test_logged_metrics_keep_four_significant_digits() -> None:
    from cultureqa.runs.parent_summary import rounded

    assert rounded(0.28107922931825335) == 0.2811
    assert rounded(0.000123456) == 0.0001235  # small costs keep their digits
    assert rounded(123456.0) == 123456.0 and rounded(1234.5678) == 1235.0
    assert rounded(float("nan")) != rounded(float("nan"))  # NaN passes through


def test_every_experiment_says_on_mlflows_home_page_where_its_numbers_are(tmp_path: Path) -> None:
    """The description MLflow's home page shows: the results experiment first; a user's is kept."""
    from mlflow import MlflowClient

    from cultureqa.runs.tracking import NOTE, configure

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    first = configure(tmp_path, "cultureqa/indoculture")
    note = client.get_experiment(first).tags[NOTE]
    assert note.startswith("Sweep table: cultureqa/results → Evaluation runs"), note
    assert '"Model training"' in note
    client.set_experiment_tag(first, NOTE, "Sweep table: an older wording")
    assert configure(tmp_path, "cultureqa/indoculture") == first
    assert client.get_experiment(first).tags[NOTE] == note  # the project's own: updated
    client.set_experiment_tag(first, NOTE, "my own notes")
    configure(tmp_path, "cultureqa/indoculture")
    assert client.get_experiment(first).tags[NOTE] == "my own notes"  # the user's: kept
    results = configure(tmp_path, "cultureqa/results")
    assert NOTE not in client.get_experiment(results).tags  # written with its rows instead
