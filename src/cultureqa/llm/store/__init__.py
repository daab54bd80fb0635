"""Content-addressed response store (DESIGN.md §4): the interface, and where the store lives.

Keyed by sha256 of the canonical JSON of everything that changes an answer (backend, model id,
api_base, messages, decoding params, template version) and nothing that does not (retries,
timeouts, concurrency). Each response is committed as it arrives, so a killed run loses at most the
few replies still queued for writing, and a rerun calls the model only for what is missing.

Requests in flight are *leased* (owner, host, PID, expiry), so two processes on one store never
send the same unanswered prompt: the second waits for the first's answer. A lease whose owner died
or whose expiry passed is taken over. Every stored answer is also logged as one *send* (machine,
PID, status, cost): that log is the ledger ``cultureqa store report`` reads to show requests per
machine and prompts paid twice.

Two backends share this interface. :func:`open_store` opens the one a location names:
a path (or ``sqlite:///path``) opens SQLite (:mod:`cultureqa.llm.store.sqlite`, the embedded
default: one machine, several processes); ``postgresql://…`` opens PostgreSQL
(:mod:`cultureqa.llm.store.pg`: a team on several machines). :func:`store_location` says which a
stage uses (``CULTUREQA_STORE_URL``). Async callers write through one background thread, so a
write never stalls the requests in flight on the event loop.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import os
import socket
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeGuard

from cultureqa.core.errors import StoreLocationError as StoreLocationError  # re-exported
from cultureqa.core.errors import StoreSchemaError as StoreSchemaError
from cultureqa.core.errors import shown as shown
from cultureqa.core.paths import state_dir

StoreLocation = Path | str
"""A SQLite file (a path) or a PostgreSQL URL (``postgresql://user@host:port/db``)."""

STORE_URL_ENV = "CULTUREQA_STORE_URL"
MACHINE_ENV = "CULTUREQA_MACHINE"

LEASE_TTL_S = float(os.environ.get("CULTUREQA_LEASE_TTL_S") or 60.0)
"""How long a lease outlives its owner's last heartbeat. A worker renews its leases every
:data:`RENEW_EVERY_S` from a thread of its own, whatever its requests are doing (a reply may
take minutes), so only a worker that stopped running (frozen with SIGSTOP, a closed laptop, a
paused VM) or that lost the store loses them, one lease period after its last heartbeat: the
others then send its prompts. (A worker that died loses its leases at once.)
``CULTUREQA_LEASE_TTL_S`` changes it."""

RENEW_EVERY_S = LEASE_TTL_S / 4
"""The heartbeat: three beats may be late before a lease expires."""

IDLE_IN_TRANSACTION_S = LEASE_TTL_S / 2
"""PostgreSQL ends a store session that waits this long inside an open transaction. A worker
frozen mid-write (SIGSTOP between two statements of a put or a heartbeat) would otherwise keep
its row locks for good, and another machine taking over its leases would wait on them forever;
ended, the session frees its locks and its advisory lock, and its leases are taken over at once.
A running worker never waits inside a transaction: each is a few statements sent back to back."""

log = logging.getLogger(__name__)

_PG_SCHEMES = ("postgresql://", "postgres://")
_SQLITE_SCHEME = "sqlite:///"


def parse_location(text: str) -> StoreLocation:
    """A path for ``sqlite:///path`` or a plain path; the URL itself for PostgreSQL."""
    if text.startswith(_PG_SCHEMES):
        return text
    if text.startswith(_SQLITE_SCHEME):  # as SQLAlchemy: sqlite:///relative, sqlite:////absolute
        return Path(text[len(_SQLITE_SCHEME) :])
    if "://" in text:
        raise StoreLocationError(
            f"{text.split('://')[0]}://…: not a response store URL; use sqlite:///path/to/"
            "responses.sqlite or postgresql://user@host:port/database"
        )
    return Path(text)


def store_location() -> StoreLocation:
    """The store a stage uses: ``CULTUREQA_STORE_URL``, else ``<state dir>/responses.sqlite``.

    An environment variable, not a ``conf/`` key: the URL names a server of one team (and its
    user), which must not enter params hashes or be committed with a password.
    """
    url = os.environ.get(STORE_URL_ENV, "").strip()
    return parse_location(url) if url else state_dir() / "responses.sqlite"


def machine_name() -> str:
    """The name a send is logged under: ``CULTUREQA_MACHINE``, else the host name."""
    return os.environ.get(MACHINE_ENV, "").strip() or socket.gethostname()


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


class RawRow(NamedTuple):
    """A stored row as the tables hold it (payload as JSON text): what ``store copy`` moves."""

    key: str
    kind: str
    model: str
    status: str
    payload: str
    created: float


class Send(NamedTuple):
    """One logged send: which machine and process stored an answer for ``key``, and its cost."""

    key: str
    machine: str
    pid: int
    status: str
    cost_usd: float
    created: float


@dataclass
class Claim:
    """Outcome of :meth:`ResponseStore.claim` for a set of keys."""

    claimed: list[str] = field(default_factory=list)
    """Leased to the caller now: it sends these."""
    answered: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Answered meanwhile (ok, or an error recorded since ``since`` by another process)."""
    held: list[str] = field(default_factory=list)
    """Leased by another live process: wait and claim again."""
    taken_over: int = 0
    """Leases taken from dead or expired owners."""


_PAYLOAD_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False)
"""``json.dumps(payload, sort_keys=True, ensure_ascii=False)``'s encoder, built once: ``dumps``
with options builds a new encoder per call, a fifth of the writer thread's JSON time."""


def payload_text(payload: Mapping[str, Any]) -> str:
    """The stored JSON of a payload (sorted keys: equal payloads are equal text)."""
    return _PAYLOAD_ENCODER.encode(payload)


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, dict) or isinstance(value, Mapping)  # noqa: SIM101 (dict first: fast)


