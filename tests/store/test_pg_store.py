"""The PostgreSQL response store against a real server: the SQLite store's guarantees, by row.

Every test gets its own database on one pgserver instance (``conftest.py``); nothing is mocked.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from cultureqa.cli import main as cli
from cultureqa.core.errors import one_line
from cultureqa.llm.store import (
    StoredResponse,
    StoreLocationError,
    open_store,
    parse_location,
    shown,
    store_location,
)
from cultureqa.llm.store.admin import copy_store, report
from cultureqa.llm.store.pg import PostgresStore
from cultureqa.llm.store.sqlite import SqliteStore
from cultureqa.testing.postgres import PgServer

ROOT = Path(__file__).resolve().parents[2]


def _row(key: str, status: str = "ok", text: str = "A", cost: float = 0.0) -> StoredResponse:
    payload = {"text": text, "status": status, "usage": {"cost_usd": cost}}
    return StoredResponse(key, "generate", "m", status, payload)


def test_the_location_chooses_the_backend(tmp_path: Path, pg_url: str, monkeypatch) -> None:
    with open_store(pg_url) as pg, open_store(tmp_path / "r.sqlite") as lite:
        assert isinstance(pg, PostgresStore) and isinstance(lite, SqliteStore)
    with open_store(f"sqlite:///{tmp_path}/s.sqlite") as lite:  # sqlite:////absolute
        assert isinstance(lite, SqliteStore) and lite.path == tmp_path / "s.sqlite"
    assert parse_location("sqlite:///rel/r.sqlite") == Path("rel/r.sqlite")
    monkeypatch.setenv("CULTUREQA_STORE_URL", pg_url)
    assert store_location() == pg_url
    monkeypatch.setenv("CULTUREQA_STORE_URL", "")
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / "state"))
    assert store_location() == tmp_path / "state" / "responses.sqlite"
    with pytest.raises(StoreLocationError, match="mysql://…: not a response store URL"):
        parse_location("mysql://u@h/db")


def test_a_password_never_reaches_a_message() -> None:
    assert shown("postgresql://team:s3cret@db.lab:5432/cultureqa") == (
        "postgresql://team@db.lab:5432/cultureqa"
    )


def test_two_workers_never_lease_one_prompt_and_answers_end_leases(pg_url: str) -> None:
    with open_store(pg_url) as a, open_store(pg_url) as b:
        first = a.claim(["k1", "k2", "k3"], "A", since=0)
        second = b.claim(["k3", "k2", "k4"], "B", since=0)
        assert first.claimed == ["k1", "k2", "k3"]
        assert second.claimed == ["k4"] and sorted(second.held) == ["k2", "k3"]
        a.put([_row("k2")], owner="A")
        again = b.claim(["k2", "k3"], "B", since=0)
        assert list(again.answered) == ["k2"] and again.held == ["k3"] and not again.claimed
        assert a.leases() == 3  # k1, k3 (A) and k4 (B); k2's lease went with its answer


def test_a_dead_workers_leases_are_taken_over_at_once(pg_url: str) -> None:
    """Its session's advisory lock died with its connection: no need to wait for expiry."""
    a, b = open_store(pg_url), open_store(pg_url)
    try:
        assert a.claim(["k1", "k2"], "A", since=0).claimed == ["k1", "k2"]
        assert b.claim(["k1"], "B", since=0).held == ["k1"]  # alive: held
        a._conn.close()  # type: ignore[attr-defined]  # the worker's connection is gone
        _until(lambda: b.claim(["k1", "k2"], "B", since=0).taken_over == 2)
    finally:
        b.close()


def test_an_expired_lease_is_taken_over_even_from_a_live_session(pg_url: str) -> None:
    """A machine that went quiet (connection still open on the server) loses its leases."""
    with open_store(pg_url) as a, open_store(pg_url) as b:
        a.claim(["k1"], "A", since=0)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE leases SET expires = expires - 100000")
        taken = b.claim(["k1"], "B", since=0)
        assert taken.claimed == ["k1"] and taken.taken_over == 1


