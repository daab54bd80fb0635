"""Spend once, stop early, say why (issue 16, items 2 and 3), proven on the fake server's log.

Stages run as separate processes, as DVC runs them; ``dvc repro`` itself is killed in one test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cultureqa.core.runlock import output_lock, stage_guard
from cultureqa.core.runlog import runlog_dir
from cultureqa.testing import FakeOpenAIServer, FaultPlan
from cultureqa.testing.workspace import hold_output_lock, make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[1]
EVALUATE = [sys.executable, str(ROOT / "stages" / "evaluate.py"), "--benchmark", "synthetic"]
FAST_RETRY = {"attempts": 4, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 2.0}
OUT = Path("data/eval/synthetic/model")


def _env(ws: Path, **extra: str) -> dict[str, str]:
    return {**stage_env(ws), "PYTHONPATH": str(ROOT / "src"), **extra}


def _run_record(ws: Path) -> dict[str, Any]:
    """run.json with its run log (calls, retries, leases) joined back, as tracking reads it."""
    return json.loads((runlog_dir(ws / OUT, ws) / "run.json").read_text()) | json.loads(
        (ws / OUT / "run.json").read_text()
    )


def _evaluate(ws: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EVALUATE, "--model", "model"],
        cwd=ws,
        env=_env(ws, **extra),
        capture_output=True,
        text=True,
    )


def _prompts(server: FakeOpenAIServer) -> Counter[str]:
    return Counter(json.dumps(r.messages, sort_keys=True) for r in server.records)


def _wait_for(condition: object, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while not condition() and time.time() < deadline:  # type: ignore[operator]
        time.sleep(0.05)


def _lock_free(ws: Path) -> bool:
    try:
        with output_lock(ws / OUT):
            return True
    except RuntimeError:
        return False


# --- 1. spend once -----------------------------------------------------------------------------


def test_a_live_writer_is_refused_with_its_pid(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        ws = make_api_workspace(ROOT, tmp_path / "ws", 6, server.api_base, 2, retry=FAST_RETRY)
        holder = hold_output_lock(ws / OUT, _env(ws))
        try:
            done = _evaluate(ws)
        finally:
            holder.kill()
            holder.wait()
        sent = server.hits
    assert done.returncode == 2
    assert f"is being written by PID {holder.pid}; wait or kill it" in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert sent == 0


def test_a_lock_left_by_a_killed_process_is_taken_over_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outputs = tmp_path / "out"
    holder = hold_output_lock(outputs, _env(tmp_path))
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with caplog.at_level("WARNING"), output_lock(outputs) as info:
        assert info.took_over_from == holder.pid
    assert f"left by PID {holder.pid}, which is no longer running" in caplog.text
    with output_lock(outputs) as clean:  # a clean release leaves nothing to take over
        assert clean.took_over_from is None


def test_the_guard_leaves_the_callers_signal_handlers_as_it_found_them(tmp_path: Path) -> None:
    """Stages also run inside test processes: the graceful-stop handlers must not leak."""
    before = signal.getsignal(signal.SIGINT)
    with stage_guard(tmp_path / "out"):
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before


def _dvc_workspace(ws: Path) -> None:
    cmd = f"{sys.executable} {ROOT / 'stages' / 'evaluate.py'} --benchmark synthetic --model model"
    (ws / "dvc.yaml").write_text(
        textwrap.dedent(
            f"""\
            stages:
              evaluate:
                cmd: {cmd}
                outs:
                  - {OUT}
            """
        )
    )
    subprocess.run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], cwd=ws, check=True)


def test_killing_dvc_repro_stops_the_stage_and_the_rerun_sends_each_prompt_once(
    tmp_path: Path,
) -> None:
    n = 160
    with FakeOpenAIServer(latency_s=0.05) as server:
        ws = make_api_workspace(ROOT, tmp_path / "ws", n, server.api_base, 4, retry=FAST_RETRY)
        _dvc_workspace(ws)
        env = _env(ws, DVC_NO_ANALYTICS="1")
        repro = [sys.executable, "-m", "dvc", "repro", "-q"]
        dvc = subprocess.Popen(
            repro, cwd=ws, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _wait_for(lambda: server.hits >= 30)
        dvc.send_signal(signal.SIGKILL)  # dvc only: the stage is its (grand)child
        dvc.wait()
        _wait_for(lambda: _lock_free(ws), timeout=30)
        assert _lock_free(ws), "the stage outlived the dvc repro that started it"
        first = server.hits
        assert 30 <= first < n
        again = subprocess.run(repro, cwd=ws, env=env, capture_output=True, text=True)
        prompts = _prompts(server)
    assert again.returncode == 0, again.stdout + again.stderr
    assert max(prompts.values()) == 1, "a prompt was sent twice"
    assert sum(prompts.values()) == n
    assert _run_record(ws)["model_calls"] == n - first


_WORKER = """
import asyncio, json, sys, time
from pathlib import Path
from cultureqa.llm.base import GenerateRequest, Message
from cultureqa.llm.cached import CachedClient
from cultureqa.llm.api.chat_client import ChatClient, ChatConfig
from cultureqa.llm.api.retry import RetryConfig
from cultureqa.llm.store import open_store

