"""Content-addressed response store (DESIGN.md §4).

Keyed by sha256 of the canonical JSON of everything that changes an answer (backend, model id,
api_base, messages, decoding params, template version) and nothing that does not (retries,
timeouts, concurrency). Each response is committed as it arrives, so a killed run loses nothing it
already paid for, and a rerun calls the model only for what is missing. SQLite in WAL mode lets
several DVC experiments share one store.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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


class ResponseStore:
    """A persistent map from request key to the recorded response payload."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(_SCHEMA)
        self._conn.commit()

    def get_ok(self, key: str) -> dict[str, Any] | None:
        """The stored payload for ``key`` if the stored call succeeded (errors are retried)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT payload FROM responses WHERE key = ? AND status = 'ok'", (key,)
            ).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def get_many_ok(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Bulk lookup; only successful entries are returned."""
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

    def put(self, key: str, kind: str, model: str, status: str, payload: Mapping[str, Any]) -> None:
        """Record one response now (an error never overwrites an earlier success)."""
        text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        with self._lock:
            self._conn.execute(
                "INSERT INTO responses(key, kind, model, status, payload, created) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
                "status = excluded.status, payload = excluded.payload, created = excluded.created "
                "WHERE responses.status != 'ok'",
                (key, kind, model, status, text, time.time()),
            )
            self._conn.commit()

    def count(self) -> int:
        """Number of stored entries (any status)."""
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()
