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
