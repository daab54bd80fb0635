"""A worker frozen inside a transaction does not lock the other machines out for good.

SIGSTOP between two statements of a write (a closed laptop) leaves the worker's transaction open
and its row locks held; a machine taking over its leases would wait on them forever. Every store
session therefore carries ``idle_in_transaction_session_timeout``: the server ends the frozen
session, which frees its locks.
"""

from __future__ import annotations

import time

import psycopg
import pytest

from cultureqa.llm.store import pg


def test_a_session_idle_inside_a_transaction_is_ended_and_its_row_lock_freed(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg, "IDLE_IN_TRANSACTION_S", 1.0)
    frozen = pg.PostgresStore(pg_url)
    setting = frozen._conn.execute("SHOW idle_in_transaction_session_timeout").fetchone()
    assert setting == ("1s",)
    frozen._conn.execute("CREATE TABLE probe (k int PRIMARY KEY)")
    frozen._conn.execute("INSERT INTO probe VALUES (1)")
    frozen._conn.execute("BEGIN")
    frozen._conn.execute("SELECT k FROM probe WHERE k = 1 FOR UPDATE")  # then nothing more
    with psycopg.connect(pg_url, autocommit=True) as other:
        other.execute("SET lock_timeout = '20s'")
        started = time.monotonic()
        other.execute("UPDATE probe SET k = 2 WHERE k = 1")  # waits for the frozen session's end
        waited = time.monotonic() - started
    assert waited < 15  # ended after ~1 s idle, not held until the lock timeout
    with pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout):
        frozen._conn.execute("SELECT 1")  # the server closed it
