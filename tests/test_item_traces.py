"""Per-item traces of a result run: one per prediction row, with gold and correct as assessments.

Logged into a fresh sqlite store; re-tracking the same predictions writes nothing, new predictions
replace the run's traces (and say how many were removed).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.runs.item_traces import ITEMS_TAG, item_record, log_item_traces


def _predictions(correct: list[bool]) -> pd.DataFrame:
    n = len(correct)
    return pd.DataFrame({
        "item_id": [f"i{k}" for k in range(n)], "setting": "mcq-en", "language": "en",
        "gold": "A", "pred": ["A" if c else "B" for c in correct], "raw": "answer: x",
        "correct": correct, "status": "ok", "error": "",
        "scores": "[-1.0, -2.0]", "score_normalisation": "sum",
    })  # fmt: skip


def test_a_mocqa_row_keeps_clue_type_and_both_hops() -> None:
    row = {"item_id": "s1.temporal.en", "clue_type": "temporal", "language": "en", "gold": "C",
           "answer_pred": "A", "province_pred": "Aceh", "province_correct": "True",
           "correct": "False", "raw": "", "scores": '{"answer": [-1.0]}'}  # fmt: skip
    name, request, response = item_record(row)
    assert name == "s1.temporal.en · temporal · en"
    assert request == {"item": "s1.temporal.en", "language": "en", "clue_type": "temporal",
                       "gold": "C"}  # fmt: skip
    assert response["parsed_answer"] == "A" and response["correct"] is False
    assert response["first_hop_correct"] is True and response["scores"] == {"answer": [-1.0]}


@pytest.mark.timeout(300)
def test_one_trace_per_row_idempotent_and_replaced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import mlflow
    from mlflow import MlflowClient

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = mlflow.create_experiment("t", (tmp_path / "art").as_uri())
    run = MlflowClient().create_run(experiment).info.run_id
    tags = {"benchmark": "indoculture", "slot": "model", "prompt": "zero_shot"}
    first = _predictions([True, False, True])
    assert log_item_traces(experiment, run, first, tags, "md5-a") == 3
    traces = mlflow.search_traces(locations=[experiment], run_id=run, return_type="list")
    assert len(traces) == 3
    by_item = {t.info.tags["item"]: t for t in traces}
    assessed = {a.name: a.value for a in by_item["i1"].info.assessments}
    assert assessed == {"gold": "A", "correct": False}
    assert by_item["i1"].info.tags["correct"] == "False"
    assert by_item["i1"].data.spans[0].outputs["parsed_answer"] == "B"
    assert MlflowClient().get_run(run).data.tags[ITEMS_TAG] == "md5-a"

    assert log_item_traces(experiment, run, first, tags, "md5-a") == 0  # same predictions
    assert len(mlflow.search_traces(locations=[experiment], run_id=run, return_type="list")) == 3

    with caplog.at_level(logging.INFO, logger="cultureqa.runs.item_traces"):
        assert log_item_traces(experiment, run, _predictions([False, False]), tags, "md5-b") == 2
    assert "removed 3 item traces" in caplog.text
    again = mlflow.search_traces(locations=[experiment], run_id=run, return_type="list")
    assert sorted(t.info.tags["correct"] for t in again) == ["False", "False"]


@pytest.mark.timeout(300)
def test_a_family_experiment_holds_its_items_on_each_setting_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MLflow opens every experiment on its trace overview: the family's own lands on its items."""
    import mlflow

    from cultureqa.runs.mlflow_home import landing_gaps
    from cultureqa.runs.tracking import DatasetRef, evaluation_metrics, log_runs

    monkeypatch.chdir(tmp_path)
    preds = pd.concat([_predictions([True, False]),
                       _predictions([True, True, False]).assign(setting="mcq-id")])  # fmt: skip
    preds = preds.assign(benchmark="indoculture", model="m", prompt_tokens=1,
                         completion_tokens=1, cost_usd=0.0)  # fmt: skip
    provenance = {"git": {"commit": "c", "dirty": False}, "packages": {}, "dvc_exp_name": None}
    run = {"benchmark": "indoculture", "roster_entry": "model", "model": {"id": "m"},
           "prompt": "zero_shot", "templates": {}, "api": {}, "provenance": provenance}  # fmt: skip
    dataset = DatasetRef("indoculture", "0" * 32, "data/sources/indoculture.jsonl")
    runs = log_runs(tmp_path, "cultureqa/indoculture", run, preds, "setting",
                    lambda p: evaluation_metrics(p, []), lambda _: dataset)  # fmt: skip
    family = mlflow.get_experiment_by_name("cultureqa/indoculture").experiment_id
    for setting, count in (("mcq-en", 2), ("mcq-id", 3)):
        found = mlflow.search_traces(locations=[family], run_id=runs[setting], return_type="list")
        assert len(found) == count
        assert {t.info.tags["setting"] for t in found} == {setting}
    assert set(landing_gaps()) == {"Default"}  # results and the family land on their items