api_base, store_path, go, n = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
client = ChatClient(ChatConfig(model_id="m", litellm_model="openai/m", api_base=api_base,
    concurrency=8, ramp_up_s=0, retry=RetryConfig(attempts=3, initial_wait_s=0.01, timeout_s=5)))
client.transport.lib()  # the import takes seconds: load it before the start line
store = open_store(store_path)
cached = CachedClient(client, store, {"m": "m"}, poll_s=0.05)
requests = [GenerateRequest((Message("user", f"prompt {i}"),)) for i in range(n)]
print("ready", flush=True)
while not go.exists():
    time.sleep(0.01)
out = asyncio.run(cached.generate(requests))
store.close()
print(json.dumps({"ok": sum(r.status == "ok" for r in out), "sent": cached.stats.sent,
                  "elsewhere": cached.stats.answered_elsewhere}), flush=True)
"""


def test_two_workers_on_one_store_send_each_prompt_once(tmp_path: Path) -> None:
    # 200 prompts: both workers contend for every one (the same order, 8 in flight each); a
    # claim that is not one write transaction (BEGIN DEFERRED) or that ignores another's live
    # lease fails this at 200 as at 800, which cost 4 CPU s more in two litellm processes
    n = 200
    go = tmp_path / "go"
    store_go_n = [str(tmp_path / "s.sqlite"), str(go), str(n)]
    with FakeOpenAIServer(latency_s=0.02, responder=lambda m: "B") as server:
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", _WORKER, server.api_base, *store_go_n],
                env=_env(tmp_path),
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        for w in workers:
            assert w.stdout is not None and w.stdout.readline().strip() == "ready"
        go.touch()
        reports = [json.loads(w.communicate(timeout=240)[0]) for w in workers]
        prompts = _prompts(server)
    assert [r["ok"] for r in reports] == [n, n]
    assert len(prompts) == n and max(prompts.values()) == 1
    assert sum(r["sent"] for r in reports) == n
    assert all(r["sent"] > 0 for r in reports), reports  # the work was split, not serialised


def test_a_writer_on_another_store_is_refused_naming_both_stores(tmp_path: Path) -> None:
    """The lock lives beside the output: a different CULTUREQA_STATE_DIR does not get past it."""
    with FakeOpenAIServer() as server:
        ws = make_api_workspace(ROOT, tmp_path / "ws", 6, server.api_base, 2, retry=FAST_RETRY)
        theirs = tmp_path / "state-a" / "responses.sqlite"
        holder = hold_output_lock(ws / OUT, _env(ws), store=theirs)
        try:
            done = _evaluate(ws, CULTUREQA_STATE_DIR=str(tmp_path / "state-b"))
        finally:
            holder.kill()
            holder.wait()
        sent = server.hits
    assert done.returncode == 2 and sent == 0
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert f"is being written by PID {holder.pid} with response store {theirs.resolve()}" in (
        done.stderr
    )
    assert f"this run uses {(tmp_path / 'state-b' / 'responses.sqlite').resolve()}" in done.stderr


def test_two_runs_differing_only_in_their_state_dir_pay_once(tmp_path: Path) -> None:
    """Both write one output; before, each store's leases were blind to the other's: 2 × n paid."""
    n = 24
    with FakeOpenAIServer(latency_s=0.5) as server:  # the first run takes ~6 s
        ws = make_api_workspace(ROOT, tmp_path / "ws", n, server.api_base, 2, retry=FAST_RETRY)
        first = subprocess.Popen(
            [*EVALUATE, "--model", "model"], cwd=ws, text=True, stderr=subprocess.PIPE,
            stdout=subprocess.PIPE, env=_env(ws, CULTUREQA_STATE_DIR=str(tmp_path / "a")),
        )  # fmt: skip
        _wait_for(lambda: server.hits > 0)
        second = _evaluate(ws, CULTUREQA_STATE_DIR=str(tmp_path / "b"))
        overlapped = first.poll() is None
        first.communicate(timeout=240)
        prompts = _prompts(server)
    assert overlapped and first.returncode == 0
    assert second.returncode == 2 and "is being written by PID" in second.stderr
    assert len(prompts) == n and max(prompts.values()) == 1  # each prompt paid once


# --- 2. stop early, say why --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "cause", "fix"),
    [
        (400, "HTTP 400", "check options.litellm_model, options.extra_params"),
        (401, "Incorrect API key provided", "set a valid key in CULTUREQA_TEST_KEY"),
        (404, "The model does not exist", "check options.litellm_model and options.api_base"),
    ],
)
def test_a_server_failing_every_request_stops_the_run_with_the_cause(
    tmp_path: Path, status: int, cause: str, fix: str
) -> None:
    n = 300
    with FakeOpenAIServer(faults=FaultPlan(fail_status=status)) as server:
        ws = make_api_workspace(
            ROOT,
            tmp_path / "ws",
            n,
            server.api_base,
            8,
            api_key_env="CULTUREQA_TEST_KEY",
            retry=FAST_RETRY,
        )
        done = _evaluate(ws, CULTUREQA_TEST_KEY="sk-test-key-123", CULTUREQA_LOG_LEVEL="INFO")
        sent = server.hits
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: api-model: stopped after 10 consecutive failures")
    assert cause in last and f"fix: {fix}" in last
    assert sent <= 30, f"{sent} requests sent to a server that refuses them all"
    assert len(done.stderr.splitlines()) < 10, done.stderr  # litellm's INFO chatter stays out
    run = _run_record(ws)
    assert run["api"]["client"]["sent"] == sent
    assert run["api"]["client"]["not_sent"] == n - sent
    assert run["api"]["client"]["stopped"] in last


def test_refused_connections_stop_the_run(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        closed = server.api_base  # nothing listens here once the server is gone
    ws = make_api_workspace(ROOT, tmp_path / "ws", 200, closed, 8, retry=FAST_RETRY)
    done = _evaluate(ws)
    assert done.returncode == 2
    assert "(no connection)" in done.stderr and "start the server or fix options.api_base" in (
        done.stderr
    )
    client = _run_record(ws)["api"]["client"]
    assert client["sent"] <= 40 and client["not_sent"] >= 160
    assert client["retries"] > 0  # refused connections are retried per item until the trip


def test_an_unset_api_key_env_is_one_line_and_zero_requests(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        ws = make_api_workspace(
            ROOT, tmp_path / "ws", 20, server.api_base, 4, api_key_env="CULTUREQA_UNSET_KEY"
        )
        env = _env(ws)
        env.pop("CULTUREQA_UNSET_KEY", None)
        done = subprocess.run(
            [*EVALUATE, "--model", "model"], cwd=ws, env=env, capture_output=True, text=True
        )
        sent = server.hits
    assert done.returncode == 2 and sent == 0
    assert done.stderr.splitlines() == [
        "error: model 'api-model': options.api_key_env names CULTUREQA_UNSET_KEY, which is not "
        "set; export CULTUREQA_UNSET_KEY (or set api_key_env: null for a server without keys)"
    ]
    assert not (ws / OUT / "predictions.parquet").exists()


def test_a_missing_provider_key_is_one_line_before_any_request(tmp_path: Path) -> None:
    ws = make_api_workspace(ROOT, tmp_path / "ws", 20, None, 4)  # type: ignore[arg-type]
    env = _env(ws)
    env.pop("OPENAI_API_KEY", None)
    done = subprocess.run(
        [*EVALUATE, "--model", "model"], cwd=ws, env=env, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: model 'api-model' (openai/api-model): OPENAI_API_KEY is not set; export it "
        "(or name the variable in options.api_key_env)"
    ]


def test_a_sigterm_finishes_requests_in_flight_and_sends_nothing_new(tmp_path: Path) -> None:
    n = 120
    with FakeOpenAIServer(latency_s=0.1) as server:
        ws = make_api_workspace(ROOT, tmp_path / "ws", n, server.api_base, 4, retry=FAST_RETRY)
        stage = subprocess.Popen(
            [*EVALUATE, "--model", "model"],
            cwd=ws,
            env=_env(ws),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_for(lambda: server.hits >= 12)
        os.kill(stage.pid, signal.SIGTERM)
        _, err = stage.communicate(timeout=60)
        first = server.hits
        time.sleep(0.3)
        assert server.hits == first  # nothing was left in flight
        again = _evaluate(ws)
        prompts = _prompts(server)
    assert stage.returncode == 130 and "a rerun sends only the rest" in err
    assert again.returncode == 0, again.stderr
    assert max(prompts.values()) == 1 and sum(prompts.values()) == n


def test_the_ledger_sums_every_client_of_a_job_and_keeps_the_first_stop(tmp_path: Path) -> None:
    """Build stages close many clients (revision rounds, judges): counters add up per job."""
    import asyncio

    from omegaconf import OmegaConf

    from cultureqa.core.spend import ApiLedger, ApiStopped, stopped_reason
    from cultureqa.llm.base import GenerateRequest, Message
    from cultureqa.llm.cached import CachedClient
    from cultureqa.llm.registry import build_model
    from cultureqa.llm.store import open_store

    cfg = OmegaConf.to_container(OmegaConf.load(ROOT / "params.yaml").baselines.random)
    built = build_model(cfg)  # type: ignore[arg-type]
    store = open_store(tmp_path / "s.sqlite")
    ledger = ApiLedger()
    requests = [GenerateRequest((Message("user", f"q {i}"),)) for i in range(5)]
    try:
        for _ in range(2):  # the second round is answered by the store
            client = CachedClient(built.client, store, built.identity, built.chunk_size)
            asyncio.run(client.generate(requests))
            ledger.record("generator", client)
    finally:
        store.close()
    assert ledger.jobs["generator"]["cache"]["sent"] == 5 == ledger.calls
    assert ledger.jobs["generator"]["cache"]["hits"] == 5
    assert ledger.stopped is None
    ledger.jobs["judge_a"] = {"cache": {}, "client": {"sent": 10, "stopped": "judge: HTTP 401"}}
    assert stopped_reason(ledger.jobs) == "judge: HTTP 401"
    with pytest.raises(ApiStopped, match="judge: HTTP 401"):
        ledger.raise_if_stopped()
