"""The chat client both transports share: retries, breaker, slots, accounting (DESIGN.md §4).

What makes an API evaluation trustworthy lives here once: the tenacity policy of ``retry.py``,
the circuit breaker, the concurrency slots and their ramp-up, the credential check, per-item and
per-run accounting, and building :class:`GenerateResponse`. A transport only turns one request
into one :class:`ChatReply` or raises; three exist:

- ``http`` (:mod:`cultureqa.llm.api.http_transport`): one pooled aiohttp session, for
  OpenAI-compatible servers (vLLM, SGLang, TGI, llama.cpp server, OpenAI). It never imports
  litellm, whose ~2.5–7 ms of CPU per call caps one event loop near 150 requests/s.
- ``litellm`` (:mod:`cultureqa.llm.api.litellm_client`): every other provider, and still selectable
  for OpenAI-compatible servers (``options.transport: litellm``).
- ``wire`` (:mod:`cultureqa.llm.api.wire_transport`): hosted providers that speak OpenAI's protocol;
  litellm routes, maps parameters, prices and counts once, the ``http`` path sends.

The transport is not part of a model's store identity: switching it never re-sends answers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence

from cultureqa.core.runlock import stop_reason, stop_requested
from cultureqa.core.spend import BUDGET, BUDGET_REASON
from cultureqa.llm.api.retry import (
    CallStats,
    CircuitBreaker,
    EmptyReply,
    ItemCount,
    RetryLoop,
    fix_hint,
)
from cultureqa.llm.api.transport import (
    ChatConfig,
    ChatReply,
    ChatTransport,
    MissingKey,
    Transport,
)
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
from cultureqa.llm.pricing import estimated_tokens, worst_case_tokens

__all__ = ["ChatClient", "ChatConfig", "ChatReply", "MissingKey", "NotSent", "Transport"]

log = logging.getLogger(__name__)


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
        self.stats = CallStats()
        self.breaker = CircuitBreaker(config.retry.breaker_after)
        self.retrying = RetryLoop(config.retry, self.stats, self.breaker)
        self.transport = make_transport(config)
        imports = getattr(self.transport, "litellm_imports", None)
        if imports is not None:  # the wire transport counts what made it import litellm
            self.stats.litellm_imported_for = imports

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
        item = ItemCount()
        try:
            text, usage = await self.retrying.run(lambda: self._attempt(request, item), item)
            return item.response(text, usage)
        except NotSent as exc:
            self.stats.not_sent += 1
            return GenerateResponse(text=None, status="error", error=str(exc))
        except EmptyReply as exc:  # retried enough: an answer of nothing, scored as such
            self.stats.empty += 1
            return item.response("", exc.usage)
        except Exception as exc:  # recorded per item; the run goes on (DESIGN.md §4)
            self.retrying.failed(exc)
            message = _scrub(f"{type(exc).__name__}: {_first_line(exc)}", self._keys())
            return item.response(None, status="error", error=message)

    async def _attempt(self, request: GenerateRequest, item: ItemCount) -> tuple[str, Usage]:
        """One HTTP request in a slot, unless the breaker is open; feeds the breaker either way."""
        queued = time.perf_counter()
        async with self._semaphore:
            item.wait_s += time.perf_counter() - queued
            if self.breaker.is_open:
                raise NotSent(f"{NOT_SENT}{self.stats.stopped}")
            if stop_requested():
                raise NotSent(f"{NOT_SENT}{stop_reason()}")
            worst = self._worst_case(request)
            if not await BUDGET.reserve(worst):
                raise NotSent(f"{NOT_SENT}{BUDGET_REASON} (worst case ${worst:.6f} does not fit)")
            self.stats.sent += 1
            item.attempts += 1
            started = time.perf_counter()
            cost = 0.0  # a failed request is not billed
            try:
                reply = await self.transport.send(request, self._key_or_none())
                usage = self._usage(reply, request)
                cost = usage.cost_usd
            except EmptyReply as exc:
                if isinstance(exc.reply, ChatReply):  # an empty answer is still billed
                    exc.usage = self._usage(exc.reply, request)
                    cost = exc.usage.cost_usd
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
        return reply.text, usage

    def _worst_case(self, request: GenerateRequest) -> float:
        """The most ``request`` can cost (0 when no budget cap is set: nothing to reserve)."""
        if not BUDGET.capped:
            return 0.0
        return self.transport.price(*worst_case_tokens(request))

    def _usage(self, reply: ChatReply, request: GenerateRequest) -> Usage:
        """What the reply cost; a reply without ``usage`` is charged by counting its tokens.

        Counted by the model's own tokenizer where the transport knows it, else bounded from
        above (:func:`cultureqa.llm.pricing.estimated_tokens`); never charged at 0, so a budget
        cap holds against servers that send no usage. Each estimate is counted by method.
        """
        if reply.has_usage and (reply.prompt_tokens or reply.completion_tokens):
            prompt, completion = reply.prompt_tokens or 0, reply.completion_tokens or 0
            cost = reply.cost_usd
            estimated = ""
        else:
            counted = self.transport.count_tokens(request, reply.text)
            prompt, completion, estimated = (
                (counted.prompt_tokens, counted.completion_tokens, counted.method)
                if counted is not None
                else estimated_tokens(request, reply.text)
            )
            cost = None  # a provider's cost of a reply it reported no tokens for is no bill
            self.stats.usage_estimated[estimated] += 1
        if cost is None:
            cost = self._price(prompt, completion)
        return Usage(prompt, completion, float(cost), estimated)

    def _price(self, prompt: int, completion: int) -> float:
        if self.config.input_cost_per_token is not None:
            out = self.config.output_cost_per_token or 0.0
            return prompt * self.config.input_cost_per_token + completion * out
        try:
            return self.transport.price(prompt, completion)
        except ModelConfigError:  # no price known and no cap set: the tokens are still counted
            return 0.0

    def _stop(self) -> None:
        """Record why the breaker opened, and say it once, loudly (the rest is not sent)."""
        assert self.breaker.trip is not None
        status, message = self.breaker.trip
        key_env = self.config.api_key_env
        hint = fix_hint(status, self.config.litellm_model, self.config.api_base, key_env)
        what = f"HTTP {status}" if status else "no connection"
        self.stats.stopped = (
            f"{self.model_id}: stopped after {self.breaker.consecutive} consecutive failures "
            f"({what}): {_scrub(message, self._keys())}; fix: {hint}"
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

    def _keys(self) -> tuple[str, ...]:
        """Every key a request of this client may carry, none of which may reach a record.

        The declared variables' and the one the transport found itself (litellm's reading of a
        provider's variable on ``wire``): an item's error, the run record and the log see ``***``.
        """
        named = (self.config.api_key_env, self.config.wire_key_env)
        found = (os.environ.get(name, "") for name in named if name)
        own = getattr(self.transport, "sent_key", None) or ""
        return tuple(key for key in (*found, own) if key)

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
        from cultureqa.llm.api.http_transport import HttpTransport

        return HttpTransport(config)
    if config.transport == "litellm":
        from cultureqa.llm.api.litellm_client import LitellmTransport

        return LitellmTransport(config)
    if config.transport == "wire":
        from cultureqa.llm.api.wire_transport import WireTransport

        return WireTransport(config)
    raise ModelConfigError(
        f"model '{config.model_id}': options.transport must be http, litellm or wire, "
        f"not {config.transport!r}"
    )


class NotSent(RuntimeError):
    """The breaker is open or the stage is stopping: this request is not sent."""


def _scrub(message: str, keys: tuple[str, ...]) -> str:
    """The provider's message without any key, should a provider echo one."""
    for key in keys:
        if len(key) >= 8:  # shorter is no real key, and would blank ordinary words
            message = message.replace(key, "***")
    return message


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""
