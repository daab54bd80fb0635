"""A team cap across machines (issue 32): two real ``evaluate`` runs on one PostgreSQL store.

Each machine is a workspace of its own evaluating a model of its own (no prompt in common), so
every request is paid by one machine and the team's spend is the sum of both. Each reply of the
fake server costs exactly $0.01 (one completion token at $0.01, prompts free, ``max_tokens``
1), so a reservation's worst case equals its cost and the cap's arithmetic is exact.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from omegaconf import OmegaConf

from cultureqa.core.runlog import runlog_dir
from cultureqa.llm.store import shown
from cultureqa.llm.store.admin import report
from cultureqa.llm.store.pg_budget import GONE
from cultureqa.testing import FakeOpenAIServer
from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[2]
EVALUATE = [sys.executable, str(ROOT / "stages" / "evaluate.py"), "--benchmark", "synthetic"]
OUT = Path("data/eval/synthetic/model")
RETRY = {"attempts": 3, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 10.0}
PER_REQUEST_USD = 0.01
N_ITEMS = 100  # $1.00 for one machine's whole sweep
TEAM_CAP = 1.205  # 120 requests: above one machine's sweep, below both together ($2.00)


def _machine(tmp: Path, name: str, api_base: str, team: str | None, n: int = N_ITEMS) -> Path:
    ws = make_api_workspace(ROOT, tmp / name, n, api_base, concurrency=2, retry=RETRY)
    params = OmegaConf.load(ws / "params.yaml")
    params.model.id = f"model-{name}"  # each machine its own model: no prompt in common
    params.model.options.litellm_model = f"openai/model-{name}"
    params.model.price = {"input_per_token": 0.0, "output_per_token": PER_REQUEST_USD}
    params.model.decoding.max_tokens = 1  # worst case = what a one-token reply costs
    params.spend.budget_usd = TEAM_CAP
    params.spend.team = team
    OmegaConf.save(params, ws / "params.yaml")
    return ws


def _start(ws: Path, url: str, machine: str) -> subprocess.Popen[str]:
    env = {
        **stage_env(ws),
        "PYTHONPATH": str(ROOT / "src"),
        "CULTUREQA_STORE_URL": url,
        "CULTUREQA_MACHINE": machine,
    }
    return subprocess.Popen(
        [*EVALUATE, "--model", "model"],
        cwd=ws,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _record(ws: Path) -> dict[str, Any]:
    return dict(json.loads((runlog_dir(ws / OUT, ws) / "run.json").read_text()))


def _sweep(tmp: Path, url: str, api_base: str, team: str | None) -> list[tuple[int, str]]:
    """Both machines at once; their exit codes and error output."""
    runs = [_start(_machine(tmp, name, api_base, team), url, f"machine-{name}") for name in "ab"]
    outs = [run.communicate(timeout=600) for run in runs]
    return [(run.returncode, err) for run, (_, err) in zip(runs, outs, strict=True)]


def assert_within_team_cap(url: str, cap: float) -> float:
    """The team's spend in the store's send log (every stored answer, every machine) ≤ cap."""
    spent = sum(m.cost_usd for m in report(url).machines.values())
    assert spent <= cap + 1e-9, f"the team spent ${spent:.4f}, past its ${cap:g} cap"
    return spent


def test_two_machines_stop_together_at_the_team_cap(tmp_path: Path, pg_url: str) -> None:
    with FakeOpenAIServer(latency_s=0.1, responder=lambda m: "B") as server:
        ends = _sweep(tmp_path, pg_url, server.api_base, team="sweep")
        sent = server.hits
    spent = assert_within_team_cap(pg_url, TEAM_CAP)
    assert sent == 120 and spent == pytest.approx(1.20)  # the cap is used, not left idle
    for rc, err in ends:  # both stop, each with the team's one line
        lines = err.strip().splitlines()
        assert rc == 2 and len(lines) == 1, err
        assert lines[0].startswith("error: team budget reached: the team's requests cost $1.2000")
        assert "of the $1.205 team cap (spend.budget_usd with spend.team=sweep" in lines[0]
        assert "machine-a $" in lines[0] and "machine-b $" in lines[0]
        assert "a rerun with a higher spend.budget_usd (on every machine)" in lines[0]
    rep = report(pg_url)
    assert rep.machines["machine-a"].requests + rep.machines["machine-b"].requests == 120
    for name in "ab":
        budget = _record(tmp_path / name)["api"]["budget"]
        assert budget["team"]["refused"] >= 1 and budget["team"]["name"] == "sweep"
        assert budget["stopped"].startswith("team budget reached")
        assert budget["team"]["released"] == {}  # nobody died: nothing released
    with psycopg.connect(pg_url) as conn:  # no hold left behind, per-machine spend = send log
        assert conn.execute("SELECT COUNT(*) FROM budget_holds").fetchone() == (0,)
        by_machine = dict(conn.execute("SELECT machine, requests FROM budget_machines").fetchall())
    assert by_machine == {m: rep.machines[m].requests for m in ("machine-a", "machine-b")}


def test_a_cap_per_process_lets_two_machines_pass_the_team_cap(tmp_path: Path, pg_url: str) -> None:
    """The planted violation: without ``spend.team`` each process gets the whole cap."""
    with FakeOpenAIServer(latency_s=0.02, responder=lambda m: "B") as server:
        ends = _sweep(tmp_path, pg_url, server.api_base, team=None)
        sent = server.hits
    assert [rc for rc, _ in ends] == [0, 0], ends
    assert sent == 2 * N_ITEMS
    with pytest.raises(AssertionError, match=r"the team spent \$2\.0000, past its \$1\.205 cap"):
        assert_within_team_cap(pg_url, TEAM_CAP)


def _holds_of(url: str, pid: int) -> float:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT COALESCE(SUM(amount_usd), 0) FROM budget_holds WHERE pid = %s", (pid,)
        ).fetchone()
    return float(row[0]) if row else 0.0


def test_a_killed_machines_reservations_are_released_and_counted(
    tmp_path: Path, pg_url: str
) -> None:
    with FakeOpenAIServer(latency_s=0.3, responder=lambda m: "B") as server:
        first = _start(_machine(tmp_path, "a", server.api_base, "sweep"), pg_url, "machine-a")
        try:
            deadline = time.time() + 120
            while True:  # frozen with requests in flight: its hold is open
                assert time.time() < deadline, "machine a never held a reservation"
                time.sleep(0.2)
                if server.hits < 4:
                    continue
                os.kill(first.pid, signal.SIGSTOP)
                if (held := _holds_of(pg_url, first.pid)) > 0:
                    break
                os.kill(first.pid, signal.SIGCONT)
            os.kill(first.pid, signal.SIGKILL)
        finally:
            first.kill()
            first.communicate()
        b = _machine(tmp_path, "b", server.api_base, "sweep", n=20)
        second = _start(b, pg_url, "machine-b")
        _, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    released = _record(b)["api"]["budget"]["team"]["released"]
    assert released == {GONE: 1}  # b's first reservation released dead a's hold, and said so
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT machine, reason, amount_usd, released_by FROM budget_releases"
        ).fetchall()
        left = conn.execute("SELECT COUNT(*) FROM budget_holds WHERE pid = %s", (first.pid,))
        assert left.fetchone() == (0,)
    assert rows == [("machine-a", GONE, pytest.approx(held), "machine-b")]
    assert_within_team_cap(pg_url, TEAM_CAP)


def test_a_team_budget_on_the_sqlite_store_stops_before_any_request(tmp_path: Path) -> None:
    with FakeOpenAIServer(responder=lambda m: "B") as server:
        ws = _machine(tmp_path, "a", server.api_base, "sweep", n=5)
        env = {**stage_env(ws), "PYTHONPATH": str(ROOT / "src"), "CULTUREQA_STORE_URL": ""}
        done = subprocess.run(
            [*EVALUATE, "--model", "model"], cwd=ws, env=env, capture_output=True, text=True
        )
        sent = server.hits
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and sent == 0 and len(lines) == 1, done.stderr
    assert lines[0].startswith("error: spend.team is 'sweep' but the response store is SQLite (")
    assert "set CULTUREQA_STORE_URL=postgresql://… to share the cap" in lines[0]


def test_a_machine_with_another_cap_under_the_team_name_stops_before_any_request(
    tmp_path: Path, pg_url: str
) -> None:
    """Machine a creates the budget with its cap; b, the same name with a 5× larger cap (the
    measurement that spent 5.1 × a's cap), exits 2 before its first request."""
    with FakeOpenAIServer(responder=lambda m: "B") as server:
        a = _machine(tmp_path, "a", server.api_base, "sweep", n=5)
        first = _start(a, pg_url, "machine-a")
        _, err_a = first.communicate(timeout=600)
        assert first.returncode == 0, err_a
        sent_by_a = server.hits
        b = _machine(tmp_path, "b", server.api_base, "sweep", n=5)
        params = OmegaConf.load(b / "params.yaml")
        params.spend.budget_usd = 5 * TEAM_CAP
        OmegaConf.save(params, b / "params.yaml")
        second = _start(b, pg_url, "machine-b")
        _, err = second.communicate(timeout=600)
        sent_by_b = server.hits - sent_by_a
    lines = err.strip().splitlines()
    assert second.returncode == 2 and sent_by_b == 0 and len(lines) == 1, err
    assert lines[0] == (
        "error: spend.team='sweep': spend.budget_usd is 6.025 here but the team budget was "
        f"created with a cap of 1.205 on {shown(pg_url)}; set spend.budget_usd=1.205 on every "
        "machine, or start a new budget with another spend.team (no request was sent)"
    )
    print(f"a sent {sent_by_a} requests under its cap; b, with 5 × the cap, sent {sent_by_b}")
