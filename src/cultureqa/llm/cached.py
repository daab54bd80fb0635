"""Wrap any :class:`ModelClient` with the response store.

The wrapper, not each backend, owns caching, so baselines, the local model and every API provider
get the same zero-call reruns and crash safety. Misses are sent in chunks (1 request per chunk for
concurrent API clients, ``chunk_size`` for batching local models) and each chunk is stored the
moment it completes.

Every miss is leased in the store just before it is sent (at most ``max_in_flight`` at a time,
so two processes on one store split the work); a key leased by another live process is not
sent again: this client waits for that answer and takes it over only if its owner dies or its
lease expires. Concurrent calls (the evaluation engine runs a stage's settings together) take
turns at sending, in the order they were made, and a call that waits on other processes' leases
gives up its turn while it waits: a frozen machine holding some prompts of one setting delays
that setting alone, never the prompts of the others.

Two hooks sit at the point where a request would leave: the budget
(:data:`cultureqa.core.spend.BUDGET`: the client reserves each request's worst case before
sending; once one does not fit, the rest come back ``not sent: budget`` without being leased,
never stored) and the dry run (:data:`DRY_RUN`: ``cultureqa cost`` sees every request a stage
builds, and which the store holds, and nothing is sent or leased).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from cultureqa.core.runlock import StageInterrupted, stop_requested, stop_sending
from cultureqa.core.spend import BUDGET, BUDGET_REASON, LEDGER
from cultureqa.llm.base import (
    NOT_SENT,
    GenerateRequest,
    GenerateResponse,
    LoglikRequest,
    LoglikResponse,
    Message,
    ModelClient,
    Usage,
)
from cultureqa.llm.store import ResponseStore, StoredResponse, request_key
from cultureqa.llm.store.unstored import keep, unstored_file

log = logging.getLogger(__name__)

_BUDGET_NOT_SENT = f"{NOT_SENT}{BUDGET_REASON}"

Req = TypeVar("Req", GenerateRequest, LoglikRequest)
Resp = TypeVar("Resp", GenerateResponse, LoglikResponse)
ProgressHook = Callable[[Sequence[Any]], None]
PromptCheck = Callable[[GenerateRequest], str | None]
PlanHook = Callable[["CachedClient", str, Sequence[Any], list[str], Mapping[str, Any]], None]

DRY_RUN: ContextVar[PlanHook | None] = ContextVar("cultureqa_dry_run", default=None)
"""Set by the dry run: each batch's (client, kind, requests, keys, stored answers) goes to the
hook and every miss comes back ``not sent: dry run``, so stages build their requests through
their own code while nothing is sent, leased or stored."""


def not_sent(kind: str, reason: str) -> GenerateResponse | LoglikResponse:
    """The placeholder answer of a request that was not sent (never stored)."""
    if kind == "loglik":
        return LoglikResponse(logprobs=(), status="error", error=f"{NOT_SENT}{reason}")
    return GenerateResponse(text=None, status="error", error=f"{NOT_SENT}{reason}")


_RESPONSE_FIELDS = tuple(f.name for f in dataclasses.fields(GenerateResponse))
_GENERATE_FIELDS = tuple(f.name for f in dataclasses.fields(GenerateRequest))
_LOGLIK_FIELDS = tuple(f.name for f in dataclasses.fields(LoglikRequest))
_MESSAGE_FIELDS = tuple(f.name for f in dataclasses.fields(Message))
_USAGE_FIELDS = tuple(f.name for f in dataclasses.fields(Usage))


def generate_to_payload(resp: GenerateResponse) -> dict[str, Any]:
    """Serialize a generation response for the store: ``dataclasses.asdict``'s result.

    Built by hand because ``asdict`` deep-copies every value: with the accounting fields it cost
    ~10% of the client's CPU at 4,000 requests × 256 in flight (``bench/eval_throughput.py``).
    """
    out = {name: getattr(resp, name) for name in _RESPONSE_FIELDS}
    usage = resp.usage
    out["usage"] = {name: getattr(usage, name) for name in _USAGE_FIELDS}
    out["retries_by_cause"] = dict(resp.retries_by_cause)
    return out


def request_fields(request: GenerateRequest | LoglikRequest) -> dict[str, Any]:
    """What a request's store key hashes: ``dataclasses.asdict``'s result, without its copies.

    Every field is taken, so a field added to a request type enters its key, as with ``asdict``
    (``tests/llm/test_chat_client.py`` compares the two).
    """
    if isinstance(request, LoglikRequest):
        return {name: getattr(request, name) for name in _LOGLIK_FIELDS}
    out = {name: getattr(request, name) for name in _GENERATE_FIELDS}
    out["messages"] = [{f: getattr(m, f) for f in _MESSAGE_FIELDS} for m in request.messages]
    return out


def payload_to_generate(payload: Mapping[str, Any]) -> GenerateResponse:
    """Rebuild a stored generation response, marked as cached and free.

    No request is made for a hit: ``attempts``, retries and ``wait_s`` are 0. The latencies
    are the stored answer's own (how long the server took to produce it), as ``latency_s`` was.
    """
    usage = Usage(**payload.get("usage", {}))
    return GenerateResponse(
        text=payload.get("text"),
        status=payload.get("status", "ok"),
        error=payload.get("error"),
        usage=usage,
        latency_s=float(payload.get("latency_s", 0.0)),
        cached=True,
        server_latency_s=float(payload.get("server_latency_s", 0.0)),
    )


def payload_to_loglik(payload: Mapping[str, Any]) -> LoglikResponse:
    """Rebuild a stored log-likelihood response, marked as cached."""
    return LoglikResponse(
        logprobs=tuple(payload["logprobs"]),
        token_counts=tuple(payload.get("token_counts", ())),
        status=payload.get("status", "ok"),
        error=payload.get("error"),
        latency_s=float(payload.get("latency_s", 0.0)),
        cached=True,
    )


@dataclass
class CacheStats:
    """What the cache layer did, for run.json (hits, sends, and every wait or takeover)."""

    hits: int = 0
    sent: int = 0
    duplicates: int = 0
    """Requests identical to another in the same batch: sent once, answer shared."""
    answered_elsewhere: int = 0
    """Answers (or errors) another process recorded while this one waited for them."""
    lease_waits: int = 0
    """Polls spent waiting for keys leased by another live process."""
    leases_taken_over: int = 0
    """Leases taken from owners that died or stopped renewing."""
    not_sent_budget: int = 0
    """Requests held back because the budget cap was reached (a rerun sends them)."""
    prompt_too_long: int = 0
    """Requests refused before pricing or sending: the prompt is over the model's limit."""
    kept_locally: int = 0
    """Answers that arrived after the response store failed, kept in the local file."""
    stored_from_file: int = 0
    """Answers an earlier run kept locally (its store had failed), stored by this run."""


