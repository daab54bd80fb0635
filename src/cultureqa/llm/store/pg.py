"""The response store on PostgreSQL: one store for a team on several machines (issue 32).

Same tables and guarantees as the SQLite store (:mod:`cultureqa.llm.store.sqlite`), enforced by
the server instead of a file lock:

- one row per prompt key (primary key); an error never overwrites a success (``ON CONFLICT``);
- claims are serialized by a transaction-scoped advisory lock (as ``BEGIN IMMEDIATE`` does for
  SQLite), and a lease row another transaction is changing right now is skipped
  (``FOR UPDATE SKIP LOCKED``), so two workers never both lease one prompt;
- every connection holds a session advisory lock whose number its leases carry: the server drops
  it when the worker's connection dies (``kill -9``, a crash), and a lease whose session lock is
  free is taken over at once. A worker that is gone but whose connection the server still sees
  (a machine that vanished from the network) loses its leases when they expire (server clock,
  so the machines' clocks never matter);
- the send log (machine, PID, status, cost) is written in the answer's transaction: the shared
  ledger ``cultureqa store report`` reads.

The connection runs in autocommit mode with an explicit transaction per write, so a read never
leaves a transaction open on the server.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import tenacity

from cultureqa.core.errors import OPENED_URLS, StoreSchemaError, first_line
from cultureqa.llm.store import (
    IDLE_IN_TRANSACTION_S,
    LEASE_TTL_S,
    Claim,
    RawRow,
    ResponseStore,
    Send,
    StoredResponse,
    payload_text,
    send_of,
    shown,
)

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS responses (
        key TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        model TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'error')),
        payload TEXT NOT NULL,
        created DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS leases (
        key TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        session BIGINT NOT NULL,
        expires DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS leases_session ON leases (session)",
    """CREATE TABLE IF NOT EXISTS sends (
        id BIGSERIAL PRIMARY KEY,
        key TEXT NOT NULL,
        machine TEXT NOT NULL,
        pid INTEGER NOT NULL,
        status TEXT NOT NULL,
        cost_usd DOUBLE PRECISION NOT NULL,
        created DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS sends_key ON sends (key)",
)
_COLUMNS = {
    "responses": {"key", "kind", "model", "status", "payload", "created"},
    "leases": {"key", "owner", "host", "pid", "session", "expires"},
    "sends": {"id", "key", "machine", "pid", "status", "cost_usd", "created"},
}

_RELATIONS = ("responses", "leases", "leases_session", "sends", "sends_key")
"""Every table and index ``_SCHEMA`` creates: when all exist, a store opens without DDL."""

_SCHEMA_LOCK = 0x43515153  # advisory lock numbers of this project ("CQQS", "CQQC")
_CLAIM_LOCK = 0x43515143
_NOW = "extract(epoch from clock_timestamp())"

CONNECT_TIMEOUT_S = 10

log = logging.getLogger(__name__)


def _retry_conflicts() -> tenacity.Retrying:
    """Retry a transaction the server aborted to break a deadlock (it rolled back: safe)."""
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(
            (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)
        ),
        stop=tenacity.stop_after_attempt(5),
        wait=tenacity.wait_random(0.01, 0.1),
        reraise=True,
    )


def ensure_schema(
    conn: psycopg.Connection[Any], lock: int, statements: Sequence[str], relations: Sequence[str]
) -> None:
    """Run ``statements`` (``CREATE … IF NOT EXISTS``) unless every one of ``relations`` exists.

    ``CREATE INDEX IF NOT EXISTS`` takes a SHARE lock on its table even when the index is
    already there. A machine that joined a store in use therefore waited for every open write,
    and a writer that then touched a second table closed a lock cycle: the server aborted one
    of the two, and when that was the newcomer's schema transaction its stage failed at start
    ("deadlock detected"). So the schema is checked first, and again under the advisory lock
    (a machine that waited there finds what the one before it made). DDL runs only where part
    of the schema is missing: a new database, which nobody writes to yet, or one whose table or
    index was dropped by hand.
    """
    if _all_exist(conn, relations):
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
        if _all_exist(conn, relations):
            return
        for statement in statements:
            conn.execute(statement)


def _all_exist(conn: psycopg.Connection[Any], relations: Sequence[str]) -> bool:
    row = conn.execute(
        "SELECT COUNT(*) FROM unnest(%s::text[]) AS r WHERE to_regclass(r) IS NOT NULL",
        (list(relations),),
    ).fetchone()
    return row is not None and row[0] == len(relations)


