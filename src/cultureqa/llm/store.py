"""Content-addressed response store (DESIGN.md §4).

Keyed by sha256 of the canonical JSON of everything that changes an answer (backend, model id,
api_base, messages, decoding params, template version) and nothing that does not (retries,
timeouts, concurrency). Each response is committed as it arrives, so a killed run loses at most the
few replies still queued for writing, and a rerun calls the model only for what is missing. SQLite
in WAL mode lets several DVC experiments share one store. Async callers write through one
background thread, so a write never stalls the requests in flight on the event loop.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

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


def request_key(identity: Mapping[str, Any], request: Mapping[str, Any]) -> str:
    """Hash a model identity plus a request; key order and whitespace never matter."""
    canonical = json.dumps(
        {"identity": identity, "request": request},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class StoredResponse(NamedTuple):
    """One row of the store: the request key, what was asked of whom, and the outcome."""

    key: str
    kind: str
    model: str
    status: str
    payload: Mapping[str, Any]


class ResponseStore:
    """A persistent map from request key to the recorded response payload."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._writer: ThreadPoolExecutor | None = None
        self._conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(_SCHEMA)
        self._conn.commit()

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

    def put(self, rows: Sequence[StoredResponse]) -> None:
        """Record responses now, in one transaction (an error never overwrites a success)."""
        now = time.time()
        values = [
            (
                r.key,
                r.kind,
                r.model,
                r.status,
                json.dumps(r.payload, sort_keys=True, ensure_ascii=False),
                now,
            )
            for r in rows
        ]
        with self._lock:
            self._conn.executemany(
                "INSERT INTO responses(key, kind, model, status, payload, created) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                "status = excluded.status, payload = excluded.payload, created = excluded.created "
                "WHERE responses.status != 'ok'",
                values,
            )
            self._conn.commit()

    async def put_async(self, rows: Sequence[StoredResponse]) -> None:
        """``put`` on the store's writer thread; returns once the rows are committed.

        An SQLite commit costs ~0.3 ms; 2,000 of them on the event loop delay every reply
        that arrives meanwhile (measured: active-window efficiency 0.93 → 0.95 at concurrency 32).
        One writer keeps commits in arrival order and off the loop (SQLite releases the GIL
        while it writes). Once submitted, a write completes even if the caller is cancelled.
        """
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="response-store")
        write = functools.partial(self.put, list(rows))
        await asyncio.get_running_loop().run_in_executor(self._writer, write)

    def _settle(self) -> None:
        """Wait for queued writes, so that reads see every write made through this store."""
        if self._writer is not None:
            self._writer.submit(lambda: None).result()

    def count(self) -> int:
        """Number of stored entries (any status)."""
        self._settle()
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Finish pending writes, then close the database connection."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
        with self._lock:
            self._conn.close()
