"""Spend once on the cross-cultural stages (issue 16): output lock, circuit breaker, API counters.

The build runs offline (sample items); the evaluated model and the constructing model are served
by the fake OpenAI-compatible server. Stages run in-process as DVC runs them (cwd = workspace);
the lock holder is a separate process, since a lock is refused only to another process.
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from cultureqa.core.config import run_stage
from cultureqa.core.runlog import read_run, runlog_dir
from cultureqa.core.spend import API_LOG
from cultureqa.testing import FakeOpenAIServer, FaultPlan
from cultureqa.testing.workspace import hold_output_lock

ROOT = Path(__file__).resolve().parents[2]
BUILD = ("cases_ingest", "cases_weird", "cases_annotate", "cases_construct", "cases_shuffle")
OUT = Path("data/eval/cases/fake_llm")
FAST_RETRY = {"attempts": 3, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 5.0}
ITEMS = 79 * 2  # 79 sample items × 2 shuffle seeds


def _stage(name: str) -> Callable[..., int]:
    return runpy.run_path(str(ROOT / "stages" / f"{name}.py"), run_name="stage")["main"]  # type: ignore[no-any-return]


def _fake_llm(api_base: str, key_env: str | None = None) -> dict[str, Any]:
    return {
        "id": "fake-llm", "backend": "litellm", "batch_size": 1, "concurrency": 8,
        "decoding": {"temperature": 0.0, "max_tokens": 64, "seed": None},
        "options": {"litellm_model": "openai/fake-llm", "api_base": api_base,
                    "api_key_env": key_env, "drop_params": True},
        "retry": FAST_RETRY, "price": None,
    }  # fmt: skip


def _set(ws: Path, **values: Any) -> None:
    params = OmegaConf.load(ws / "params.yaml")
    for key, value in values.items():
        OmegaConf.update(params, key.replace("__", "."), value, merge=False)
    OmegaConf.save(params, ws / "params.yaml")


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace whose shuffled items exist (offline build), ready for cases_evaluate."""
    for folder in ("prompts", "expectations", "data/sources", "data/knowledge", "conf/cases"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    group = OmegaConf.load(ROOT / "conf" / "cases" / "default.yaml")
    group.pop("defaults")  # type: ignore[arg-type]
    params = OmegaConf.merge(OmegaConf.load(ROOT / "params.yaml"), {"cases": group})
    OmegaConf.update(params, "cases.evaluate.progress", False)
    OmegaConf.update(params, "cases.evaluate.limit", None)  # every item of both seeds
    OmegaConf.resolve(params)
    OmegaConf.save(params, tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / ".cultureqa"))
    for name in BUILD:
        assert _stage(name)() == 0, name
    return tmp_path


def test_a_live_holder_of_the_lock_is_refused_with_its_pid(
    built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer() as server:
        _set(built, fake_llm=_fake_llm(server.api_base))
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        holder = hold_output_lock(built / OUT, env)
        capsys.readouterr()
        try:
            rc = run_stage(lambda: _stage("cases_evaluate")(["--model", "fake_llm"]))
        finally:
            holder.kill()
            holder.wait()
        sent = server.hits
    err = capsys.readouterr().err
    assert rc == 2 and sent == 0
    assert err.startswith("error: ") and f"is being written by PID {holder.pid}" in err
    assert not (built / OUT / "predictions.parquet").exists()


def test_a_server_refusing_the_key_stops_the_run_with_the_cause(
    built: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CULTUREQA_TEST_KEY", "sk-test-key-123")
    with FakeOpenAIServer(faults=FaultPlan(fail_status=401)) as server:
        _set(built, fake_llm=_fake_llm(server.api_base, "CULTUREQA_TEST_KEY"))
        capsys.readouterr()
        rc = run_stage(lambda: _stage("cases_evaluate")(["--model", "fake_llm"]))
        sent = server.hits
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err[-1].startswith("error: fake-llm: stopped after 10 consecutive failures (HTTP 401)")
    assert "fix: set a valid key in CULTUREQA_TEST_KEY" in err[-1]
    assert not any("no usable answer" in line for line in err)  # the cause, not the error share
    assert sent <= 30, f"{sent} requests sent to a server that refuses them all"
    client = read_run(built / OUT)[1]["api"]["client"]
    assert (client["sent"], client["not_sent"]) == (sent, ITEMS - sent)
    assert client["stopped"] in err[-1]


def test_api_counters_reach_the_run_record_through_the_run_log(built: Path) -> None:
    with FakeOpenAIServer(responder=lambda m: '{"selection": "C"}') as server:
        _set(built, fake_llm=_fake_llm(server.api_base))
        assert _stage("cases_evaluate")(["--model", "fake_llm"]) == 0
        first = read_run(built / OUT)[1]["api"]
        assert _stage("cases_evaluate")(["--model", "fake_llm"]) == 0  # from the store
        rerun = read_run(built / OUT)[1]["api"]
        sent = server.hits
    assert sent == ITEMS
    assert first["client"]["sent"] == first["cache"]["sent"] == ITEMS
    assert first["client"]["stopped"] is None and first["lock_taken_over_from_pid"] is None
    assert rerun["cache"]["hits"] == ITEMS and rerun["client"]["sent"] == 0
    assert "api" not in json.loads((built / OUT / "run.json").read_text())  # volatile: run log


def test_construction_stops_on_a_refused_key_and_logs_its_counters(
    built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refused key is one line (rc 2), not "100% of cases yielded no valid item" (rc 1)."""
    out = built / "data/build/cases/construct"
    before = (out / "items.parquet").read_bytes()
    with FakeOpenAIServer(faults=FaultPlan(fail_status=401)) as server:
        _set(built, cases__construct__model=_fake_llm(server.api_base))
        capsys.readouterr()
        rc = run_stage(_stage("cases_construct"))
        sent = server.hits
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err[-1].startswith("error: fake-llm: stopped after 10 consecutive")
    assert not any("yielded no valid item" in line for line in err)
    assert sent <= 30
    assert (out / "items.parquet").read_bytes() == before  # the offline build is left intact
    logged = json.loads((runlog_dir(out) / API_LOG).read_text())
    client = logged["api"]["fake-llm"]["client"]
    assert client["sent"] == sent and client["not_sent"] > 0 and client["stopped"] in err[-1]
    assert logged["model_calls"] == sent < logged["api"]["fake-llm"]["cache"]["sent"]  # requests
