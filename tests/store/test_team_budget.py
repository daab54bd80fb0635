"""The team budget's ledger on a real PostgreSQL server (issue 32): holds, refusals, releases.

Each :class:`PgTeamBudget` is one worker (its own connection and session lock), as each stage
process of each machine opens one; a worker killed with ``kill -9`` is a real subprocess.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from omegaconf import OmegaConf

from cultureqa.core.errors import ConfigTypeError, TeamCapMismatch, one_line
from cultureqa.core.spend import Budget, team_from
from cultureqa.llm.store import pg_budget
from cultureqa.llm.store.pg_budget import EXPIRED, GONE, PgTeamBudget, open_team_budget
from cultureqa.runs.tracking import api_metrics

ROOT = Path(__file__).resolve().parents[2]


def _worker(url: str, machine: str, monkeypatch: pytest.MonkeyPatch) -> PgTeamBudget:
    monkeypatch.setenv("CULTUREQA_MACHINE", machine)
    return PgTeamBudget(url, "sweep", 0.05)


def _releases(url: str) -> list[tuple[str, str, float, int]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT machine, reason, amount_usd, requests FROM budget_releases ORDER BY id"
        ).fetchall()
    return [(str(m), str(r), float(a), int(n)) for m, r, a, n in rows]


def test_two_workers_share_one_cap_and_a_refusal_says_who_spent_it(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _worker(pg_url, "machine-a", monkeypatch), _worker(pg_url, "machine-b", monkeypatch)
    cap = 0.05
    assert a.reserve(0.03, cap).granted
    held = b.reserve(0.03, cap)  # a's hold fills the room: wait, not refused
    assert not held.granted and held.fits_later and held.state.held_usd == pytest.approx(0.03)
    a.settle([(0.03, 0.01, 1)])  # a's reply cost less than its worst case: room comes back
    assert b.reserve(0.03, cap).granted
    b.settle([(0.03, 0.03, 1)])
    refused = a.reserve(0.02, cap)  # spent 0.04: 0.02 can never fit, whatever settles
    assert not refused.granted and not refused.fits_later
    assert dict(refused.state.machines) == {"machine-b": (0.03, 1), "machine-a": (0.01, 1)}
    assert refused.state.spent_usd == pytest.approx(0.04) and refused.state.held_usd == 0
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT refused FROM budget_machines WHERE machine = 'machine-a'")
        assert row.fetchone() == (1,)
    assert a.close() == (0, 0.0) and b.close() == (0, 0.0)  # nothing left open: nothing logged
    assert _releases(pg_url) == []


def test_a_killed_workers_hold_is_released_at_once_with_its_reason(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = (
        "import sys, time\n"
        "from cultureqa.llm.store.pg_budget import PgTeamBudget\n"
        "ledger = PgTeamBudget(sys.argv[1], 'sweep', 0.05)\n"
        "assert ledger.reserve(0.04, 0.05).granted\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "CULTUREQA_MACHINE": "machine-a", "PYTHONPATH": str(ROOT / "src")}
    dead = subprocess.Popen(
        [sys.executable, "-c", code, pg_url], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert dead.stdout is not None and dead.stdout.readline().strip() == "held"
        b = _worker(pg_url, "machine-b", monkeypatch)
        assert not b.reserve(0.02, 0.05).granted  # a is alive: its hold counts
        os.kill(dead.pid, signal.SIGKILL)
        dead.wait()
    finally:
        if dead.poll() is None:
            dead.kill()
    grant = b.reserve(0.02, 0.05)
    for _ in range(50):  # the server notices the closed socket within moments
        if grant.granted:
            break
        time.sleep(0.1)
        grant = b.reserve(0.02, 0.05)
    assert grant.granted and grant.released == {GONE: 1}
    assert _releases(pg_url) == [("machine-a", GONE, pytest.approx(0.04), 1)]
    b.close()


def test_a_hold_that_stopped_renewing_expires_by_the_servers_clock(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live connection whose worker went quiet (a machine cut off): its hold expires."""
    monkeypatch.setattr(pg_budget, "HOLD_TTL_S", 0.2)
    a, b = _worker(pg_url, "machine-a", monkeypatch), _worker(pg_url, "machine-b", monkeypatch)
    assert a.reserve(0.04, 0.05).granted
    assert not b.reserve(0.02, 0.05).granted
    time.sleep(0.4)
    grant = b.reserve(0.02, 0.05)
    assert grant.granted and grant.released == {EXPIRED: 1}
    assert _releases(pg_url) == [("machine-a", EXPIRED, pytest.approx(0.04), 1)]
    a.close()
    b.close()


