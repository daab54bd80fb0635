"""Several servers of one served model (replicas) behind one :class:`ModelClient` (issue 14).

A self-hosted open model is often served by several vLLM/SGLang/TGI processes. The pool wraps one
client per ``api_base`` and sends each request to the replica with the fewest outstanding
requests, so a faster replica takes more of the load without any weights to tune.

Retries live here, not in the wrapped clients: each wrapped client makes exactly one attempt, and
the pool runs the one retry loop of ``llm/api/retry.py`` (the chat client's own) around a routing
step, so an attempt that failed on one replica is retried on another; retries and failures are
counted by cause in the same :class:`~cultureqa.llm.api.retry.CallStats` the chat client keeps.
A replica that fails with a transient cause (connection refused, 5xx, timeout, 429) is backed
off: excluded for an exponentially growing cool-down, then probed with a single request; a
success makes it healthy again. Nothing about a backed-off replica fails the run, and every
period is counted and logged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tenacity import RetryCallState

from cultureqa.llm.api.retry import (
    CallStats,
    CircuitBreaker,
    ItemCount,
    RetryConfig,
    RetryLoop,
    WaitRetryAfterOrBackoff,
    fix_hint,
    hopeless_cause,
    hopeless_status,
    is_retryable_cause,
    record_cause,
)
from cultureqa.llm.base import (
    NOT_SENT,
    GenerateRequest,
    GenerateResponse,
    LoglikRequest,
    LoglikResponse,
    ModelClient,
    UnsupportedOperation,
)

log = logging.getLogger(__name__)

NEVER_TRIPS = 10**9
"""``breaker_after`` for the wrapped clients: one dead replica must not stop its client for good
(the pool keeps the breaker, for failures every replica shares)."""


EMPTY_CAUSE = "EmptyReply"
"""The cause of an attempt answered with no text, whether the wrapped client reports it as an
``EmptyReply`` error or as an ``ok`` reply without text. It is retried like any transient failure
but says nothing about the replica's health (never backs it off), and once the attempts are spent
the item comes back as ``ok`` with empty text: scorers count it as ``empty``, not as an error."""


def single_attempt(retry: RetryConfig) -> RetryConfig:
    """The retry config of a wrapped client: one attempt, no breaker (the pool does both)."""
    return dataclasses.replace(retry, attempts=1, breaker_after=NEVER_TRIPS)


@dataclass
class ReplicaStats:
    """One replica's counts, for run.json and MLflow."""

    sent: int = 0
    """Attempts routed to this replica."""
    ok: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    """Failed attempts by cause (``retry.CAUSES``)."""
    backoffs: int = 0
    """Backed-off periods (each one a cool-down after a transient failure)."""
    backoff_s: float = 0.0
    """Seconds of cool-down those periods imposed, summed."""

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form."""
        return {
            "sent": self.sent,
            "ok": self.ok,
            "failed_by_cause": dict(sorted(self.failed.items())),
            "backoffs": self.backoffs,
            "backoff_s": round(self.backoff_s, 3),
        }


@dataclass
class PoolStats(CallStats):
    """The chat client's counters (``retry.CallStats``) plus one block per replica."""

    replicas: dict[str, ReplicaStats] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The keys every API client reports (sent, ok, retries, …) and one entry per replica."""
        return super().as_dict() | {
            "replicas": {base: r.as_dict() for base, r in self.replicas.items()}
        }


@dataclass
class _Replica:
    """One wrapped client and its health: outstanding requests and cool-down state."""

    api_base: str
    client: ModelClient
    slots: int
    """Requests this replica runs at once (the model's ``concurrency``); the rest wait in the
    pool, so each freed slot goes to whichever request is next, on whichever replica freed it."""
    stats: ReplicaStats = field(default_factory=ReplicaStats)
    outstanding: int = 0
    level: int = 0
    """Consecutive backed-off periods without a success (0: healthy)."""
    until: float = 0.0
    """``time.monotonic()`` at which the current cool-down ends."""

    def available(self, now: float) -> bool:
        """A free slot, and healthy or cooled down (then one probe at a time)."""
        return now >= self.until and self.outstanding < (self.slots if self.level == 0 else 1)


class _AttemptFailed(RuntimeError):
    """A wrapped client's error record, raised so tenacity can decide on another attempt."""

    def __init__(self, response: GenerateResponse) -> None:
        error = response.error or "model error"
        super().__init__(error)
        self.response = response
        self.name = error.split(":", 1)[0].strip() or "UnknownError"
        """The exception class the wrapped client recorded."""
        self.cause = record_cause(error)
        """Its cause (``retry.CAUSES``), as the wrapped client would have counted it."""
        self.status_code = hopeless_cause(self.name)
        """Read by :func:`hopeless_status`, so the breaker judges it like the original."""


class _NotSent(RuntimeError):
    """The breaker is open or the stage is stopping: this request is not sent."""

    def __init__(self, response: GenerateResponse) -> None:
        super().__init__(response.error)
        self.response = response


class ReplicaPool:
    """A ModelClient over several replicas of one served model (least outstanding requests)."""

    supports_loglik = False

    def __init__(
        self,
        model_id: str,
        api_bases: Sequence[str],
        make_client: Callable[[str], ModelClient],
        retry: RetryConfig,
        slots: int = 8,
        key_env: str | None = None,
    ) -> None:
        if not api_bases:
            raise ValueError(f"model '{model_id}': options.api_base is an empty list")
        duplicates = sorted({b for b in api_bases if list(api_bases).count(b) > 1})
        if duplicates:
            raise ValueError(f"model '{model_id}': options.api_base repeats {duplicates}")
        self._model_id = model_id
        self._key_env = key_env  # named in the breaker's fix hint, never read here
        self.retry = retry
        self._replicas = [_Replica(b, make_client(b), max(1, slots)) for b in api_bases]
        self.stats = PoolStats(replicas={r.api_base: r.stats for r in self._replicas})
        self.breaker = CircuitBreaker(retry.breaker_after)
        self._backoff = WaitRetryAfterOrBackoff(retry)
        self.retrying = RetryLoop(
            retry, self.stats, self.breaker, self._retryable, _cause_of, self._wait
        )
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def model_id(self) -> str:
        """Display id."""
        return self._model_id

    @property
    def requests_sent(self) -> int:
        """HTTP requests made on every replica (retries included): the run's ``model_calls``."""
        return sum(r.stats.sent for r in self._replicas)

    @property
    def max_in_flight(self) -> int:
        """Requests the cache layer should lease at once: every slot busy, one wave queued."""
        return 2 * sum(r.slots for r in self._replicas)

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        """Answer every request, each attempt on the least-loaded available replica."""
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def loglik(self, requests: Sequence[LoglikRequest]) -> list[LoglikResponse]:
        """Chat replicas expose no prompt log-likelihoods; MCQ uses generation instead."""
        raise UnsupportedOperation(f"{self.model_id}: no log-likelihoods over chat replicas")

    async def aclose(self) -> None:
        """Close every wrapped client."""
        for replica in self._replicas:
            await replica.client.aclose()

    async def _one(self, request: GenerateRequest) -> GenerateResponse:
        item = ItemCount()
        try:
            reply = await self.retrying.run(lambda: self._attempt(request, item), item)
            return item.settle(reply)
        except _NotSent as exc:
            self.stats.not_sent += 1
            return exc.response
        except _AttemptFailed as exc:
            if exc.cause == "empty":
                self.stats.empty += 1
                return item.settle(GenerateResponse("", usage=exc.response.usage))
            self.retrying.failed(exc)
            return item.settle(exc.response)

    async def _attempt(self, request: GenerateRequest, item: ItemCount) -> GenerateResponse:
        """One attempt on one replica; a failure backs the replica off when it is transient."""
        if self.breaker.is_open:
            raise _NotSent(GenerateResponse(None, "error", f"{NOT_SENT}{self.stats.stopped}"))
        queued = time.perf_counter()
        replica = await self._pick()
        item.wait_s += time.perf_counter() - queued
        replica.outstanding += 1
        replica.stats.sent += 1
        self.stats.sent += 1
        try:
            [reply] = await replica.client.generate([request])
        finally:
            replica.outstanding -= 1
            self._wake(1)
        if (reply.error or "").startswith(NOT_SENT):
            replica.stats.sent -= 1  # the wrapped client made no call
            self.stats.sent -= 1
            raise _NotSent(reply)
        item.add(reply)
        self._merge_hints()
        if reply.usage.estimated_by:
            self.stats.usage_estimated[reply.usage.estimated_by] += 1
        if reply.status == "ok" and not (reply.text or "").strip():
            reply = GenerateResponse(None, "error", f"{EMPTY_CAUSE}: no text", reply.usage)
        if reply.status == "ok":
            if replica.level:  # recovered: every slot is free again
                replica.level = 0
                self._wake(replica.slots)
            replica.stats.ok += 1
            self.stats.ok += 1
            self.breaker.success()
            return reply
        failure = _AttemptFailed(reply)
        replica.stats.failed[failure.cause] += 1
        if is_retryable_cause(failure.name) and failure.cause != "empty":
            self._back_off(replica, failure.name)
        self._feed_breaker(failure)
        raise failure

    async def _pick(self) -> _Replica:
        """The available replica with the fewest outstanding requests; wait while none is."""
        while True:
            now = time.monotonic()
            ready = [r for r in self._replicas if r.available(now)]
            if ready:
                return min(ready, key=lambda r: r.outstanding)
            cooling = [r.until - now for r in self._replicas if r.until > now]
            timeout = min(cooling) if cooling else None  # else: a finished request ends it
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await asyncio.wait_for(waiter, timeout)
            except TimeoutError:
                pass
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def _wake(self, count: int) -> None:
        """Wake ``count`` waiting requests, oldest first: one per freed slot.

        Waking every waiter on each reply would cost O(waiters) per reply; a woken request
        that finds no slot (a newcomer took it) simply waits again.
        """
        while count > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                count -= 1

    def _back_off(self, replica: _Replica, cause: str) -> None:
        """Start a cool-down, doubling per period without a success; one per period.

        Failures of requests that were already in flight when the period began do not extend
        it: a burst of refused connections is one period, not one per request.
        """
        now = time.monotonic()
        if now < replica.until:
            return
        replica.level += 1
        seconds = min(self.retry.max_wait_s, self.retry.initial_wait_s * 2 ** (replica.level - 1))
        replica.until = now + seconds
        replica.stats.backoffs += 1
        replica.stats.backoff_s += seconds
        log.warning(
            "replica %s of %s backed off for %.2f s after %s (period %d, %d in a row)",
            replica.api_base,
            self.model_id,
            seconds,
            cause,
            replica.stats.backoffs,
            replica.level,
        )

    def _feed_breaker(self, failure: _AttemptFailed) -> None:
        """Count failures every replica would share: 4xx always, no connection only fleet-wide.

        One replica refusing connections is what backing off is for; the breaker hears of it
        only while every replica's latest attempt failed, i.e. when nothing answers anywhere.
        """
        status = hopeless_status(failure)
        if status is None:
            return
        if status == 0 and self._any_healthy():
            return
        self.breaker.failure(failure)
        if self.breaker.trip is not None and self.stats.stopped is None:
            what = f"HTTP {status}" if status else "no connection"
            bases = ", ".join(r.api_base for r in self._replicas)
            self.stats.stopped = (
                f"{self.model_id}: stopped after {self.breaker.consecutive} consecutive failures "
                f"({what}) on replicas {bases}: {failure.response.error}; "
                f"fix: {fix_hint(status, self.model_id, bases, self._key_env)}"
            )
            log.warning("circuit breaker open, sending nothing more: %s", self.stats.stopped)

    def _merge_hints(self) -> None:
        """The replicas' ``Retry-After`` counts: only their clients see the servers' headers."""
        inner = [s for s in (_stats(r.client) for r in self._replicas) if isinstance(s, CallStats)]
        seen = [s.retry_after_max_s for s in inner if s.retry_after_max_s is not None]
        self.stats.retry_after_max_s = max(seen) if seen else None
        self.stats.retry_after_capped = sum(s.retry_after_capped for s in inner)

    def _retryable(self, exc: BaseException) -> bool:
        """A transient failure of one attempt: another replica (or a later try) may succeed."""
        return isinstance(exc, _AttemptFailed) and is_retryable_cause(exc.name)

    def _any_healthy(self) -> bool:
        """Whether some replica has not failed since its last success (busy or not)."""
        return any(r.level == 0 for r in self._replicas)

    def _wait(self, state: RetryCallState) -> float:
        """No wait while a healthy replica remains (routing waits for a slot); else backoff."""
        return 0.0 if self._any_healthy() else self._backoff(state)


def _stats(client: ModelClient) -> object:
    return getattr(client, "stats", None)


def _cause_of(exc: BaseException | None) -> str:
    """The cause of a failed attempt, from the wrapped client's record of it."""
    return exc.cause if isinstance(exc, _AttemptFailed) else "other"
