"""MLflow logging against a real (temporary) store: one run per result, dataset input, counters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.tracking import benchmark_dataset, evaluation_metrics, log_runs

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


def _runs(root: Path) -> pd.DataFrame:
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    return mlflow.search_runs(experiment_names=[EXPERIMENT])


def test_retracking_keeps_one_run_per_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    monkeypatch.setenv("DVC_EXP_NAME", "first-exp")
    preds = _predictions([True, False, True, True])
    first = log_evaluation(tmp_path, EXPERIMENT, _run_info(), preds, [])
    assert log_evaluation(tmp_path, EXPERIMENT, _run_info(), preds, []) == first  # skipped
    restored = preds.assign(latency_s=float("nan"))  # volatile columns are not the result
    assert log_evaluation(tmp_path, EXPERIMENT, _run_info(), restored, []) == first
    assert len(_runs(tmp_path)) == 1

    monkeypatch.setenv("DVC_EXP_NAME", "second-exp")  # same result, restored in another exp
    second = log_evaluation(tmp_path, EXPERIMENT, _run_info(), preds, [])
    runs = _runs(tmp_path)
    assert second != first and runs["run_id"].tolist() == [second["mcq_en"]]
    assert runs["tags.dvc.exp_name"].tolist() == ["second-exp"]

    changed = _predictions([False, False, True, True])  # a new result is a new run
    log_evaluation(tmp_path, EXPERIMENT, _run_info(), changed, [])
    assert len(_runs(tmp_path)) == 2

    run = MlflowClient().get_run(second["mcq_en"])
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
