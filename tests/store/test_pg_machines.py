"""Two machines on one PostgreSQL store, proven on the fake server's log (issue 32 item 2).

Each "machine" is a workspace of its own (its own folder, state folder and output lock) running
the real ``evaluate`` stage as DVC runs it, with ``CULTUREQA_STORE_URL`` naming one database on
a real server and ``CULTUREQA_MACHINE`` naming the machine in the send log.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from cultureqa.core.params_digest import digest
from cultureqa.core.runlog import runlog_dir
from cultureqa.llm.store import open_store
from cultureqa.llm.store.admin import report
from cultureqa.testing import FakeOpenAIServer
from cultureqa.testing.postgres import PgServer
from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[2]
EVALUATE = [sys.executable, str(ROOT / "stages" / "evaluate.py"), "--benchmark", "synthetic"]
OUT = Path("data/eval/synthetic/model")
RETRY = {"attempts": 3, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 10.0}


def _machine(tmp: Path, name: str, n: int, api_base: str, concurrency: int = 8) -> Path:
    return make_api_workspace(ROOT, tmp / name, n, api_base, concurrency, retry=RETRY)


def _env(ws: Path, url: str, machine: str, **extra: str) -> dict[str, str]:
    return {
        **stage_env(ws),
        "PYTHONPATH": str(ROOT / "src"),
        "CULTUREQA_STORE_URL": url,
        "CULTUREQA_MACHINE": machine,
        **extra,
    }


def _start(ws: Path, url: str, machine: str, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*EVALUATE, "--model", "model"],
        cwd=ws,
        env=_env(ws, url, machine, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _prompts(server: FakeOpenAIServer) -> Counter[str]:
    return Counter(json.dumps(r.messages, sort_keys=True) for r in server.records)


def _cache(ws: Path) -> dict[str, int]:
    record = json.loads((runlog_dir(ws / OUT, ws) / "run.json").read_text())
    return dict(record["api"]["cache"])


def _leases_of(url: str, pid: int) -> int:
    """Leases a worker process holds: its requests in flight (sent or about to be)."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT COUNT(*) FROM leases WHERE pid = %s", (pid,)).fetchone()
    return int(row[0]) if row else 0


def _wait_for(condition: object, timeout: float = 120.0) -> None:
    deadline = time.time() + timeout
    while not condition():  # type: ignore[operator]
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


def test_two_machines_on_overlapping_sweeps_send_each_prompt_once(
    tmp_path: Path, pg_url: str
) -> None:
    """Machine a evaluates 300 questions, b 450: the first 300 are shared, 450 are distinct."""
    with FakeOpenAIServer(latency_s=0.02, responder=lambda m: "B") as server:
        a = _machine(tmp_path, "a", 300, server.api_base)
        b = _machine(tmp_path, "b", 450, server.api_base)
        runs = [_start(a, pg_url, "machine-a"), _start(b, pg_url, "machine-b")]
        outs = [r.communicate(timeout=600) for r in runs]
        prompts = _prompts(server)
    for run, (out, err) in zip(runs, outs, strict=True):
        assert run.returncode == 0, out + err
    assert len(prompts) == 450 and max(prompts.values()) == 1, "a prompt was sent twice"
    rep = report(pg_url)
    assert rep.duplicates == 0 and rep.requests == 450 and rep.prompts == 450
    assert rep.machines["machine-a"].requests + rep.machines["machine-b"].requests == 450
    assert rep.machines["machine-a"].requests > 0 and rep.machines["machine-b"].requests > 0
    shared = _cache(a)["answered_elsewhere"] + _cache(b)["answered_elsewhere"]
    hits = _cache(a)["hits"] + _cache(b)["hits"]
    assert shared + hits > 0  # one machine used answers the other paid for
    assert (a / OUT / "predictions.parquet").is_file() and (
        b / OUT / "predictions.parquet"
    ).is_file()


