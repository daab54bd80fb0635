"""Promises kept: DVC outputs hash the same however often, where and in which commit they are made.

``dvc.lock`` records every output's hash, so a field that depends on the run (latency, whether a
reply came from the store, call counts, git revision, experiment name, MLflow run ids) would leave
a fresh clone's ``dvc repro`` with a modified ``dvc.lock`` and ``git.dirty=True`` in every MLflow
run. These tests produce the outputs twice under different run conditions and compare bytes.
"""

from __future__ import annotations

import hashlib
import json
import runpy
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.core.config import run_stage
from cultureqa.core.runlog import read_run, runlog_dir

ROOT = Path(__file__).resolve().parents[1]
ENTRY = ["--benchmark", "indoculture", "--model", "baselines.random"]
TRACK = ["--only", "indoculture/baselines.random"]
OUT = Path("data/eval/indoculture/baselines.random")
MARKER = Path("data/track/indoculture/baselines.random.json")


def _run(name: str, argv: list[str]) -> int:
    main: Callable[[list[str]], int] = runpy.run_path(
        str(ROOT / "stages" / f"{name}.py"), run_name="stage"
    )["main"]
    return run_stage(lambda: main(argv))


def _digest(*paths: Path) -> dict[str, str]:
    return {str(p): hashlib.md5(p.read_bytes(), usedforsecurity=False).hexdigest() for p in paths}


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for folder in ("prompts", "expectations", "data/sources", "data/knowledge"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    params = OmegaConf.load(ROOT / "params.yaml")
    params.evaluate.progress = False
    OmegaConf.save(params, tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / ".cultureqa"))
    return tmp_path


def test_outputs_hash_the_same_on_a_fresh_run_and_a_rerun_in_another_experiment(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = (OUT / "predictions.parquet", OUT / "run.json")
    assert _run("evaluate", ENTRY) == 0  # fresh
    first = _digest(*outputs)
    _, fresh = read_run(OUT)
    assert fresh["provenance"]["git"].keys() == {"commit", "dirty"}
    monkeypatch.setenv("DVC_EXP_NAME", "other-experiment")
    assert _run("evaluate", ENTRY) == 0  # rerun: the baseline answers again, identically
    assert _digest(*outputs) == first
    predictions, rerun = read_run(OUT)
    # a baseline calls no model and stores nothing (issue 33): no calls, nothing from the store
    assert fresh["model_calls"] == rerun["model_calls"] == 0
    assert not predictions["cached"].any()
    assert rerun["provenance"]["dvc_exp_name"] == "other-experiment"
    stable = json.loads((OUT / "run.json").read_text())
    assert "model_calls" not in stable and "git" not in stable["provenance"]
    assert "latency_s" not in pd.read_parquet(outputs[0]).columns


def test_track_marker_holds_no_run_ids(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run("evaluate", ENTRY) == 0
    assert _run("track", TRACK) == 0
    first = MARKER.read_bytes()
    ids_first = json.loads((runlog_dir(MARKER.parent) / MARKER.name).read_text())["run_ids"]
    monkeypatch.setenv("DVC_EXP_NAME", "another-exp")  # re-tracked there: replaced, new run ids
    assert _run("track", TRACK) == 0
    ids_second = json.loads((runlog_dir(MARKER.parent) / MARKER.name).read_text())["run_ids"]
    assert MARKER.read_bytes() == first
    assert set(ids_first) == set(ids_second) and ids_first != ids_second


def test_a_missing_or_foreign_run_log_is_reported_not_guessed(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert _run("evaluate", ENTRY) == 0
    side = runlog_dir(OUT)
    record = json.loads((side / "run.json").read_text())
    record["predictions_md5"] = "0" * 32
    (side / "run.json").write_text(json.dumps(record))
    predictions, run = read_run(OUT)
    assert "belongs to other predictions" in run["runlog"]
    assert predictions["latency_s"].isna().all() and run["provenance"]["git"]["commit"] is None
    _, run = read_run(OUT, ROOT)  # restored outputs: deps hash the same, so the code is HEAD's
    assert run["provenance"]["git"]["commit"] and "read at tracking time" in run["runlog"]
    shutil.rmtree(workspace / ".runlog")
    _, run = read_run(OUT)
    assert "no run log" in run["runlog"] and "no run log" in caplog.text
    assert _run("track", TRACK) == 0  # still logged to MLflow, with the gap recorded


def test_git_dirty_ignores_the_pipeline_records_only(tmp_path: Path) -> None:
    """DVC deletes a running stage's metrics and rewrites dvc.lock: not a dirty checkout."""
    import subprocess

    from cultureqa.core.provenance import git_revision

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "m.json").write_text("{}")
    (tmp_path / "dvc.lock").write_text("a")
    (tmp_path / "conf.yaml").write_text("a")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    (tmp_path / "metrics" / "m.json").unlink()
    (tmp_path / "dvc.lock").write_text("b")
    assert git_revision(tmp_path)["dirty"] is False
    (tmp_path / "conf.yaml").write_text("b")
    assert git_revision(tmp_path)["dirty"] is True
