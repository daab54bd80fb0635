"""Every API provider and OpenAI-compatible server, through litellm (DESIGN.md §4).

litellm is imported lazily: it costs seconds to import, and most of the code base never needs it.
Keys come from the environment only (litellm reads each provider's variables; ``api_key_env``
names a variable for custom servers) and never enter params, logs, MLflow or the store.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

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
from cultureqa.llm.retry import (
    CircuitBreaker,
    EmptyReply,
    RetryConfig,
    WaitRetryAfterOrBackoff,
    fix_hint,
    is_retryable,
)
from cultureqa.runlock import stop_requested

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LitellmConfig:
    """What the client needs; built from a ``conf/model/*.yaml`` entry."""

    model_id: str
    litellm_model: str
    api_base: str | None = None
    api_key_env: str | None = None
    concurrency: int = 8
    ramp_up_s: float = 0.16
    """Open the ``concurrency`` slots one at a time over this many seconds (``_open_slots``);
    0.16 s measured best on ``bench/eval_throughput.py`` at concurrency 16 and 32; 0 opens all."""
    drop_params: bool = True
    extra_params: dict[str, Any] = field(default_factory=dict)
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    retry: RetryConfig = field(default_factory=RetryConfig)


@dataclass
class ClientStats:
    """What the client did, for run.json: nothing retried, skipped or stopped goes unreported."""

    sent: int = 0
    """HTTP requests made (first attempts and retries)."""
    ok: int = 0
    retries: Counter[str] = field(default_factory=Counter)
    """Retries by the exception class that caused them."""
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
            "retries": sum(self.retries.values()),
            "retries_by_cause": dict(sorted(self.retries.items())),
            "failed_by_cause": dict(sorted(self.failed.items())),
            "not_sent": self.not_sent,
            "stopped": self.stopped,
        }


class LitellmClient:
    """Async chat client: per-model semaphore, our tenacity policy, per-item error records."""

    supports_loglik = False

    def __init__(self, config: LitellmConfig) -> None:
        self.config = config
        self._slots = max(1, config.concurrency)
        ramped = config.ramp_up_s > 0 and self._slots > 1
        self._semaphore = asyncio.Semaphore(1 if ramped else self._slots)
        self._ramp_task: asyncio.Task[None] | None = None  # held: the loop keeps weak refs only
        self._ramp_pending = ramped
        self._litellm: Any = None
        self._checked = False
        self.stats = ClientStats()
        self.breaker = CircuitBreaker(config.retry.breaker_after)

    @property
    def model_id(self) -> str:
        """Display id."""
        return self.config.model_id

    @property
    def max_in_flight(self) -> int:
        """Requests the cache layer should lease at once: every slot busy, one wave queued."""
        return 2 * self._slots

    def _lib(self) -> Any:
        if self._litellm is None:
            with _collector_paused():
                litellm = _import_litellm()
                self._register_price(litellm)
                _warm_up(litellm, self.config.litellm_model)
            self._litellm = litellm
        return self._litellm

    def _register_price(self, litellm: Any) -> None:
        """Tell litellm's cost calculator the configured price (models it does not know).

        Cached prompt tokens are priced as uncached ones: exact for self-hosted endpoints (0),
        an upper bound for providers that discount cache reads; left out, litellm warns on
        every run that it prices them at 0.
        """
        if self.config.input_cost_per_token is None:
            return
        provider = self.config.litellm_model.split("/", 1)[0]
        prompt_price = self.config.input_cost_per_token
        litellm.register_model(
            {
                self.config.litellm_model: {
                    "input_cost_per_token": prompt_price,
                    "cache_read_input_token_cost": prompt_price,
                    "cache_creation_input_token_cost": prompt_price,
                    "output_cost_per_token": self.config.output_cost_per_token or 0.0,
                    "litellm_provider": provider,
                    "mode": "chat",
                }
            }
        )

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        """Send all requests concurrently (bounded by the semaphore)."""
        self._lib()  # load before the first wave, so the ramp-up clock starts after the import
        self.check_credentials()
        if self._ramp_pending:
            self._ramp_pending = False
            self._ramp_task = asyncio.create_task(self._open_slots())
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def loglik(self, requests: Sequence[LoglikRequest]) -> list[LoglikResponse]:
        """Chat APIs expose no prompt log-likelihoods; MCQ uses generation instead."""
        raise UnsupportedOperation(
            f"{self.model_id}: log-likelihood is not available over chat APIs"
        )

    async def aclose(self) -> None:
        """Nothing to release: litellm manages its HTTP clients."""

    async def _one(self, request: GenerateRequest) -> GenerateResponse:
        start = time.perf_counter()
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.retry.attempts),
            wait=WaitRetryAfterOrBackoff(self.config.retry),
            retry=retry_if_exception(self._should_retry),
            before_sleep=self._count_retry,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    async with self._semaphore:
                        response = await self._attempt(request)
                    return self._to_response(response, time.perf_counter() - start)
        except NotSent as exc:
            self.stats.not_sent += 1
            return GenerateResponse(text=None, status="error", error=str(exc))
        except Exception as exc:  # recorded per item; the run goes on (DESIGN.md §4)
            self.stats.failed[type(exc).__name__] += 1
            message = f"{type(exc).__name__}: {_first_line(exc)}"
            return GenerateResponse(
                text=None, status="error", error=message, latency_s=time.perf_counter() - start
            )
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    async def _attempt(self, request: GenerateRequest) -> Any:
        """One HTTP request, unless the breaker is open; feeds the breaker either way."""
        if self.breaker.is_open:
            raise NotSent(f"{NOT_SENT}{self.stats.stopped}")
        if stop_requested():
            raise NotSent(f"{NOT_SENT}the stage is stopping (signal or parent gone)")
        self.stats.sent += 1
        try:
            response = await self._call(request)
        except Exception as exc:
            self.breaker.failure(exc)
            if self.breaker.is_open and self.stats.stopped is None:
                self._stop()
            raise
        self.breaker.success()
        self.stats.ok += 1
        return response

    def _should_retry(self, exc: BaseException) -> bool:
        return is_retryable(exc) and not self.breaker.is_open

    def _count_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        self.stats.retries[type(exc).__name__] += 1

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

    def check_credentials(self) -> None:
        """Fail before the first request when the key is missing (never retried, never sent).

        A variable named by ``api_key_env`` must be set. Otherwise, for a hosted provider (no
        ``api_base``), litellm's ``validate_environment`` names the variables it would read.
        A self-hosted server with no ``api_key_env`` is keyless by configuration.
        """
        if self._checked:
            return
        if self.config.api_key_env:
            self._api_key(self.config.api_key_env)
        elif not self.config.api_base:
            found = self._lib().validate_environment(model=self.config.litellm_model)
            missing = list(found.get("missing_keys") or [])
            if not found.get("keys_in_environment") and missing:
                raise MissingKey(
                    f"model '{self.model_id}' ({self.config.litellm_model}): "
                    f"{', '.join(missing)} is not set; export it (or name the variable in "
                    "options.api_key_env)"
                )
        self._checked = True

    async def _open_slots(self) -> None:
        """Ramp up: open one more slot every ``ramp_up_s / concurrency`` until all are open.

        Requests that leave together come back together, and the client then parses their
        replies one after another (litellm spends ~2.5 ms of CPU per call) while every slot
        waits; against steady latency that lockstep lasts for many rounds. Opening the slots
        apart desynchronises them once, and spares the provider a burst at start-up.
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

    async def _call(self, request: GenerateRequest) -> Any:
        litellm = self._lib()
        kwargs: dict[str, Any] = {
            "model": self.config.litellm_model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": self.config.retry.timeout_s,
            "max_retries": 0,
            "drop_params": self.config.drop_params,
            **self.config.extra_params,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if self.config.api_base:
            kwargs["api_base"] = self.config.api_base
        if self.config.api_key_env:
            kwargs["api_key"] = self._api_key(self.config.api_key_env)
        elif self.config.api_base:
            kwargs["api_key"] = "EMPTY"  # a custom endpoint with no key configured
        response = await litellm.acompletion(**kwargs)
        content = response.choices[0].message.content if response.choices else None
        if content is None or not str(content).strip():
            raise EmptyReply("provider returned empty content")
        return response

    def _api_key(self, variable: str) -> str:
        key = os.environ.get(variable, "")
        if key:
            return key
        raise MissingKey(
            f"model '{self.model_id}': options.api_key_env names {variable}, which is not set; "
            f"export {variable} (or set api_key_env: null for a server without keys)"
        )

    def _to_response(self, response: Any, latency: float) -> GenerateResponse:
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        if cost is None and self.config.input_cost_per_token is not None:
            cost = prompt_tokens * self.config.input_cost_per_token + completion_tokens * (
                self.config.output_cost_per_token or 0.0
            )
        return GenerateResponse(
            text=str(response.choices[0].message.content),
            usage=Usage(prompt_tokens, completion_tokens, float(cost or 0.0)),
            latency_s=latency,
        )


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector, then freeze everything built meanwhile.

    litellm builds ~380k long-lived objects at import. Left to the collector, the import itself
    triggers full collections that scan them (~0.8 s here), every later full collection in the
    request loop scans them again (an event-loop stall of ~0.2 s each), and interpreter shutdown
    walks them once more (~0.8 s). ``gc.freeze`` moves them to the permanent generation, which
    the collector skips; they live as long as the process anyway.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def _import_litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch it at run time
    import litellm

    litellm.suppress_debug_info = True
    route_litellm_logging()
    return litellm


def route_litellm_logging(level: int = logging.WARNING) -> None:
    """Send litellm's records through the stage's logging, from WARNING up.

    litellm gives its loggers their own stderr handler (each warning would print twice next to
    the stage's root handler) and logs 2–4 INFO lines per call; a stage at INFO printed ~4,200
    of them for 352 failing items, through the progress bar.
    """
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.setLevel(level)
        logger.propagate = True


def _warm_up(litellm: Any, model: str) -> None:
    """Run litellm's response path once, offline, before the first real request.

    The first call imports ~60 more modules and builds caches (~100 ms). Paid inside the first
    wave of concurrent requests, it stalls every one of them; paid here, it is paid once, with
    the collector paused. ``mock_response`` short-circuits before any provider or network call.
    """
    litellm.completion(
        model=model,
        messages=[{"role": "user", "content": "warm-up"}],
        mock_response="ok",
        max_tokens=1,
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
