"""Tracking helpers: stable metric names and the running experiment's name."""

from __future__ import annotations

import pytest

from cultureqa.tracking import current_exp_name, flatten_params, metric_key


def test_metric_keys_are_stable_and_mlflow_safe() -> None:
    assert metric_key("acc", "province", "East Nusa Tenggara", True) == (
        "acc.province.East Nusa Tenggara.True"
    )
    assert metric_key("acc", "topic", "Food & Beverages") == "acc.topic.Food _ Beverages"


def test_running_experiment_beats_the_recorded_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Restored from the run-cache, an evaluation carries an older experiment's name."""
    monkeypatch.setenv("DVC_EXP_NAME", "niffy-chic")
    assert current_exp_name({"dvc_exp_name": "random-as-model"}) == "niffy-chic"
    monkeypatch.delenv("DVC_EXP_NAME")
    assert current_exp_name({"dvc_exp_name": "random-as-model"}) == "random-as-model"


def test_flatten_params() -> None:
    flat = flatten_params("model", {"id": "x", "decoding": {"temperature": 0.0}, "l": [1]}, {})
    assert flat == {"model.id": "x", "model.decoding.temperature": "0.0", "model.l": "[1]"}


def test_numeric_leaves_flatten_build_counts() -> None:
    from cultureqa.tracking import numeric_leaves

    doc = {
        "input": 88,
        "kept": 71,
        "removed_by_reason": {"not province-specific": 17},
        "ok": True,
        "origin": "data/sources/x.csv",
        "by_clue": {"entity.en": 71},
    }
    assert numeric_leaves("ingest", doc, {}) == {
        "ingest.input": 88.0,
        "ingest.kept": 71.0,
        "ingest.removed_by_reason.not province-specific": 17.0,
        "ingest.ok": 1.0,
        "ingest.by_clue.entity.en": 71.0,
    }