def test_a_machine_killed_mid_run_loses_nothing_and_pays_nothing_twice(
    tmp_path: Path, pg_url: str
) -> None:
    """``kill -9`` of machine a: b takes a's leases and finishes; only a's in-flight are resent."""
    n, concurrency = 160, 8
    with FakeOpenAIServer(latency_s=0.15, responder=lambda m: "B") as server:
        a = _machine(tmp_path, "a", n, server.api_base, concurrency)
        b = _machine(tmp_path, "b", n, server.api_base, concurrency)
        ttl = {"CULTUREQA_LEASE_TTL_S": "3"}
        first = _start(a, pg_url, "machine-a", **ttl)
        _wait_for(lambda: server.hits >= 24)
        second = _start(b, pg_url, "machine-b", **ttl)
        _wait_for(lambda: server.hits >= 48)
        # frozen between transactions, its session alive: its leases stay put and the count
        # below sees every one (a lease write on the wire at a bare SIGSTOP commits after it)
        _freeze_between_transactions(first, pg_url, "machine-a")
        in_flight = _leases_of(pg_url, first.pid)
        os.kill(first.pid, signal.SIGKILL)
        first.communicate()
        out, err = second.communicate(timeout=600)
        prompts = _prompts(server)
    assert second.returncode == 0, out + err
    twice = [p for p, count in prompts.items() if count > 1]
    assert 0 < in_flight <= 2 * concurrency  # the client leases one wave beyond its slots
    assert len(prompts) == n and len(twice) <= in_flight, "paid twice beyond a's in-flight"
    assert max(prompts.values()) <= 2
    with open_store(pg_url) as store:
        assert store.count() == n and store.leases() == 0  # nothing lost, no lease left behind
    rep = report(pg_url)
    assert rep.duplicates == 0  # a's in-flight replies were never stored: nothing recorded twice
    assert rep.machines["machine-b"].requests == n - rep.machines["machine-a"].requests
    assert _cache(b)["leases_taken_over"] >= 1  # b took over what dead a had leased


@pytest.mark.parametrize("concurrency", [4, 16])
def test_the_server_stopped_mid_run_stops_the_stage_with_one_line_and_a_rerun_resumes(
    tmp_path: Path, pg_server: PgServer, pg_url: str, concurrency: int
) -> None:
    """The measurement that paid 8 prompts twice at concurrency 4 and 32 at 16: now none."""
    n = 200
    with FakeOpenAIServer(latency_s=0.05, responder=lambda m: "B") as server:
        ws = _machine(tmp_path, "a", n, server.api_base, concurrency)
        run = _start(ws, pg_url, "machine-a")
        try:
            _wait_for(lambda: server.hits >= 40)
            pg_server.stop()
            out, err = run.communicate(timeout=300)
        finally:
            pg_server.start()
        stopped_at = server.hits
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert run.returncode == 2, out + err
        assert len(errors) == 1 and err.strip().splitlines()[-1] == errors[0], err
        assert "the PostgreSQL server is down or unreachable" in errors[0]
        assert "a rerun sends only the rest" in errors[0]
        assert not (ws / OUT / "predictions.parquet").exists()  # nothing half-written
        with open_store(pg_url) as store:
            stored = store.count()
        kept_files = list((ws / ".cultureqa" / "unstored").glob("*.jsonl"))
        kept = sum(len(f.read_text().splitlines()) for f in kept_files)
        assert 0 < stored < n and len(kept_files) <= 1
        again = subprocess.run(
            [*EVALUATE, "--model", "model"],
            cwd=ws,
            env=_env(ws, pg_url, "machine-a"),
            capture_output=True,
            text=True,
        )
        prompts = _prompts(server)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(prompts) == n
    assert server.hits == n  # no prompt paid twice: nothing sent after the store went away,
    assert server.hits - stopped_at == n - stored - kept  # late answers kept, stored by the rerun
    assert _cache(ws)["stored_from_file"] == kept
    assert not list((ws / ".cultureqa" / "unstored").iterdir())
    assert (ws / OUT / "predictions.parquet").is_file()
    print(
        f"concurrency {concurrency}: store stopped after {stopped_at} requests, {stored} stored, "
        f"{kept} kept locally; the rerun sent {server.hits - stopped_at}; the server saw "
        f"{server.hits} requests for {len(prompts)} prompts"
    )


def test_a_frozen_machine_costs_the_other_at_most_one_lease_period(
    tmp_path: Path, pg_url: str
) -> None:
    """SIGSTOP (a closed laptop): its connection and session lock stay, its heartbeat stops.
    The other machine, on the same prompts, sends every prompt a's leases do not hold, then
    takes a's leases one lease period (here 12 s, longer than b's start-up) after a's last
    beat, and finishes. With the 15-minute expiry leases had before their heartbeat, b waited
    out this test's timeout."""
    n, concurrency, ttl = 60, 4, 12.0
    with FakeOpenAIServer(latency_s=0.1, responder=lambda m: "B") as server:
        a = _machine(tmp_path, "a", n, server.api_base, concurrency)
        b = _machine(tmp_path, "b", n, server.api_base, concurrency)
        lease = {"CULTUREQA_LEASE_TTL_S": str(ttl)}
        first = _start(a, pg_url, "machine-a", **lease)
        try:
            _wait_for(lambda: server.hits >= 12)
            # frozen between transactions: a lease write already on the wire at the SIGSTOP
            # would commit after the count below (6 counted, 8 taken over, once under load)
            _freeze_between_transactions(first, pg_url, "machine-a")
            frozen_with = _leases_of(pg_url, first.pid)
            started = time.monotonic()
            second = _start(b, pg_url, "machine-b", **lease)
            out, err = second.communicate(timeout=600)
            took = time.monotonic() - started
        finally:
            first.kill()
            first.communicate()
        prompts = _prompts(server)
    assert second.returncode == 0, out + err
    assert frozen_with > 0 and _cache(b)["leases_taken_over"] == frozen_with
    assert len(prompts) == n and sum(prompts.values()) - n <= frozen_with
    waited = _cache(b)["lease_waits"] * 0.25  # polls of 0.25 s while a's leases held
    assert 0 < waited <= ttl + ttl / 4 + 1.0 and took < 3 * ttl
    print(f"b finished in {took:.1f} s; waited {_cache(b)['lease_waits']} polls for a's leases")