def test_a_heartbeat_keeps_a_slow_workers_leases_and_a_frozen_ones_expire_in_one_period(
    pg_url: str,
) -> None:
    """A worker in a long request keeps its leases past their expiry (its heartbeat renews
    them); frozen with SIGSTOP, its connection still open, it loses them one lease period
    (here 2 s) after its last beat. The plant: with the heartbeat stopped, the slow worker's
    leases are taken over although it is alive."""
    ttl = 2.0
    code = (
        "import sys, time\n"
        "from cultureqa.llm.store import open_store\n"
        "store = open_store(sys.argv[1])\n"
        "assert store.claim(['k1', 'k2'], 'A', since=0).claimed == ['k1', 'k2']\n"
        "if sys.argv[2] == 'no-beat':\n"
        "    store._stop_heartbeat()\n"
        "print('claimed', flush=True)\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "CULTUREQA_LEASE_TTL_S": str(ttl), "PYTHONPATH": str(ROOT / "src")}
    workers = []
    try:
        for mode in ("beat", "no-beat"):
            worker = subprocess.Popen(
                [sys.executable, "-c", code, pg_url, mode], env=env, stdout=subprocess.PIPE,
                text=True,
            )  # fmt: skip
            workers.append(worker)
            assert worker.stdout is not None and worker.stdout.readline().strip() == "claimed"
            with open_store(pg_url) as other:
                time.sleep(3 * ttl)  # three lease periods in one long request
                claim = other.claim(["k1", "k2"], "B", since=0)
                if mode == "no-beat":  # the plant: without beats, an alive worker loses them
                    assert claim.taken_over == 2
                    break
                assert claim.held == ["k1", "k2"] and not claim.claimed
                os.kill(worker.pid, signal.SIGSTOP)  # frozen: its session lock stays
                frozen = time.monotonic()
                _until(lambda: other.claim(["k1", "k2"], "B", since=0).taken_over == 2, 10.0)
                assert time.monotonic() - frozen <= ttl + ttl / 4 + 1.0  # one period + a beat
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()


def test_an_error_never_overwrites_an_answer_and_every_send_is_logged(pg_url: str) -> None:
    with open_store(pg_url) as store:
        store.put([_row("k", "error", text="")])
        store.put([_row("k", "ok", cost=0.5)])
        store.put([_row("k", "error", text="")])
        assert store.get_ok("k") == {"text": "A", "status": "ok", "usage": {"cost_usd": 0.5}}
        assert store.count() == 1
        assert [s.status for s in store.sends()] == ["error", "ok", "error"]
    rep = report(pg_url)
    assert rep.requests == 3 and rep.duplicates == 0
    assert sum(m.cost_usd for m in rep.machines.values()) == 0.5


def test_an_answer_paid_twice_is_a_duplicate_and_the_report_exits_1(
    pg_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted: two stores that did not lease (as two machines on two SQLite files would)."""
    monkeypatch.setenv("CULTUREQA_MACHINE", "lab-a")
    open_store(pg_url).put([_row("k1"), _row("k2")])
    monkeypatch.setenv("CULTUREQA_MACHINE", "lab-b")
    open_store(pg_url).put([_row("k2")])
    assert cli(["store", "report", pg_url]) == 1
    out = capsys.readouterr().out
    assert "lab-a" in out and "lab-b" in out
    assert "duplicates: 1 ok answers paid more than once" in out
    open_store(pg_url).put([_row("k3")])
    rep = report(pg_url)
    assert rep.machines["lab-a"].requests == 2 and rep.machines["lab-b"].requests == 2
    assert rep.lost == 0


def test_a_row_deleted_behind_the_stores_back_is_reported_lost(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    open_store(pg_url).put([_row("k1"), _row("k2")])
    assert cli(["store", "report", pg_url]) == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM responses WHERE key = 'k2'")
    capsys.readouterr()
    assert cli(["store", "report", pg_url]) == 1
    assert "lost: 1 prompts were answered (send log) but have no row" in capsys.readouterr().out


def test_copy_sqlite_to_postgresql_and_back_loses_no_row(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lite = tmp_path / "responses.sqlite"
    with open_store(lite) as src:
        src.put([_row(f"k{i:04d}", "ok" if i % 7 else "error", text=f"t{i}") for i in range(5000)])
    with open_store(pg_url) as dst:  # the target already holds an answer and an error
        dst.put([_row("k0001", text="kept"), _row("k0002", "error", text="")])
    assert cli(["store", "copy", f"sqlite:///{lite}", pg_url]) == 0
    assert "copied 5000 rows (4285 ok, 715 errors) and 5000 sends" in capsys.readouterr().out
    with open_store(pg_url) as dst:
        assert dst.count() == 5000
        assert dst.get_ok("k0001") == {"text": "kept", "status": "ok", "usage": {"cost_usd": 0.0}}
        assert dst.get_ok("k0002") is not None  # the error row was replaced by the answer
    again = copy_store(lite, pg_url)  # idempotent: nothing added twice
    assert again.sends == 0 and again.target_after == 5000
    back = tmp_path / "back.sqlite"
    copy_store(pg_url, back)
    with sqlite3.connect(back) as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 5000


def test_copy_from_a_missing_file_is_one_line(tmp_path: Path, pg_url: str, capsys) -> None:
    assert cli(["store", "copy", f"sqlite:///{tmp_path}/none.sqlite", pg_url]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {tmp_path}/none.sqlite: no response store there (no such file)"


def test_a_database_of_other_tables_is_refused(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE responses (id INTEGER)")
    with pytest.raises(Exception) as caught:
        open_store(pg_url)
    line = one_line(caught.value)
    assert line is not None and "table responses lacks columns" in line
    assert "not a cultureqa response store" in line


def test_a_server_that_is_down_is_one_line_with_the_fix(
    pg_server: PgServer, tmp_path: Path
) -> None:
    url = f"postgresql://postgres@/postgres?host={tmp_path}&port=5999"  # nobody listens there
    with pytest.raises(psycopg.OperationalError) as caught:
        open_store(url)
    line = one_line(caught.value)
    assert line is not None and "\n" not in line
    assert line.startswith("postgresql://postgres@(socket):5999/postgres: the PostgreSQL server")
    assert "down or unreachable" in line and "a rerun sends only the rest" in line


def test_a_missing_database_says_create_it_not_start_the_server(pg_server: PgServer) -> None:
    url = pg_server.uri.replace("/postgres?", "/no_such_db?", 1)  # a live server without it
    with pytest.raises(psycopg.OperationalError) as caught:
        open_store(url)
    line = one_line(caught.value)
    assert line is not None and "\n" not in line
    assert "the database does not exist on that server" in line, line
    assert "createdb" in line and "down or unreachable" not in line


def test_an_unknown_host_says_fix_the_host_name() -> None:
    with pytest.raises(psycopg.OperationalError) as caught:
        open_store("postgresql://team@no-such-host.invalid:5432/cultureqa")
    line = one_line(caught.value)
    assert line is not None and line.startswith(
        "postgresql://team@no-such-host.invalid:5432/cultureqa: unknown host ("
    ), line
    assert "fix the host name in CULTUREQA_STORE_URL" in line and "start it" not in line


def test_a_wrong_password_is_one_line_with_the_fix(pg_server: PgServer, pg_url: str) -> None:
    """Planted for real: a role with a password, and the server told to ask for it."""
    hba = pg_server.data / "pg_hba.conf"
    saved = hba.read_text()
    with psycopg.connect(pg_server.uri, autocommit=True) as conn:
        conn.execute("CREATE ROLE team LOGIN PASSWORD 'right'")
    hba.write_text("local all postgres trust\nlocal all all scram-sha-256\n")
    try:
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
        time.sleep(0.3)
        url = pg_url.replace("postgres:@", "team:wrong@", 1)
        with pytest.raises(psycopg.OperationalError) as caught:
            open_store(url)
        line = one_line(caught.value)
        assert line is not None and "authentication failed" in line, line
        assert "PGPASSWORD or ~/.pgpass" in line and "wrong" not in line
    finally:
        hba.write_text(saved)
        with psycopg.connect(pg_server.uri, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")


def test_a_full_disk_on_the_server_is_not_called_damage() -> None:
    """SQLSTATE 53100 as the server sends it (the error class psycopg raises for it)."""
    exc = psycopg.errors.DiskFull('could not extend file "base/16384/16385": No space left')
    line = one_line(exc)
    assert line is not None and "the database server's disk is full" in line
    assert "the store is not damaged" in line and "free space on the server" in line


def test_a_server_lost_under_a_batch_insert_is_called_down_not_a_database_error() -> None:
    """Stopping the server under ``executemany`` (pipeline mode) surfaces as psycopg's "cannot
    exit pipeline mode while busy", raised while handling the lost connection: the line must
    read the cause. The plant: the same error with no lost connection behind it stays generic."""
    lost = psycopg.OperationalError("server closed the connection unexpectedly")
    busy = psycopg.OperationalError("cannot exit pipeline mode while busy")
    busy.__context__ = lost
    line = one_line(busy)
    assert line is not None and "the PostgreSQL server is down or unreachable" in line, line
    assert "server closed the connection unexpectedly" in line
    alone = one_line(psycopg.OperationalError("cannot exit pipeline mode while busy"))
    assert alone is not None and "database error: cannot exit pipeline mode" in alone


def _until(condition: object, timeout: float = 10.0) -> None:
    deadline = time.time() + timeout
    while not condition():  # type: ignore[operator]
        assert time.time() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_payloads_round_trip_unchanged(pg_url: str) -> None:
    payload = {"text": "Jawaban: ü, 日本", "nested": {"a": [1, 2.5, None]}, "status": "ok"}
    with open_store(pg_url) as store:
        store.put([StoredResponse("k", "generate", "m", "ok", payload)])
        assert store.get_many_ok(["k", "missing"]) == {"k": json.loads(json.dumps(payload))}