class PostgresStore(ResponseStore):
    """The response store in a PostgreSQL database, shared by every machine that reaches it."""

    def __init__(self, location: str) -> None:
        self._init_queue()
        self.location = location
        self.url = location
        OPENED_URLS.append(location)
        self._conn = psycopg.connect(
            location,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name=f"cultureqa {self._machine} {os.getpid()}",
        )
        self._conn.execute(  # a frozen worker's open transaction must not lock others out
            "SELECT set_config('idle_in_transaction_session_timeout', %s, false)",
            (str(int(IDLE_IN_TRANSACTION_S * 1000)),),
        )
        self._session = secrets.randbits(62)
        self._conn.execute("SELECT pg_advisory_lock(%s)", (self._session,))
        self._ensure_schema()
        self._host = socket.gethostname()
        self._owners: set[str] = set()

    def __repr__(self) -> str:
        return f"PostgresStore({shown(self.location)!r})"

    def _ensure_schema(self) -> None:
        """Create the tables once; refuse a database whose tables of these names are others'."""
        ensure_schema(self._conn, _SCHEMA_LOCK, _SCHEMA, _RELATIONS)
        found: dict[str, set[str]] = {}
        for table, column in self._conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = ANY(%s)",
            (list(_COLUMNS),),
        ).fetchall():
            found.setdefault(table, set()).add(column)
        for table, columns in _COLUMNS.items():
            if missing := columns - found.get(table, set()):
                raise StoreSchemaError(
                    f"{shown(self.location)}: table {table} lacks columns {sorted(missing)}: "
                    "it is not a cultureqa response store; use another database (or schema "
                    "through ?options=-csearch_path=NAME) for the store"
                )

    # -- reads -------------------------------------------------------------------------------

    def get_many_ok(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Bulk lookup; only successful entries are returned."""
        self._settle()
        with self._lock:
            rows = self._conn.execute(
                "SELECT key, payload FROM responses WHERE status = 'ok' AND key = ANY(%s)",
                (list(keys),),
            ).fetchall()
        return {k: json.loads(p) for k, p in rows}

    def count(self) -> int:
        """Number of stored entries (any status)."""
        self._settle()
        with self._lock:
            row = self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(row[0]) if row else 0

    def leases(self) -> int:
        """Leases held now (by any worker)."""
        with self._lock:
            row = self._conn.execute("SELECT COUNT(*) FROM leases").fetchone()
        return int(row[0]) if row else 0

    def rows(self, batch: int = 2000) -> Iterator[RawRow]:
        """Every stored row, in key order (for ``store copy``)."""
        self._settle()
        last = ""
        while True:
            with self._lock:
                chunk = self._conn.execute(
                    "SELECT key, kind, model, status, payload, created FROM responses "
                    "WHERE key > %s ORDER BY key LIMIT %s",
                    (last, batch),
                ).fetchall()
            if not chunk:
                return
            yield from (RawRow(*r) for r in chunk)
            last = chunk[-1][0]

    def sends(self) -> Iterator[Send]:
        """The send log, oldest first."""
        self._settle()
        with self._lock:
            found = self._conn.execute(
                "SELECT key, machine, pid, status, cost_usd, created FROM sends ORDER BY id"
            ).fetchall()
        return (Send(*r) for r in found)

    # -- writes ------------------------------------------------------------------------------

    def _put_groups(self, groups: Sequence[tuple[Sequence[StoredResponse], str | None]]) -> None:
        """Several ``put`` calls' rows in one transaction: answers, send log, lease release."""
        now, machine, pid = time.time(), self._machine, os.getpid()
        values, sends, released = [], [], []
        for rows, owner in groups:
            for r in rows:
                values.append((r.key, r.kind, r.model, r.status, payload_text(r.payload), now))
                sends.append(send_of(r, machine, now, pid))
                if owner is not None:
                    released.append((r.key, owner))
        if not values:
            return
        values.sort()  # one lock order for every writer: no deadlock between two puts
        with self._lock:
            for attempt in _retry_conflicts():
                with attempt, self._conn.transaction(), self._conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO responses(key, kind, model, status, payload, created) "
                        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET "
                        "status = excluded.status, payload = excluded.payload, "
                        "created = excluded.created WHERE responses.status <> 'ok'",
                        values,
                    )
                    cur.executemany(
                        "INSERT INTO sends(key, machine, pid, status, cost_usd, created) "
                        "VALUES (%s, %s, %s, %s, %s, %s)",
                        sends,
                    )
                    if released:
                        cur.execute(
                            "DELETE FROM leases l USING unnest(%s::text[], %s::text[]) AS r(k, o) "
                            "WHERE l.key = r.k AND l.owner = r.o",
                            ([k for k, _ in released], [o for _, o in released]),
                        )

    def add_raw(self, rows: Sequence[RawRow], sends: Sequence[Send] = ()) -> None:
        """Insert rows as they are (an ok row is never replaced) and log ``sends``."""
        with self._lock, self._conn.transaction(), self._conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO responses(key, kind, model, status, payload, created) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET "
                "status = excluded.status, payload = excluded.payload, "
                "created = excluded.created WHERE responses.status <> 'ok'",
                sorted(rows),
            )
            cur.executemany(
                "INSERT INTO sends(key, machine, pid, status, cost_usd, created) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                list(sends),
            )

    def claim(self, keys: Sequence[str], owner: str, since: float) -> Claim:
        """Lease the unanswered, unleased ``keys`` to ``owner`` in one transaction.

        Claims queue on one advisory lock for their transaction (a few ms each, one per refill
        of a quarter of the in-flight slots). After leasing, the answers are read again: a
        worker that stored an answer and dropped its lease while this claim waited is seen by
        that second read (each statement sees every commit before it), so its key is not sent.
        """
        wanted = sorted(set(keys))
        result = Claim()
        with self._lock:
            self._owners.add(owner)
            self._start_heartbeat()
            for attempt in _retry_conflicts():
                with attempt, self._conn.transaction(), self._conn.cursor() as cur:
                    result = self._claim(cur, wanted, owner, since)
        order = {k: i for i, k in enumerate(keys)}
        result.claimed.sort(key=order.__getitem__)
        return result

    def _claim(self, cur: psycopg.Cursor[Any], keys: list[str], owner: str, since: float) -> Claim:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_CLAIM_LOCK,))
        out = Claim(answered=self._answered(cur, keys, since))
        free = [k for k in keys if k not in out.answered]
        cur.execute(
            "INSERT INTO leases(key, owner, host, pid, session, expires) "
            f"SELECT k, %s, %s, %s, %s, {_NOW} + %s FROM unnest(%s::text[]) AS k "
            "ON CONFLICT (key) DO NOTHING RETURNING key",
            (owner, self._host, os.getpid(), self._session, LEASE_TTL_S, free),
        )
        claimed = {r[0] for r in cur.fetchall()}
        rest = [k for k in free if k not in claimed]
        taken, out.taken_over = self._take_over(cur, rest, owner)
        claimed |= taken
        late = self._answered(cur, sorted(claimed), since)  # stored while this claim waited
        if late:
            cur.execute(
                "DELETE FROM leases WHERE key = ANY(%s) AND owner = %s", (list(late), owner)
            )
            out.answered.update(late)
        out.claimed = [k for k in keys if k in claimed and k not in late]
        out.held = [k for k in rest if k not in taken]
        return out

    def _answered(self, cur: psycopg.Cursor[Any], keys: list[str], since: float) -> dict[str, Any]:
        if not keys:
            return {}
        cur.execute(
            "SELECT key, payload FROM responses WHERE key = ANY(%s) "
            "AND (status = 'ok' OR created >= %s)",
            (keys, since),
        )
        return {k: json.loads(p) for k, p in cur.fetchall()}

    def _take_over(
        self, cur: psycopg.Cursor[Any], keys: list[str], owner: str
    ) -> tuple[set[str], int]:
        """Lease ``keys`` leased before: ours, expired, or held by a session that is gone.

        Rows another transaction is changing (an answer being stored) are skipped: they are
        reported held and claimed again on the next poll, by when they are answered.
        """
        if not keys:
            return set(), 0
        cur.execute(
            f"SELECT key, owner, session, expires < {_NOW} FROM leases WHERE key = ANY(%s) "
            "FOR UPDATE SKIP LOCKED",
            (keys,),
        )
        rows = cur.fetchall()
        others = sorted({s for _, o, s, expired in rows if o != owner and not expired})
        gone: set[int] = set()
        if others:  # the lock is free: its session ended (taken here until this commit)
            cur.execute(
                "SELECT s FROM unnest(%s::bigint[]) AS s WHERE s <> %s "
                "AND pg_try_advisory_xact_lock(s)",
                (others, self._session),
            )
            gone = {r[0] for r in cur.fetchall()}
        take = [k for k, o, s, expired in rows if o == owner or expired or s in gone]
        if not take:
            return set(), 0
        cur.execute(
            f"UPDATE leases SET owner = %s, host = %s, pid = %s, session = %s, "
            f"expires = {_NOW} + %s WHERE key = ANY(%s)",
            (owner, self._host, os.getpid(), self._session, LEASE_TTL_S, take),
        )
        return set(take), sum(o != owner for k, o, _, _ in rows if k in set(take))

    def _renew_leases(self) -> None:
        """The heartbeat: extend this connection's leases, by the server's clock."""
        if self._owners and not (self._conn.closed or self._conn.broken):
            self._conn.execute(
                f"UPDATE leases SET expires = {_NOW} + %s WHERE session = %s",
                (LEASE_TTL_S, self._session),
            )

    def release(self, keys: Sequence[str], owner: str) -> None:
        """Drop ``owner``'s leases on ``keys`` (its requests failed before any answer)."""
        with self._lock:
            self._conn.execute(
                "DELETE FROM leases WHERE key = ANY(%s) AND owner = %s", (list(keys), owner)
            )

    def release_own(self) -> int:
        """Drop every lease this connection holds; returns how many.

        On a connection the server already closed there is nothing to do here: its session
        lock died with it, so other workers take its leases over.
        """
        self._settle()
        with self._lock:
            if not self._owners or self._conn.closed or self._conn.broken:
                return 0
            try:
                cur = self._conn.execute("DELETE FROM leases WHERE session = %s", (self._session,))
            except psycopg.OperationalError as exc:  # the server went away during the run
                log.info("leases not released (%s): others take them over", first_line(exc))
                return 0
            return int(cur.rowcount)

    def _close_connection(self) -> None:
        self._conn.close()