def _two_settings(ws: Path) -> Path:
    """The synthetic benchmark in English and Indonesian: two settings, 2 × n prompts."""
    params = OmegaConf.load(ws / "params.yaml")
    params.benchmarks.synthetic.languages = {"en": {}, "id": {}}
    params.benchmarks.synthetic.settings = ["mcq-none-en", "mcq-none-id"]
    params.benchmarks.synthetic.digest = digest(params.benchmarks.synthetic)  # as conf/ composes
    OmegaConf.save(params, ws / "params.yaml")
    return ws


def _freeze_between_transactions(proc: subprocess.Popen[str], url: str, machine: str) -> None:
    """SIGSTOP ``proc`` where none of its store sessions is inside a transaction.

    A worker frozen mid-transaction has its session ended by the server after half a lease
    period (``idle_in_transaction_session_timeout``), which frees its leases early: this test
    measures the other path, a frozen worker whose connection stays, so it retries the freeze.
    """
    import psycopg

    name = f"cultureqa {machine} {proc.pid}"
    for _ in range(200):
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(0.05)
        with psycopg.connect(url) as conn:
            states = [
                row[0]
                for row in conn.execute(
                    "SELECT state FROM pg_stat_activity WHERE application_name = %s", (name,)
                ).fetchall()
            ]
        if states and all(state == "idle" for state in states):
            return
        os.kill(proc.pid, signal.SIGCONT)
        time.sleep(0.01)
    raise AssertionError(f"{name} was inside a transaction at every try")


def test_a_frozen_machine_holding_one_settings_prompts_delays_none_of_the_others(
    tmp_path: Path, pg_url: str
) -> None:
    """Machine a is frozen (SIGSTOP) in its first setting, holding leases on some of its prompts.
    Machine b runs the same two settings: it sends every other prompt of both settings while
    a's leases are still held (well before their expiry), then takes a's leases over one lease
    period after a's last beat. Before settings took turns, b's second setting waited for the
    first's held prompts: b sent nothing more until the expiry."""
    n, concurrency, ttl = 40, 4, 30.0
    with FakeOpenAIServer(latency_s=0.1, responder=lambda m: "B") as server:
        a = _two_settings(_machine(tmp_path, "a", n, server.api_base, concurrency))
        b = _two_settings(_machine(tmp_path, "b", n, server.api_base, concurrency))
        lease = {"CULTUREQA_LEASE_TTL_S": str(ttl)}
        first = _start(a, pg_url, "machine-a", **lease)
        try:
            _wait_for(lambda: server.hits >= 10)  # a is in its first setting (n prompts)
            _freeze_between_transactions(first, pg_url, "machine-a")
            frozen_at = time.perf_counter()
            held = _leases_of(pg_url, first.pid)
            with open_store(pg_url) as store:
                stored = store.count()
            others = 2 * n - stored - held  # what b must send without a's leased prompts

            def sent_by_b() -> int:
                return sum(r.t_start > frozen_at for r in list(server.records))

            second = _start(b, pg_url, "machine-b", **lease)
            _wait_for(lambda: sent_by_b() >= others or second.poll() is not None, 3 * ttl)
            others_sent_after = time.perf_counter() - frozen_at
            held_then = _leases_of(pg_url, first.pid)
            out, err = second.communicate(timeout=600)
            took = time.perf_counter() - frozen_at
        finally:
            first.kill()
            first.communicate()
        prompts = _prompts(server)
        b_sent = sent_by_b()
    assert second.returncode == 0, out + err
    assert 0 < held < n - stored  # a held some prompts of its first setting, not all of them
    assert held_then == held, "a's leases were gone before b had sent its other prompts"
    assert others_sent_after < ttl  # b's other prompts all left within the lease period
    assert b_sent == 2 * n - stored  # b sent the rest, a's held prompts after the takeover
    assert len(prompts) == 2 * n and sum(prompts.values()) - 2 * n <= held  # only a's in flight
    assert report(pg_url).duplicates == 0  # no answer stored twice
    assert _cache(b)["leases_taken_over"] == held and _cache(b)["lease_waits"] > 0
    print(
        f"a frozen with {held} leases and {stored} answers stored; b sent its {others} other "
        f"prompts {others_sent_after:.1f} s after the freeze (lease period {ttl:.0f} s), "
        f"took a's leases over and finished {took:.1f} s after it"
    )
