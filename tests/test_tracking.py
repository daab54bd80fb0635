"""Tracking helpers: stable metric names, run names, and the group (DVC experiment) logging now."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cultureqa.runs.mlflow_runs import current_group
from cultureqa.runs.tracking import flatten_params, metric_key, run_name, slice_metrics


def test_metric_keys_are_stable_and_mlflow_safe() -> None:
    assert metric_key("acc", "province", "East Nusa Tenggara", True) == (
        "acc.province.East Nusa Tenggara.True"
    )
    assert metric_key("acc", "topic", "Food & Beverages") == "acc.topic.Food _ Beverages"


def test_the_group_is_the_running_experiment_or_the_workspace_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read at tracking time (a restored evaluation carries an older experiment's name)."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "params.yaml").write_text("a: 1\n")
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=tmp_path, check=True)
    (tmp_path / "params.yaml").write_text("a: 2\n")  # what `dvc exp run` does to params.yaml
    monkeypatch.setenv("DVC_EXP_NAME", "niffy-chic")
    group = current_group(tmp_path)
    assert (group.key, group.label) == ("exp:niffy-chic", "niffy-chic")
    assert group.tags["dvc.exp_name"] == "niffy-chic" and group.tags["git.dirty"] == "False"
    monkeypatch.delenv("DVC_EXP_NAME")
    group = current_group(tmp_path)
    assert group.key.startswith("workspace:") and group.label.startswith("workspace @ ")
    assert "dvc.exp_name" not in group.tags  # omitted, never the text "None"
    assert group.tags["git.dirty"] == "True"  # a hand edit outside an experiment counts


def test_run_names_say_what_differs() -> None:
    assert run_name("gemma3-270m", "model", "zero_shot", "mcq-none-id") == (
        "gemma3-270m · zero_shot · mcq-none-id"
    )
    # -S model=random: the model under test and the random baseline share an id
    assert run_name("random", "baselines.random", "", "seed 60") == (
        "random [baselines.random] · seed 60"
    )


def test_slice_metrics_sort_after_the_headline() -> None:
    import pandas as pd

    table = pd.DataFrame({"province": ["Bali"], "accuracy": [0.5], "n": [4]})
    names = sorted([*slice_metrics({"province": table}), "accuracy", "accuracy.ci_low", "n"])
    assert names[:2] == ["accuracy", "accuracy.ci_low"]
    assert names[-2:] == ["slice.acc.province.Bali", "slice.n.province.Bali"]


def test_flatten_params() -> None:
    flat = flatten_params("model", {"id": "x", "decoding": {"temperature": 0.0}, "l": [1]}, {})
    assert flat == {"model.id": "x", "model.decoding.temperature": "0.0", "model.l": "[1]"}


def test_numeric_leaves_flatten_build_counts() -> None:
    from cultureqa.runs.tracking import numeric_leaves

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
