"""Opening the PostgreSQL store while other machines write to it (a real server, no mocks).

A second machine joining a sweep opens the store while the first one is committing answers.
Its schema step once ran ``CREATE INDEX IF NOT EXISTS``, which locks the table even when the
index exists: the newcomer waited on every open write, and a writer that went on to a second
table deadlocked with it; the server aborted one, and the newcomer's stage failed at start.
"""

from __future__ import annotations

import threading

import psycopg

from cultureqa.llm.store import open_store
from cultureqa.llm.store.pg import PostgresStore
from cultureqa.llm.store.pg_budget import PgTeamBudget

OPEN_WITHIN_S = 30.0  # opening takes milliseconds; the old schema step waited for the writer


def _open_in_thread(url: str) -> tuple[threading.Thread, list[PostgresStore]]:
    opened: list[PostgresStore] = []
    thread = threading.Thread(target=lambda: opened.append(PostgresStore(url)), daemon=True)
    thread.start()
    return thread, opened


def test_a_machine_joins_a_store_in_use_without_waiting_on_or_deadlocking_its_writers(
    pg_url: str,
) -> None:
    open_store(pg_url).close()  # the first machine made the schema
    with psycopg.connect(pg_url) as writer:  # its answer transaction, still open
        writer.execute(
            "INSERT INTO sends(key, machine, pid, status, cost_usd, created) "
            "VALUES ('k1', 'machine-a', 1, 'ok', 0.01, 0)"
        )
        thread, opened = _open_in_thread(pg_url)
        thread.join(OPEN_WITHIN_S)
        assert opened, "the second machine waited on the first one's open write"
        # the writer goes on to the other tables, as a put does, and commits without a deadlock
        writer.execute("DELETE FROM leases WHERE key = 'k1'")
        writer.execute(
            "INSERT INTO responses(key, kind, model, status, payload, created) "
            "VALUES ('k1', 'generate', 'm', 'ok', '{}', 0)"
        )
        writer.commit()
    with opened[0] as second:
        assert second.count() == 1


def test_a_missing_index_is_made_again_when_a_store_opens(pg_url: str) -> None:
    open_store(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP INDEX sends_key")
        open_store(pg_url).close()
        found = conn.execute("SELECT to_regclass('sends_key') IS NOT NULL").fetchone()
    assert found == (True,)


def test_a_team_budget_opens_beside_an_open_hold_of_another_machine(pg_url: str) -> None:
    PgTeamBudget(pg_url, "sweep", 1.0).close()
    with psycopg.connect(pg_url) as writer:  # another machine's reservation, not committed yet
        writer.execute("SELECT name FROM budgets WHERE name = 'sweep' FOR UPDATE")
        writer.execute(
            "INSERT INTO budget_holds(budget, session, machine, pid, amount_usd, requests, "
            "expires) VALUES ('sweep', 1, 'machine-a', 1, 0.01, 1, 0)"
        )
        opened: list[PgTeamBudget] = []
        thread = threading.Thread(
            target=lambda: opened.append(PgTeamBudget(pg_url, "other", 1.0)), daemon=True
        )
        thread.start()
        thread.join(OPEN_WITHIN_S)
        assert opened, "a budget opened on another name waited on the first machine's hold"
        writer.execute("UPDATE budget_machines SET requests = requests WHERE budget = 'sweep'")
        writer.commit()
    opened[0].close()