class CachedClient:
    """A ModelClient that answers from the store first and records every new answer."""

    def __init__(
        self,
        inner: ModelClient,
        store: ResponseStore,
        identity: Mapping[str, Any],
        chunk_size: int = 1,
        on_progress: ProgressHook | None = None,
        poll_s: float = 0.25,
        prompt_guard: PromptCheck | None = None,
        ledger: str | None = None,
        persist: bool = True,
    ) -> None:
        self.inner = inner
        self.persist = persist
        """False for clients that call no model (baselines): answered directly, nothing stored."""
        self.prompt_guard = prompt_guard
        """Refuses a generation request before it is priced or sent (``llm.door``: too long)."""
        self.ledger = ledger
        """Name under which :meth:`aclose` records this client in ``core.spend.LEDGER``."""
        self.store = store
        self.identity = dict(identity)
        self.chunk_size = max(1, chunk_size)
        self.on_progress = on_progress
        self.on_last_round: Callable[[], None] | None = None
        """Called at each reply once what is left to send fits in the in-flight limit and no
        other call waits to send: only the last round trips remain, and the engine prepares
        what follows the replies while the client mostly waits (never before a first reply)."""
        self.poll_s = poll_s
        self.stats = CacheStats()
        self.owner = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._in_flight_limit: int | None = getattr(inner, "max_in_flight", None)
        self.budget_stopped: str | None = None
        """The budget's stop message, once this client held requests back for it."""
        self._turn_lock: asyncio.Lock | None = None
        self._turn_loop: asyncio.AbstractEventLoop | None = None
        self._awaiting_turn = 0
        """Calls waiting for the sending turn (each with requests still to send)."""

    @property
    def calls(self) -> int:
        """Requests actually sent (0 on a fully cached rerun): ``model_calls`` in run records.

        For an HTTP client that is its request count (retries included, items the breaker kept
        back excluded); for other backends, the requests passed to them.
        """
        if not self.persist:
            return 0  # a baseline computes its answers: it calls no model
        sent = getattr(self.inner, "requests_sent", None)
        return int(sent) if isinstance(sent, int) else self.stats.sent

    @property
    def model_id(self) -> str:
        """The wrapped client's display id."""
        return self.inner.model_id

    @property
    def supports_loglik(self) -> bool:
        """Whether the wrapped client can score continuations."""
        return self.inner.supports_loglik

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        """Answer from the store, sending only misses to the model."""
        return await self._run(
            "generate", requests, self.inner.generate, generate_to_payload, payload_to_generate
        )

    async def loglik(self, requests: Sequence[LoglikRequest]) -> list[LoglikResponse]:
        """Score from the store, sending only misses to the model."""
        return await self._run(
            "loglik", requests, self.inner.loglik, dataclasses.asdict, payload_to_loglik
        )

    async def aclose(self) -> None:
        """Close the wrapped client and record its counters (the store is owned by the caller)."""
        try:
            await self.inner.aclose()
        finally:
            if self.ledger is not None:
                LEDGER.record(self.ledger, self)

    async def _run(
        self,
        kind: str,
        requests: Sequence[Req],
        send: Callable[[Sequence[Req]], Awaitable[list[Resp]]],
        to_payload: Callable[[Resp], dict[str, Any]],
        from_payload: Callable[[Mapping[str, Any]], Resp],
    ) -> list[Resp]:
        identity = {**self.identity, "kind": kind}
        keys = [request_key(identity, request_fields(r)) for r in requests]
        if not self.persist:
            return await self._unstored(kind, requests, keys, send)
        async with self._sending_turn():  # one call sends at a time: max_in_flight holds
            batch = _Batch(kind, requests, keys, send, to_payload, from_payload, {})
            first = self._look_up(batch)
            if first is None:  # the dry run: nothing sent
                dry: dict[str, Any] = batch.answers
                return [dry[k] if k in dry else not_sent(kind, "dry run") for k in keys]  # type: ignore[misc]
            since = time.time()
            held = await self._send_all(batch, list(first), first, since)
        while held:  # leased by another live process: its answer lands in the store
            if self.stats.lease_waits % max(1, int(30 / self.poll_s)) == 0:
                log.info("waiting for %d prompts another process is sending", len(held))
            self.stats.lease_waits += 1
            await asyncio.sleep(self.poll_s)  # without the turn: other calls send meanwhile
            async with self._sending_turn():
                held = await self._send_all(batch, held, first, since)
        if self.stats.not_sent_budget:
            self.budget_stopped = BUDGET.message(self.stats.not_sent_budget)
        return [batch.answers[k] for k in keys]

    @asynccontextmanager
    async def _sending_turn(self) -> AsyncIterator[None]:
        """Hold the sending turn; while waiting for it, this call counts as still to send."""
        turn = self._turn()
        self._awaiting_turn += 1
        try:
            await turn.acquire()
        finally:
            self._awaiting_turn -= 1
        try:
            yield
        finally:
            turn.release()

    def _turn(self) -> asyncio.Lock:
        """The sending turn of the running event loop.

        A lock binds to the loop that first waits on it, and a client may serve one
        ``asyncio.run`` after another: each loop gets its own.
        """
        loop = asyncio.get_running_loop()
        if self._turn_lock is None or self._turn_loop is not loop:
            self._turn_lock, self._turn_loop = asyncio.Lock(), loop
        return self._turn_lock

    def _look_up(self, batch: _Batch[Req, Resp]) -> dict[str, int] | None:
        """Answer what the store holds; return each miss's first index (None in a dry run).

        Runs inside the sending turn, so a call sees every answer the calls before it stored.
        """
        kind, requests, keys = batch.kind, batch.requests, batch.keys
        self.stats.stored_from_file += self.store.take_kept()
        stored = self.store.get_many_ok(keys)
        self.stats.hits += sum(k in stored for k in keys)
        first: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key not in stored:
                first.setdefault(key, i)
        self.stats.duplicates += sum(k not in stored for k in keys) - len(first)
        answers = batch.answers
        answers.update({k: batch.from_payload(p) for k, p in stored.items()})
        refused = self._refuse(kind, requests, first, answers)
        if (plan := DRY_RUN.get()) is not None:
            kept = [i for i, k in enumerate(keys) if k not in refused]
            plan(self, kind, [requests[i] for i in kept], [keys[i] for i in kept], stored)
            return None
        hits: list[Any] = [answers[k] for k in keys if k in answers]
        if hits and self.on_progress:
            self.on_progress(hits)
        return first

    async def _unstored(
        self,
        kind: str,
        requests: Sequence[Req],
        keys: list[str],
        send: Callable[[Sequence[Req]], Awaitable[list[Resp]]],
    ) -> list[Resp]:
        """Answer a client that calls no model (baselines) in chunks; store nothing.

        Its answers cost nothing and are recomputed identically, so storing them would only
        fill the store. The dry run still sees its requests (to send, at no cost).
        """
        if (plan := DRY_RUN.get()) is not None:
            plan(self, kind, requests, keys, {})
        out: list[Resp] = []
        for start in range(0, len(requests), self.chunk_size):
            replies = await send(requests[start : start + self.chunk_size])
            self.stats.sent += len(replies)
            out.extend(replies)
            if self.on_progress:
                self.on_progress(replies)
        return out

    def _refuse(
        self, kind: str, requests: Sequence[Any], first: dict[str, int], answers: dict[str, Any]
    ) -> set[str]:
        """Answer the misses the prompt guard refuses with its reason (an item error, counted).

        They leave ``first`` (never leased, priced or sent) and are not stored: the guard
        decides again on every run, from the configuration of that run.
        """
        if self.prompt_guard is None or kind != "generate":
            return set()
        refused: dict[str, GenerateResponse] = {}
        for key, index in first.items():
            reason = self.prompt_guard(requests[index])
            if reason is not None:
                refused[key] = GenerateResponse(text=None, status="error", error=reason)
        for key in refused:
            del first[key]
        self.stats.prompt_too_long += len(refused)
        answers.update(refused)
        if refused and self.on_progress:
            self.on_progress(list(refused.values()))
        return set(refused)

    async def _send_all(
        self, batch: _Batch[Req, Resp], pending: list[str], first: dict[str, int], since: float
    ) -> list[str]:
        """Lease and send ``pending``, ``max_in_flight`` at most; return keys others hold.

        Keys are leased in one store transaction per refill (a quarter of the slots free, or
        none in flight), not one per request: the writer thread stays off the critical path.
        """
        queue = list(pending)
        held: list[str] = []
        limit = self._in_flight_limit or len(queue)  # chunks in flight
        refill = max(1, limit // 4)
        running: set[asyncio.Task[None]] = set()
        finished: list[asyncio.Task[None]] = []
        wake = asyncio.Event()

        def on_done(task: asyncio.Task[None]) -> None:  # O(1) per reply, unlike asyncio.wait
            running.discard(task)
            finished.append(task)
            wake.set()

        failure: BaseException | None = None
        # A claim queued behind a failed write meets a connection already broken, and its error
        # may not carry the cause (PostgreSQL: "cannot exit pipeline mode while busy"), so a
        # chunk's own failure to store its answers is raised before a claim's.
        claim_failure: BaseException | None = None
        while queue or running:
            room = limit - len(running)
            if queue and failure is None and (room >= refill or not running):
                if BUDGET.exhausted:
                    self._hold_back(batch, queue)
                    queue = []
                    continue
                if stop_requested():
                    failure = StageInterrupted(
                        "stopped by a signal (or the parent process died); answers received so "
                        "far are in the response store, so a rerun sends only the rest"
                    )
                    queue = []
                    continue
                take, queue = queue[: room * self.chunk_size], queue[room * self.chunk_size :]
                try:
                    claimed = await self._claim(batch, take, since, held)
                except Exception as exc:  # the store failed (its server went away): stop
                    self._store_failed()  # sending; the chunks in flight end first
                    claim_failure, queue = exc, []
                    continue
                for s in range(0, len(claimed), self.chunk_size):
                    chunk = claimed[s : s + self.chunk_size]
                    task = asyncio.create_task(self._send_chunk(batch, chunk, first))
                    running.add(task)
                    task.add_done_callback(on_done)
                continue
            try:
                await wake.wait()
            except asyncio.CancelledError:  # another setting's call failed: the replies on the
                if running:  # wire are paid for, so they are stored (or kept) before it ends
                    await asyncio.wait(set(running))
                _first_failure(finished)
                raise
            wake.clear()
            last_round = len(queue) <= limit * self.chunk_size and not self._awaiting_turn
            if last_round and self.on_last_round is not None:
                self.on_last_round()
            failure = _first_failure(finished, failure)
            if failure is not None:
                queue = []  # stop leasing; let the chunks in flight store their answers
        failure = _first_failure(finished, failure) or claim_failure
        if failure is not None:
            raise failure
        return held

    async def _claim(
        self, batch: _Batch[Req, Resp], keys: list[str], since: float, held: list[str]
    ) -> list[str]:
        """Lease ``keys``; take answers that landed meanwhile; note keys others hold."""
        claim = await self.store.claim_async(keys, self.owner, since)
        self.stats.leases_taken_over += claim.taken_over
        held.extend(claim.held)
        if claim.answered:
            self.stats.answered_elsewhere += len(claim.answered)
            landed = [batch.from_payload(p) for p in claim.answered.values()]
            batch.answers.update(zip(claim.answered, landed, strict=True))
            if self.on_progress:
                self.on_progress(landed)
        return claim.claimed

    def _hold_back(self, batch: _Batch[Req, Resp], keys: list[str]) -> None:
        """The budget is spent: answer ``keys`` as not sent (counted; a rerun sends them)."""
        self.stats.not_sent_budget += len(keys)
        held = [not_sent(batch.kind, BUDGET_REASON) for _ in keys]
        batch.answers.update(zip(keys, held, strict=True))  # type: ignore[arg-type]
        if self.on_progress:
            self.on_progress(held)

    async def _send_chunk(
        self, batch: _Batch[Req, Resp], chunk: list[str], first: dict[str, int]
    ) -> None:
        """Send leased keys, store the answers and release the leases in one transaction."""
        if BUDGET.exhausted:  # reached while this chunk waited its turn: free its leases
            self.store.release(chunk, self.owner)
            self._hold_back(batch, chunk)
            return
        self.stats.sent += len(chunk)
        try:
            replies = await batch.send([batch.requests[first[k]] for k in chunk])
        except BaseException:  # nothing to store: free the keys for whoever comes next
            self.store.release(chunk, self.owner)
            raise
        self.stats.not_sent_budget += sum(
            (r.error or "").startswith(_BUDGET_NOT_SENT) for r in replies
        )  # refused by the client's reservation (it charges what the others cost)
        rows, unsent = [], []
        for key, answer in zip(chunk, replies, strict=True):
            batch.answers[key] = answer
            if (answer.error or "").startswith(NOT_SENT):  # no call made: nothing to record
                unsent.append(key)
                continue
            rows.append(
                StoredResponse(
                    key, batch.kind, self.model_id, answer.status, batch.to_payload(answer)
                )
            )
        try:
            await self.store.put_async(rows, owner=self.owner)
        except Exception:  # the store failed: these answers were paid for; keep them here
            self._keep(rows)
            raise
        if unsent:
            self.store.release(unsent, self.owner)
        if self.on_progress:
            self.on_progress(replies)

    def _store_failed(self) -> None:
        """Send nothing more: requests queued for a slot come back not sent, with this reason."""
        stop_sending(
            "the response store failed; answers of requests already sent are kept in "
            f"{unstored_file(self.store.location)} and the next run stores them"
        )

    def _keep(self, rows: list[StoredResponse]) -> None:
        """Append answers the failed store could not take to the local file (counted)."""
        self._store_failed()
        if rows:
            path = keep(self.store.location, rows)
            self.stats.kept_locally += len(rows)
            log.warning("the response store failed: %d answers kept in %s", len(rows), path)


def _first_failure(
    tasks: list[asyncio.Task[None]], earlier: BaseException | None = None
) -> BaseException | None:
    """``earlier``, else the first exception among finished tasks (the list is emptied).

    Every task's exception is read, even once a failure is known, so asyncio never logs one
    as "never retrieved" (the chunks still in flight when the store's server went away).
    """
    errors = [t.exception() for t in tasks if not t.cancelled()]
    tasks.clear()
    return earlier or next((e for e in errors if e is not None), None)


@dataclass
class _Batch(Generic[Req, Resp]):
    """One ``_run`` call's requests, their keys, and where answers go."""

    kind: str
    requests: Sequence[Req]
    keys: list[str]
    send: Callable[[Sequence[Req]], Awaitable[list[Resp]]]
    to_payload: Callable[[Resp], dict[str, Any]]
    from_payload: Callable[[Mapping[str, Any]], Resp]
    answers: dict[str, Resp]
