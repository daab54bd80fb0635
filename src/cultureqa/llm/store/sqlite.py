"""The SQLite response store: the embedded default (one machine, several processes).

SQLite in WAL mode lets several DVC experiments share one store. ``BEGIN IMMEDIATE`` takes the
write lock before a claim reads, so two processes can never both see a key as free. A lease whose
owner died (same host, PID gone) or whose expiry passed is taken over.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from cultureqa.core.errors import OPENED
from cultureqa.llm.store import (
    LEASE_TTL_S,
    Claim,
    RawRow,
    ResponseStore,
    Send,
    StoredResponse,
    parse_location,
    payload_text,
    send_of,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    payload TEXT NOT NULL,
    created REAL NOT NULL
)
"""

_LEASES = """
CREATE TABLE IF NOT EXISTS leases (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires REAL NOT NULL
)
"""

_SENDS = """
CREATE TABLE IF NOT EXISTS sends (
    key TEXT NOT NULL,
    machine TEXT NOT NULL,
    pid INTEGER NOT NULL,
    status TEXT NOT NULL,
    cost_usd REAL NOT NULL,
    created REAL NOT NULL
)
"""


class SqliteStore(ResponseStore):
    """The response store in one SQLite file (WAL): shared by the processes of one machine."""

    def __init__(self, location: str | Path) -> None:
        self._init_queue()
        self.path = Path(parse_location(location) if isinstance(location, str) else location)
        self.location = self.path
        OPENED.add(self.path)  # an error line names the databases this stage opened
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        # WAL with synchronous=NORMAL: a killed process loses no committed row; a power cut may
        # lose the last commits (a rerun sends them again) but never corrupts the file.
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(_SCHEMA)
        self._conn.execute(_LEASES)
        self._conn.execute(_SENDS)
        self._conn.commit()
        self._host = socket.gethostname()
        self._owners: set[str] = set()

    def get_ok(self, key: str) -> dict[str, Any] | None:
        """The stored payload for ``key`` if the stored call succeeded (errors are retried)."""
        self._settle()
        with self._lock:
            row = self._conn.execute(
                "SELECT payload FROM responses WHERE key = ? AND status = 'ok'", (key,)
            ).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def get_many_ok(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Bulk lookup; only successful entries are returned."""
        self._settle()
        found: dict[str, dict[str, Any]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, payload FROM responses WHERE status = 'ok' AND key IN ({marks})",
                    chunk,
                ).fetchall()
                found.update({k: json.loads(p) for k, p in rows})
        return found

    def _put_groups(self, groups: Sequence[tuple[Sequence[StoredResponse], str | None]]) -> None:
        """Several ``put`` calls' rows in one transaction and one commit.

        Each payload is encoded once; each statement is the connection's cached prepared one
        (``sqlite3`` keeps the last 128), bound to the whole batch by one ``executemany``.
        """
        now, machine, pid = time.time(), self._machine, os.getpid()
        rows = [r for group, _ in groups for r in group]
        released = [(r.key, owner) for group, owner in groups if owner is not None for r in group]
        sends = [send_of(r, machine, now, pid) for r in rows]
        values = [(r.key, r.kind, r.model, r.status, payload_text(r.payload), now) for r in rows]
        with self._lock:
            self._conn.executemany(
                "INSERT INTO sends(key, machine, pid, status, cost_usd, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                sends,
            )
            self._conn.executemany(
                "INSERT INTO responses(key, kind, model, status, payload, created) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                "status = excluded.status, payload = excluded.payload, created = excluded.created "
                "WHERE responses.status != 'ok'",
                values,
            )
            if released:
                self._conn.executemany("DELETE FROM leases WHERE key = ? AND owner = ?", released)
            self._conn.commit()

    def claim(self, keys: Sequence[str], owner: str, since: float) -> Claim:
        """Lease the unanswered, unleased ``keys`` to ``owner`` in one write transaction.

        ``BEGIN IMMEDIATE`` takes SQLite's write lock before reading, so two processes can
        never both see a key as free. Errors recorded by others after ``since`` (this run's
        start) count as answered: the other process already paid for them.
        """
        now = time.time()
        result = Claim()
        with self._lock:
            self._owners.add(owner)
            self._start_heartbeat()
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for chunk in _chunks(list(keys)):
                    self._claim_chunk(chunk, owner, since, now, result)
                self._conn.commit()
            except BaseException:
                self._conn.rollback()
                raise
        return result

    def _claim_chunk(
        self, keys: list[str], owner: str, since: float, now: float, out: Claim
    ) -> None:
        marks = ",".join("?" * len(keys))
        rows = self._conn.execute(
            f"SELECT key, payload FROM responses WHERE key IN ({marks}) "
            "AND (status = 'ok' OR created >= ?)",
            [*keys, since],
        ).fetchall()
        out.answered.update({k: json.loads(p) for k, p in rows})
        leases = {
            k: (o, h, p, e)
            for k, o, h, p, e in self._conn.execute(
                f"SELECT key, owner, host, pid, expires FROM leases WHERE key IN ({marks})", keys
            ).fetchall()
        }
        fresh = []
        for key in keys:
            if key in out.answered:
                continue
            lease = leases.get(key)
            if lease is not None and lease[0] != owner and self._lease_live(*lease[1:], now):
                out.held.append(key)
                continue
            out.taken_over += int(lease is not None and lease[0] != owner)
            fresh.append((key, owner, self._host, os.getpid(), now + LEASE_TTL_S))
        self._conn.executemany(
            "INSERT OR REPLACE INTO leases(key, owner, host, pid, expires) VALUES (?, ?, ?, ?, ?)",
            fresh,
        )
        out.claimed.extend(k for k, *_ in fresh)

    def _lease_live(self, host: str, pid: int, expires: float, now: float) -> bool:
        if expires < now:
            return False
        return host != self._host or _pid_alive(pid)

    def _renew_leases(self) -> None:
        """The heartbeat: extend this process's leases (its own transaction)."""
        if self._owners:
            self._conn.execute(
                "UPDATE leases SET expires = ? WHERE host = ? AND pid = ?",
                (time.time() + LEASE_TTL_S, self._host, os.getpid()),
            )
            self._conn.commit()

    def release(self, keys: Sequence[str], owner: str) -> None:
        """Drop ``owner``'s leases on ``keys`` (its requests failed before any answer)."""
        with self._lock:
            self._conn.executemany(
                "DELETE FROM leases WHERE key = ? AND owner = ?", [(k, owner) for k in keys]
            )
            self._conn.commit()

    def release_own(self) -> int:
        """Drop every lease this process holds (its requests ended unanswered); returns count."""
        self._settle()
        with self._lock:
            if not self._owners:
                return 0
            cursor = self._conn.execute(
                "DELETE FROM leases WHERE host = ? AND pid = ?", (self._host, os.getpid())
            )
            self._conn.commit()
            return int(cursor.rowcount)

    def count(self) -> int:
        """Number of stored entries (any status)."""
        self._settle()
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def rows(self, batch: int = 2000) -> Iterator[RawRow]:
        """Every stored row, in key order (for ``store copy``)."""
        self._settle()
        last = ""
        while True:
            with self._lock:
                chunk = self._conn.execute(
                    "SELECT key, kind, model, status, payload, created FROM responses "
                    "WHERE key > ? ORDER BY key LIMIT ?",
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
                "SELECT key, machine, pid, status, cost_usd, created FROM sends ORDER BY rowid"
            ).fetchall()
        return (Send(*r) for r in found)

    def add_raw(self, rows: Sequence[RawRow], sends: Sequence[Send] = ()) -> None:
        """Insert rows as they are (an ok row is never replaced) and log ``sends``."""
        with self._lock:
            self._conn.executemany(
                "INSERT INTO responses(key, kind, model, status, payload, created) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                "status = excluded.status, payload = excluded.payload, created = excluded.created "
                "WHERE responses.status != 'ok'",
                rows,
            )
            self._conn.executemany(
                "INSERT INTO sends(key, machine, pid, status, cost_usd, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                sends,
            )
            self._conn.commit()

    def leases(self) -> int:
        """Leases held now (by any process)."""
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM leases").fetchone()[0])

    def _close_connection(self) -> None:
        self._conn.close()


def _chunks(keys: list[str], size: int = 400) -> list[list[str]]:
    """Key lists small enough for SQLite's bound-parameter limit."""
    return [keys[i : i + size] for i in range(0, len(keys), size)]


def _pid_alive(pid: int) -> bool:
    """Whether a process with this PID exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True