def test_the_budget_waits_for_room_then_stops_with_the_team_line(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through :class:`Budget`, as the clients use it: wait while holds fill the room."""
    other = _worker(pg_url, "machine-b", monkeypatch)
    assert other.reserve(0.03, 0.05).granted  # another machine's request in flight
    monkeypatch.setenv("CULTUREQA_MACHINE", "machine-a")
    budget = Budget()
    budget.reset(0.05, open_team_budget(pg_url, "sweep", 0.05))

    async def run() -> list[bool]:
        first = await budget.reserve(0.03)  # waits for b's reply (settled below), then fits
        budget.settle(0.03, 0.01)
        return [first, await budget.reserve(0.025), await budget.reserve(0.01)]

    async def settle_other() -> None:
        await asyncio.sleep(0.5)
        await asyncio.to_thread(other.settle, [(0.03, 0.02, 1)])

    async def both() -> list[bool]:
        got, _ = await asyncio.gather(run(), settle_other())
        return got

    assert asyncio.run(both()) == [True, False, False]  # 0.03 spent: 0.025 never fits
    budget.close()
    other.close()
    team = budget.as_dict()["team"]
    assert team["waits"] >= 1 and team["refused"] == 1 and budget.refused == 2
    line = budget.message(7)
    assert line.startswith("team budget reached: the team's requests cost $0.0300 of the $0.05 ")
    assert "(spend.budget_usd with spend.team=sweep, shared on the PostgreSQL store)" in line
    assert (
        "spent by machine: machine-b $0.0200 (1 requests), machine-a $0.0100 (1 requests)" in line
    )
    assert "7 requests not sent (reason: budget)" in line and "\n" not in line
    metrics = api_metrics({"api": {"budget": budget.as_dict()}})
    assert metrics["budget.team.refused"] == 1 and metrics["budget.refused"] == 2


def test_team_needs_a_cap_and_the_postgresql_store(tmp_path: Path) -> None:
    params = OmegaConf.create({"spend": {"budget_usd": None, "team": "sweep"}})
    with pytest.raises(ConfigTypeError, match=r"'spend\.team' is 'sweep' but 'spend\.budget_usd'"):
        team_from(params)
    params.spend.team = 3
    with pytest.raises(ConfigTypeError, match="must be null or a budget name"):
        team_from(params)
    params.spend = {"budget_usd": 1.0, "team": "sweep"}
    assert team_from(params) == "sweep"
    with pytest.raises(
        ConfigTypeError, match=r"the response store is SQLite .*CULTUREQA_STORE_URL"
    ):
        open_team_budget(tmp_path / "responses.sqlite", "sweep", 1.0)
    assert team_from(OmegaConf.load(ROOT / "params.yaml")) is None  # the default: per run


def test_a_second_cap_under_one_team_name_is_refused_before_any_request(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planted violation: machine b opens the team budget of a with another cap."""
    first = _worker(pg_url, "machine-a", monkeypatch)  # recorded with a cap of 0.05
    monkeypatch.setenv("CULTUREQA_MACHINE", "machine-b")
    with pytest.raises(TeamCapMismatch) as refused:
        PgTeamBudget(pg_url, "sweep", 1.0)
    line = str(refused.value)
    assert "spend.budget_usd is 1 here but the team budget was created with a cap of 0.05" in line
    assert "no request was sent" in line and "\n" not in line
    assert one_line(refused.value) == line  # the stage prints it as its one error line
    same = PgTeamBudget(pg_url, "sweep", 0.05)  # the same cap joins
    assert same.cap_usd == 0.05
    with psycopg.connect(pg_url) as conn:  # a budget made before caps were recorded: NULL
        conn.execute("INSERT INTO budgets(name, created) VALUES ('old', 0)")
    assert PgTeamBudget(pg_url, "old", 0.3).cap_usd == 0.3
    with pytest.raises(TeamCapMismatch):
        PgTeamBudget(pg_url, "old", 0.4)
    first.close()
    same.close()
