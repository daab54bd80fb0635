"""The chat client both transports share: retries, breaker, slots, accounting (DESIGN.md §4).

What makes an API evaluation trustworthy lives here once: the tenacity policy of ``retry.py``,
the circuit breaker, the concurrency slots and their ramp-up, the credential check, per-item and
per-run accounting, and building :class:`GenerateResponse`. A transport only turns one request
into one :class:`ChatReply` or raises; two exist:

- ``http`` (:mod:`cultureqa.llm.http_transport`): one pooled aiohttp session, for
  OpenAI-compatible servers (vLLM, SGLang, TGI, llama.cpp server, OpenAI). It never imports
  litellm, whose ~2.5–7 ms of CPU per call caps one event loop near 150 requests/s.
- ``litellm`` (:mod:`cultureqa.llm.litellm_client`): every other provider, and still selectable
  for OpenAI-compatible servers (``options.transport: litellm``).

The transport is not part of a model's store identity: switching it never re-sends answers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from cultureqa.llm.base import (
    NOT_SENT,
    GenerateRequest,
    GenerateResponse,
    LoglikRequest,
    LoglikResponse,
    ModelConfigError,
    UnsupportedOperation,
    Usage,
)
from cultureqa.llm.pricing import worst_case_tokens
from cultureqa.llm.retry import (
    CircuitBreaker,
    EmptyReply,
    RetryConfig,
    WaitRetryAfterOrBackoff,
    fix_hint,
    is_retryable,
    retry_cause,
)
from cultureqa.runlock import stop_requested
from cultureqa.spend import BUDGET, BUDGET_REASON

log = logging.getLogger(__name__)

Transport = Literal["http", "litellm"]


@dataclass(frozen=True)
class ChatConfig:
    """What the client needs; built from a ``conf/model/*.yaml`` entry."""

    model_id: str
    litellm_model: str
    """litellm's model string; the ``http`` transport sends the part after the provider prefix
    (``hosted_vllm/Qwen/Qwen2.5-7B-Instruct`` is served as ``Qwen/Qwen2.5-7B-Instruct``)."""
    api_base: str | None = None
    api_key_env: str | None = None
    transport: Transport = "litellm"
    concurrency: int = 8
    ramp_up_s: float = 0.16
    """Open the ``concurrency`` slots one at a time over this many seconds (``_open_slots``);
    0.16 s measured best on ``bench/eval_throughput.py`` at concurrency 16 and 32; 0 opens all."""
    drop_params: bool = True
    extra_params: dict[str, Any] = field(default_factory=dict)
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    retry: RetryConfig = field(default_factory=RetryConfig)

    @property
    def served_model(self) -> str:
        """The model name an OpenAI-compatible server knows (provider prefix removed)."""
        prefix, _, name = self.litellm_model.partition("/")
        return name or prefix


@dataclass(frozen=True)
class ChatReply:
    """The scored part of one successful HTTP exchange; ``cost_usd`` None: price it here."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None


class ChatTransport(Protocol):
    """One request, one reply: everything around it (retries, slots, counting) is the core's."""

    async def prepare(self) -> None:
        """Load what the first request needs (before the ramp-up clock starts)."""
        ...

    def check_credentials(self) -> None:
        """Raise :class:`MissingKey` for a provider whose key variables are all unset."""
        ...

    async def send(self, request: GenerateRequest, api_key: str | None) -> ChatReply:
        """One HTTP request; raises on any failure (``EmptyReply`` for empty content)."""
        ...

    def price(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD for these token counts; ``ModelConfigError`` when the price is unknown."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


@dataclass
class ClientStats:
    """What the client did, for run.json: nothing retried, skipped or stopped goes unreported."""

    sent: int = 0
    """HTTP requests made (first attempts and retries): the run's ``model_calls``."""
    ok: int = 0
    empty: int = 0
    """Items answered with empty content after ``retry.empty_attempts`` (status ok, text "")."""
    retries: Counter[str] = field(default_factory=Counter)
    """Retries by cause (``retry.RETRY_CAUSES``: 429, 5xx, timeout, malformed, empty, ...)."""
    failed: Counter[str] = field(default_factory=Counter)
    """Items that ended in an error, by exception class (after retries)."""
    not_sent: int = 0
    """Items not sent: the breaker had opened or the stage was stopping (a rerun sends them)."""
    stopped: str | None = None
    """Why the breaker opened: status, provider message and fix, in one line."""

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form."""
        return {
            "sent": self.sent,
            "ok": self.ok,
            "empty": self.empty,
            "retries": sum(self.retries.values()),
            "retries_by_cause": dict(sorted(self.retries.items())),
            "failed_by_cause": dict(sorted(self.failed.items())),
            "not_sent": self.not_sent,
            "stopped": self.stopped,
        }


@dataclass
class _Item:
    """One item's accounting while it is being sent."""

    start: float = field(default_factory=time.perf_counter)
    attempts: int = 0
    empties: int = 0
    retries: Counter[str] = field(default_factory=Counter)
    wait_s: float = 0.0
    server_latency_s: float = 0.0

    def response(self, text: str | None, usage: Usage | None = None, **kw: Any) -> GenerateResponse:
        """The item's response with its accounting; ``latency_s`` is the whole time it took."""
        return GenerateResponse(
            text=text,
            usage=usage or Usage(),
            latency_s=time.perf_counter() - self.start,
            attempts=self.attempts,
            retries_by_cause=dict(sorted(self.retries.items())),
            server_latency_s=self.server_latency_s,
            wait_s=self.wait_s,
            **kw,
        )


class ChatClient:
    """Async chat client: per-model slots, our tenacity policy, per-item records and accounting."""

    supports_loglik = False

    def __init__(self, config: ChatConfig) -> None:
        self.config = config
        self._slots = max(1, config.concurrency)
        ramped = config.ramp_up_s > 0 and self._slots > 1
        self._semaphore = asyncio.Semaphore(1 if ramped else self._slots)
        self._ramp_task: asyncio.Task[None] | None = None  # held: the loop keeps weak refs only
        self._ramp_pending = ramped
        self._checked = False
        self.stats = ClientStats()
        self.breaker = CircuitBreaker(config.retry.breaker_after)
        self._wait = WaitRetryAfterOrBackoff(config.retry)
        self.transport = make_transport(config)

    @property
    def model_id(self) -> str:
        """Display id."""
        return self.config.model_id

    @property
    def requests_sent(self) -> int:
        """HTTP requests made so far: what ``model_calls`` reports for API models."""
        return self.stats.sent

    @property
    def max_in_flight(self) -> int:
        """Requests the cache layer should lease at once: every slot busy, one wave queued."""
        return 2 * self._slots

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        """Send all requests concurrently (bounded by the slots)."""
        await self.transport.prepare()  # before the first wave: the ramp clock starts after it
        self.check_credentials()
        if BUDGET.capped:
            self.transport.price(1, 1)  # an unknown price stops the stage before any request
        if self._ramp_pending:
            self._ramp_pending = False
            self._ramp_task = asyncio.create_task(self._open_slots())
        if len(requests) == 1:  # the cache layer's chunk: no gather, no extra task per request
            return [await self._one(requests[0])]
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def loglik(self, requests: Sequence[LoglikRequest]) -> list[LoglikResponse]:
        """Chat APIs expose no prompt log-likelihoods; MCQ uses generation instead."""
        raise UnsupportedOperation(
            f"{self.model_id}: log-likelihood is not available over chat APIs"
        )

    async def aclose(self) -> None:
        """Close the transport's connections."""
        await self.transport.aclose()

    def check_credentials(self) -> None:
        """Fail before the first request when a key is missing (never retried, never sent).

        A variable named by ``api_key_env`` must be set; otherwise the transport checks (litellm
        names a hosted provider's variables; a self-hosted server with no variable is keyless).
        """
        if self._checked:
            return
        if self.config.api_key_env:
            self._api_key()
        else:
            self.transport.check_credentials()
        self._checked = True

    async def _one(self, request: GenerateRequest) -> GenerateResponse:
        item = _Item()
        try:
            try:  # most requests succeed at once: they skip tenacity's per-call cost (~0.1 ms)
                reply = await self._attempt(request, item)
            except Exception as exc:
                if self.config.retry.attempts <= 1 or not self._should_retry(exc, item):
                    raise
                reply = await self._retry(request, item, exc)
            return item.response(reply.text, self._usage(reply))
        except NotSent as exc:
            self.stats.not_sent += 1
            return GenerateResponse(text=None, status="error", error=str(exc))
        except EmptyReply as exc:  # retried enough: an answer of nothing, scored as such
            self.stats.empty += 1
            usage = self._usage(exc.reply) if isinstance(exc.reply, ChatReply) else Usage()
            return item.response("", usage)
        except Exception as exc:  # recorded per item; the run goes on (DESIGN.md §4)
            self.stats.failed[type(exc).__name__] += 1
            message = f"{type(exc).__name__}: {_first_line(exc)}"
            return item.response(None, status="error", error=message)

    async def _retry(self, request: GenerateRequest, item: _Item, first: Exception) -> ChatReply:
        """Attempts 2.. under the tenacity policy, which takes ``first`` as attempt 1's outcome."""
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.retry.attempts),
            wait=self._wait,
            retry=retry_if_exception(lambda exc: self._should_retry(exc, item)),
            before_sleep=lambda state: self._count_retry(state, item),
            reraise=True,
        )
        pending: Exception | None = first
        async for attempt in retrying:
            with attempt:
                if pending is not None:
                    failed, pending = pending, None
                    raise failed
                return await self._attempt(request, item)
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    async def _attempt(self, request: GenerateRequest, item: _Item) -> ChatReply:
        """One HTTP request in a slot, unless the breaker is open; feeds the breaker either way."""
        queued = time.perf_counter()
        async with self._semaphore:
            item.wait_s += time.perf_counter() - queued
            if self.breaker.is_open:
                raise NotSent(f"{NOT_SENT}{self.stats.stopped}")
            if stop_requested():
                raise NotSent(f"{NOT_SENT}the stage is stopping (signal or parent gone)")
            worst = self._worst_case(request)
            if not await BUDGET.reserve(worst):
                raise NotSent(f"{NOT_SENT}{BUDGET_REASON} (worst case ${worst:.6f} does not fit)")
            self.stats.sent += 1
            item.attempts += 1
            started = time.perf_counter()
            cost = 0.0  # a failed request is not billed
            try:
                reply = await self.transport.send(request, self._key_or_none())
                cost = self._usage(reply).cost_usd
            except EmptyReply as exc:
                if isinstance(exc.reply, ChatReply):  # an empty answer is still billed
                    cost = self._usage(exc.reply).cost_usd
                item.empties += 1
                item.server_latency_s = time.perf_counter() - started
                self.breaker.success()  # the server answered
                raise
            except Exception as exc:
                self.breaker.failure(exc)
                if self.breaker.is_open and self.stats.stopped is None:
                    self._stop()
                raise
            finally:
                BUDGET.settle(worst, cost)
            item.server_latency_s = time.perf_counter() - started
        self.breaker.success()
        self.stats.ok += 1
        return reply

    def _should_retry(self, exc: BaseException, item: _Item) -> bool:
        if self.breaker.is_open:
            return False
        if isinstance(exc, EmptyReply):
            return item.empties < self.config.retry.empty_attempts
        return is_retryable(exc)

    def _count_retry(self, state: RetryCallState, item: _Item) -> None:
        cause = retry_cause(state.outcome.exception() if state.outcome else None)
        item.retries[cause] += 1
        self.stats.retries[cause] += 1
        item.wait_s += state.upcoming_sleep

    def _worst_case(self, request: GenerateRequest) -> float:
        """The most ``request`` can cost (0 when no budget cap is set: nothing to reserve)."""
        if not BUDGET.capped:
            return 0.0
        return self.transport.price(*worst_case_tokens(request))

    def _usage(self, reply: ChatReply) -> Usage:
        cost = reply.cost_usd
        if cost is None:
            cost = reply.prompt_tokens * (self.config.input_cost_per_token or 0.0)
            cost += reply.completion_tokens * (self.config.output_cost_per_token or 0.0)
        return Usage(reply.prompt_tokens, reply.completion_tokens, float(cost))

    def _stop(self) -> None:
        """Record why the breaker opened, and say it once, loudly (the rest is not sent)."""
        assert self.breaker.trip is not None
        status, message = self.breaker.trip
        key_env = self.config.api_key_env
        hint = fix_hint(status, self.config.litellm_model, self.config.api_base, key_env)
        what = f"HTTP {status}" if status else "no connection"
        self.stats.stopped = (
            f"{self.model_id}: stopped after {self.breaker.consecutive} consecutive failures "
            f"({what}): {_scrub(message, key_env)}; fix: {hint}"
        )
        log.warning("circuit breaker open, sending nothing more: %s", self.stats.stopped)

    async def _open_slots(self) -> None:
        """Ramp up: open one more slot every ``ramp_up_s / concurrency`` until all are open.

        Requests that leave together come back together, and the client then parses their
        replies one after another while every slot waits; against steady latency that lockstep
        lasts for many rounds. Opening the slots apart desynchronises them once, and spares the
        provider a burst at start-up.
        """
        opened = 1
        try:
            while opened < self._slots:
                await asyncio.sleep(self.config.ramp_up_s / self._slots)
                self._semaphore.release()
                opened += 1
        finally:  # cancelled because its loop ended first: leave no slot closed
            for _ in range(self._slots - opened):
                self._semaphore.release()

    def _key_or_none(self) -> str | None:
        return self._api_key() if self.config.api_key_env else None

    def _api_key(self) -> str:
        variable = self.config.api_key_env or ""
        key = os.environ.get(variable, "")
        if key:
            return key
        raise MissingKey(
            f"model '{self.model_id}': options.api_key_env names {variable}, which is not set; "
            f"export {variable} (or set api_key_env: null for a server without keys)"
        )


def make_transport(config: ChatConfig) -> ChatTransport:
    """The configured transport; litellm's module is imported only when it is chosen."""
    if config.transport == "http":
        from cultureqa.llm.http_transport import HttpTransport

        return HttpTransport(config)
    if config.transport == "litellm":
        from cultureqa.llm.litellm_client import LitellmTransport

        return LitellmTransport(config)
    raise ModelConfigError(
        f"model '{config.model_id}': options.transport must be http or litellm, "
        f"not {config.transport!r}"
    )


class MissingKey(ModelConfigError):
    """A provider key variable is unset: checked before the first request, never retried."""


class NotSent(RuntimeError):
    """The breaker is open or the stage is stopping: this request is not sent."""


def _scrub(message: str, key_env: str | None) -> str:
    """The provider's message without the key, should a provider echo it."""
    key = os.environ.get(key_env or "", "")
    return message.replace(key, "***") if len(key) >= 8 else message


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""
