"""Spend once on ID-MoCQA evaluation (issue 16): output lock, circuit breaker, API counters.

The stage runs in-process as DVC would run it (cwd = workspace); the lock holder is a separate
process, since a lock is refused only to another process.
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.core.config import run_stage
from cultureqa.core.runlog import read_run
from cultureqa.testing import FakeOpenAIServer, FaultPlan
from cultureqa.testing.workspace import hold_output_lock

ROOT = Path(__file__).resolve().parents[2]
DATASET = "data/build/twohop/indonesia/dataset.parquet"
OUT = Path("data/eval/mocqa/model/zero_shot")
FAST_RETRY = {"attempts": 3, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 5.0}
ARGS = ["--model", "model", "--prompt", "zero_shot"]


def _main() -> Callable[[list[str]], int]:
    stage = runpy.run_path(str(ROOT / "stages" / "mocqa_evaluate.py"), run_name="stage")
    return stage["main"]  # type: ignore[no-any-return]


def _workspace(ws: Path, dataset: pd.DataFrame, api_base: str, key_env: str | None) -> None:
    shutil.copytree(ROOT / "prompts", ws / "prompts")
    shutil.copytree(ROOT / "data" / "knowledge", ws / "data" / "knowledge")
    (ws / DATASET).parent.mkdir(parents=True)
    dataset.to_parquet(ws / DATASET, index=False)
    params = OmegaConf.load(ROOT / "params.yaml")
    params.evaluate.progress = False
    params.mocqa_eval = OmegaConf.load(ROOT / "conf" / "mocqa_eval" / "default.yaml")
    params.mocqa_eval.limit = None  # every item: what a stopped run did not send is counted
    params.model = {
        "id": "api-model", "backend": "litellm", "batch_size": 1, "concurrency": 8,
        "decoding": {"temperature": 0.0, "max_tokens": 16, "seed": None},
        "options": {"litellm_model": "openai/api-model", "api_base": api_base,
                    "api_key_env": key_env, "drop_params": True},
        "retry": FAST_RETRY, "price": {"input_per_token": 1e-7, "output_per_token": 2e-7},
    }  # fmt: skip
    resolved = OmegaConf.create(OmegaConf.to_container(params, resolve=True))
    OmegaConf.save(resolved, ws / "params.yaml")


@pytest.fixture
def in_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / ".cultureqa"))
    return tmp_path


def test_a_live_holder_of_the_lock_is_refused_with_its_pid(
    in_workspace: Path,
    make_dataset: Callable[..., pd.DataFrame],
    capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeOpenAIServer() as server:
        _workspace(in_workspace, make_dataset(2), server.api_base, None)
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        holder = hold_output_lock(in_workspace / OUT, env)
        try:
            rc = run_stage(lambda: _main()(ARGS))
        finally:
            holder.kill()
            holder.wait()
        sent = server.hits
    err = capsys.readouterr().err
    assert rc == 2 and sent == 0
    assert err.startswith("error: ") and f"is being written by PID {holder.pid}" in err
    assert not (in_workspace / OUT / "predictions.parquet").exists()


def test_a_server_refusing_the_key_stops_the_run_with_the_cause(
    in_workspace: Path,
    make_dataset: Callable[..., pd.DataFrame],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dataset = make_dataset(25)  # 300 items
    monkeypatch.setenv("CULTUREQA_TEST_KEY", "sk-test-key-123")
    with FakeOpenAIServer(faults=FaultPlan(fail_status=401)) as server:
        _workspace(in_workspace, dataset, server.api_base, "CULTUREQA_TEST_KEY")
        rc = run_stage(lambda: _main()(ARGS))
        sent = server.hits
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err[-1].startswith("error: api-model: stopped after 10 consecutive failures (HTTP 401)")
    assert "fix: set a valid key in CULTUREQA_TEST_KEY" in err[-1]
    assert not any("no usable answer" in line for line in err)  # the cause, not the error share
    assert sent <= 30, f"{sent} requests sent to a server that refuses them all"
    _, run = read_run(in_workspace / OUT)
    assert run["api"]["client"]["sent"] == sent
    assert run["api"]["client"]["not_sent"] == len(dataset) - sent
    assert run["api"]["client"]["stopped"] in err[-1]


def test_api_counters_reach_the_run_record_through_the_run_log(
    in_workspace: Path, make_dataset: Callable[..., pd.DataFrame]
) -> None:
    dataset = make_dataset(2)
    with FakeOpenAIServer(responder=lambda m: '{"province": "Aceh", "answer": "A"}') as server:
        _workspace(in_workspace, dataset, server.api_base, None)
        assert _main()(ARGS) == 0
        first = read_run(in_workspace / OUT)[1]
        assert _main()(ARGS) == 0  # the rerun answers from the store
        rerun = read_run(in_workspace / OUT)[1]
        sent = server.hits
    assert sent == len(dataset)
    assert first["api"]["client"]["sent"] == first["api"]["cache"]["sent"] == len(dataset)
    assert first["api"]["client"]["retries"] == 0 and first["api"]["client"]["stopped"] is None
    assert rerun["api"]["cache"]["hits"] == len(dataset) and rerun["api"]["client"]["sent"] == 0
    assert "api" not in json.loads((in_workspace / OUT / "run.json").read_text())  # volatile