def send_of(row: StoredResponse, machine: str, now: float, pid: int | None = None) -> Send:
    """The ledger entry of a stored answer (its cost from the reply's usage, 0 when unpriced).

    ``pid`` defaults to this process's; a writer logging a batch passes it once. Payloads are
    plain dicts: checked first, since ``isinstance`` against the ``Mapping`` ABC costs more.
    """
    payload = row.payload
    usage = payload.get("usage") if _is_mapping(payload) else None
    cost = usage.get("cost_usd", 0.0) if _is_mapping(usage) else 0.0
    return Send(
        row.key, machine, os.getpid() if pid is None else pid, row.status, float(cost or 0.0), now
    )


def open_store(location: StoreLocation) -> ResponseStore:
    """The backend ``location`` names: PostgreSQL for a ``postgresql://`` URL, else SQLite."""
    if isinstance(location, str):
        location = parse_location(location)
    if isinstance(location, str):
        from cultureqa.llm.store.pg import PostgresStore

        return PostgresStore(location)
    from cultureqa.llm.store.sqlite import SqliteStore

    return SqliteStore(location)


class ResponseStore(ABC):
    """A persistent map from request key to the recorded response payload.

    :func:`open_store` opens the backend for a location; each backend implements the abstract
    storage methods, and all share the write queue below.
    """

    location: StoreLocation

    def _init_queue(self) -> None:
        self._lock = threading.Lock()
        self._writer: ThreadPoolExecutor | None = None
        self._queued: list[tuple[list[StoredResponse], str | None, asyncio.Future[None]]] = []
        self._flush_task: asyncio.Task[None] | None = None
        self._machine = machine_name()
        self._beat: threading.Thread | None = None
        self._beat_stop = threading.Event()
        self._kept_taken = False

    # -- storage: each backend implements these ------------------------------------------------

    def get_ok(self, key: str) -> dict[str, Any] | None:
        """The stored payload for ``key`` if the stored call succeeded (errors are retried)."""
        return self.get_many_ok([key]).get(key)

    @abstractmethod
    def get_many_ok(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Bulk lookup; only successful entries are returned."""

    def put(self, rows: Sequence[StoredResponse], owner: str | None = None) -> None:
        """Record responses now, in one transaction (an error never overwrites a success).

        With ``owner``, the leases that owner holds on these keys are released in the same
        transaction, so no other process ever sees a key neither answered nor leased.
        """
        self._put_groups([(rows, owner)])

    @abstractmethod
    def _put_groups(self, groups: Sequence[tuple[Sequence[StoredResponse], str | None]]) -> None:
        """Several ``put`` calls' rows in one transaction and one commit."""

    @abstractmethod
    def claim(self, keys: Sequence[str], owner: str, since: float) -> Claim:
        """Lease the unanswered, unleased ``keys`` to ``owner`` in one write transaction.

        Errors recorded by others after ``since`` (this run's start) count as answered: the
        other process already paid for them.
        """

    @abstractmethod
    def release(self, keys: Sequence[str], owner: str) -> None:
        """Drop ``owner``'s leases on ``keys`` (its requests failed before any answer)."""

    @abstractmethod
    def release_own(self) -> int:
        """Drop every lease this process holds (its requests ended unanswered); returns count."""

    @abstractmethod
    def count(self) -> int:
        """Number of stored entries (any status)."""

    @abstractmethod
    def rows(self, batch: int = 2000) -> Iterator[RawRow]:
        """Every stored row, in key order (for ``store copy``)."""

    @abstractmethod
    def sends(self) -> Iterator[Send]:
        """The send log (for ``store report`` and ``store copy``)."""

    @abstractmethod
    def add_raw(self, rows: Sequence[RawRow], sends: Sequence[Send] = ()) -> None:
        """Insert rows as they are (an ok row is never replaced) and log ``sends``: a copy."""

    @abstractmethod
    def leases(self) -> int:
        """Leases held now (by any process): nonzero while some worker has requests out."""

    @abstractmethod
    def _renew_leases(self) -> None:
        """Extend every lease this process holds by :data:`LEASE_TTL_S` (called under the lock)."""

    @abstractmethod
    def _close_connection(self) -> None:
        """Close the backend's connection (the write queue is drained first)."""

    def take_kept(self) -> int:
        """Store the answers an earlier run kept locally when this store failed (once per open).

        See :mod:`cultureqa.llm.store.unstored`; returns how many were stored.
        """
        if self._kept_taken:
            return 0
        self._kept_taken = True
        from cultureqa.llm.store.unstored import store_kept

        return store_kept(self)

    # -- shared: the lease heartbeat -------------------------------------------------------------

    def _start_heartbeat(self) -> None:
        """Renew this process's leases every :data:`RENEW_EVERY_S` until :meth:`close`.

        A thread, not a task of the event loop: a loop busy with thousands of replies, or a
        request that takes minutes, never delays a beat. Started by the first claim.
        """
        if self._beat is None:
            self._beat = threading.Thread(
                target=self._heartbeat, name="lease-heartbeat", daemon=True
            )
            self._beat.start()

    def _heartbeat(self) -> None:
        while not self._beat_stop.wait(RENEW_EVERY_S):
            try:
                with self._lock:
                    self._renew_leases()
            except Exception as exc:  # the store is gone: the stage's next call reports it
                log.info("lease heartbeat stopped (%s); others take the leases over", exc)
                return

    def _stop_heartbeat(self) -> None:
        self._beat_stop.set()
        if self._beat is not None:
            self._beat.join(timeout=10)

    # -- shared: the async write queue ---------------------------------------------------------

    async def claim_async(self, keys: Sequence[str], owner: str, since: float) -> Claim:
        """``claim`` on the writer thread (after this store's queued writes)."""
        call = functools.partial(self.claim, list(keys), owner, since)
        return await asyncio.get_running_loop().run_in_executor(self._executor(), call)

    def _executor(self) -> ThreadPoolExecutor:
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="response-store")
        return self._writer

    async def put_async(self, rows: Sequence[StoredResponse], owner: str | None = None) -> None:
        """``put`` on the store's writer thread; returns once the rows are committed.

        An SQLite commit costs ~0.3 ms; 2,000 of them on the event loop delay every reply
        that arrives meanwhile (measured: active-window efficiency 0.93 → 0.95 at concurrency 32).
        One writer keeps commits in arrival order and off the loop (SQLite and psycopg release
        the GIL while they write). Once queued, a write completes even if the caller is cancelled.

        Rows that arrive while a write runs are committed together by the next one: at 4,000
        requests × 256 in flight, a commit per reply kept the writer thread busy enough to slow
        the event loop (``bench/eval_throughput.py``); each caller still returns only once its
        own rows are committed.
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._queued.append((list(rows), owner, done))
        task = self._flush_task
        if task is None or task.done() or task.get_loop() is not loop:
            self._flush_task = asyncio.create_task(self._flush())
        await done

    async def _flush(self) -> None:
        """Write queued rows, batch after batch, until the queue is empty."""
        loop = asyncio.get_running_loop()
        try:
            while self._queued:
                batch, self._queued = self._queued, []
                groups = [(rows, owner) for rows, owner, _ in batch]
                try:
                    await loop.run_in_executor(self._executor(), self._put_groups, groups)
                except Exception as exc:  # every waiting caller gets the error
                    _settle_all([f for *_, f in batch], exc)
                    continue
                _settle_all([f for *_, f in batch], None)
        finally:
            self._flush_task = None

    def _settle(self) -> None:
        """Wait for queued writes, so that reads see every write made through this store."""
        if self._writer is not None:
            self._writer.submit(lambda: None).result()

    def close(self) -> None:
        """Finish pending writes, release this process's leases, close the connection."""
        self._stop_heartbeat()
        try:
            self.release_own()
        finally:
            if self._writer is not None:
                self._writer.shutdown(wait=True)
                self._writer = None
            with self._lock:
                self._close_connection()

    def __enter__(self) -> ResponseStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _settle_all(futures: list[asyncio.Future[None]], error: Exception | None) -> None:
    """Resolve the callers' futures (a cancelled caller's future is left alone)."""
    for future in futures:
        if future.done():
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)
