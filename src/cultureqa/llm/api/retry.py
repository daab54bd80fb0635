"""One retry policy, one retry loop, one set of counters for every API client (DESIGN.md §4).

Providers are called with ``max_retries=0`` so exactly this policy applies: exponential backoff
with jitter, ``Retry-After`` honoured, and only transient failures retried — rate limits, timeouts,
connection errors, 5xx, malformed and empty replies. A 400 or 401 will not fix itself, so it is
never retried. Failures are judged by class name (litellm's and openai's, which the aiohttp
transport's own errors mirror) or by ``status_code``, so both transports classify alike.

:class:`RetryLoop` runs the policy for the chat client and for the replica pool alike, counting
retries and final failures by cause (:data:`CAUSES`) in one :class:`CallStats`, so a run record
reads the same whichever client made the calls.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_random_exponential

from cultureqa.llm.base import GenerateResponse, Usage

log = logging.getLogger(__name__)
R = TypeVar("R")


class EmptyReply(RuntimeError):
    """The provider answered 200 with no content: retried ``empty_attempts`` times, then counted.

    ``reply`` is what came back (its token usage is still paid for); ``usage`` what the client
    charged for it.
    """

    def __init__(self, message: str, reply: Any = None) -> None:
        super().__init__(message)
        self.reply = reply
        self.usage: Usage | None = None


class MalformedReply(RuntimeError):
    """The provider answered 200 with a body that is not a chat completion: retried."""


@dataclass(frozen=True)
class RetryConfig:
    """Retry knobs from the model config (they do not change answers, so they are not hashed)."""

    attempts: int = 6
    initial_wait_s: float = 1.0
    max_wait_s: float = 60.0
    timeout_s: float = 60.0
    breaker_after: int = 10
    """Stop sending after this many consecutive 400/401/403/404/refused failures."""
    empty_attempts: int = 2
    """Attempts that may come back empty before an empty reply is accepted (1: no retry).

    After them the item is answered with ``text=""`` (status ok, counted as ``empty``): a model
    that keeps answering nothing has answered, and scorers count it as unanswered and wrong."""


_RETRYABLE_NAMES = {
    "RateLimitError",
    "Timeout",
    "APITimeoutError",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
    "EmptyReply",
    "MalformedReply",
}

RETRY_CAUSES = ("429", "5xx", "timeout", "malformed", "empty", "connection", "other")
"""Names under which retries are counted, per item and per run (never exception class names)."""

CAUSES = (*RETRY_CAUSES, "400", "401", "403", "404")
"""Names under which failures are counted: the retry causes plus the never-retried statuses."""

CAUSE_WORDS = {
    "429": "HTTP 429 (rate limited)", "5xx": "HTTP 5xx (server error)",
    "timeout": "timeouts", "malformed": "replies that are not chat completions",
    "empty": "empty replies", "connection": "connection failures", "400": "HTTP 400",
    "401": "HTTP 401", "403": "HTTP 403", "404": "HTTP 404", "other": "other errors",
}  # fmt: skip
"""How an error line names each cause."""


def is_retryable(exc: BaseException) -> bool:
    """Whether a failure is transient, judged by litellm/openai exception class or HTTP status."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _RETRYABLE_NAMES:
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status >= 500 or status == 429)


def retry_cause(exc: BaseException | None) -> str:
    """The cause a retry is counted under (one of :data:`RETRY_CAUSES`)."""
    if exc is None:
        return "other"
    names = {cls.__name__ for cls in type(exc).__mro__}
    return _classify(names, getattr(exc, "status_code", None), str(exc))


def record_cause(error: str) -> str:
    """:func:`retry_cause` of a failure known only by its per-item record ``"<Class>: message"``.

    A wrapped client (``llm/api/replicas.py``) reports a failed attempt that way.
    """
    name, _, message = error.partition(":")
    name = name.strip()
    return _classify({name}, hopeless_cause(name), message)


def _classify(names: set[str], status: object, message: str) -> str:
    """The cause from exception class names, HTTP status and message.

    Order matters: litellm's ``Timeout`` subclasses openai's ``APIConnectionError``, and litellm
    reports a refused connection as an ``InternalServerError`` saying "Connection error".
    """
    if "EmptyReply" in names:
        return "empty"
    if "MalformedReply" in names:
        return "malformed"
    if names & {"Timeout", "APITimeoutError", "TimeoutError"}:
        return "timeout"
    if "RateLimitError" in names or status == 429:
        return "429"
    hopeless = next((_HOPELESS_NAMES[n] for n in names if n in _HOPELESS_NAMES), status)
    if hopeless in _HOPELESS_STATUS:
        return str(hopeless)
    if "APIConnectionError" in names or "Connection error" in message:
        return "connection"
    if (isinstance(status, int) and status >= 500) or names & _RETRYABLE_NAMES:
        return "5xx"
    return "other"


def is_retryable_cause(cause: str) -> bool:
    """:func:`is_retryable` for a failure known only by its exception class name.

    A wrapped client (``llm/api/replicas.py``) records a failed attempt as ``"<Class>: message"``;
    the pool decides from that name whether another replica may succeed.
    """
    return cause in _RETRYABLE_NAMES


def hopeless_cause(cause: str) -> int | None:
    """The HTTP status of a 400/401/403/404 failure known by its class name, else None."""
    return _HOPELESS_NAMES.get(cause)


def retry_after_seconds(exc: BaseException | None) -> float | None:
    """Seconds the server asked us to wait, from the error's response headers, if any."""
    if exc is None:
        return None
    candidates: list[Any] = [
        getattr(exc, "litellm_response_headers", None),
        getattr(exc, "headers", None),
    ]
    response = getattr(exc, "response", None)
    candidates.append(getattr(response, "headers", None))
    for headers in candidates:
        if not headers:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
        except AttributeError:
            continue
        if value is not None:
            try:
                return max(0.0, float(value))
            except (TypeError, ValueError):
                continue
    return None


class WaitRetryAfterOrBackoff:
    """tenacity wait: the server's ``Retry-After`` when given, else jittered exponential backoff."""

    def __init__(self, config: RetryConfig) -> None:
        self._backoff = wait_random_exponential(
            multiplier=config.initial_wait_s, max=config.max_wait_s
        )
        self._max = config.max_wait_s

    def __call__(self, state: RetryCallState) -> float:
        """Seconds to sleep before the next attempt."""
        exc = state.outcome.exception() if state.outcome else None
        hinted = retry_after_seconds(exc)
        if hinted is not None:
            return min(hinted, self._max)
        return float(self._backoff(state))


_HOPELESS_STATUS = {400: "bad request", 401: "unauthorized", 403: "forbidden", 404: "not found"}
_HOPELESS_NAMES = {
    "BadRequestError": 400,
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
}


def hopeless_status(exc: BaseException) -> int | None:
    """The HTTP status of a failure that will recur on every request, else None.

    400/401/403/404 are the same for every prompt when the key, model name, endpoint or a
    parameter is wrong. A refused or failed connection (litellm reports it as a 500 with
    "Connection error") is returned as 0: retried per item, but it counts toward the breaker.
    """
    for cls in type(exc).__mro__:
        if cls.__name__ in _HOPELESS_NAMES:
            return _HOPELESS_NAMES[cls.__name__]
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status in _HOPELESS_STATUS:
        return status
    if "Connection error" in str(exc) or "APIConnectionError" in {
        c.__name__ for c in type(exc).__mro__
    }:
        return 0
    return None


def fix_hint(status: int, model: str, api_base: str | None, key_env: str | None) -> str:
    """What the user should change for a hopeless failure of this kind."""
    key = key_env or "the provider's key variable (e.g. OPENAI_API_KEY)"
    where = api_base or "the provider's default endpoint"
    hints = {
        0: f"start the server or fix options.api_base (nothing answers at {where})",
        400: "check options.litellm_model, options.extra_params and decoding for values this "
        "model rejects",
        401: f"set a valid key in {key}; the provider rejected the one sent",
        403: f"use a key with access to {model} ({key}) or check the account's permissions",
        404: f"check options.litellm_model and options.api_base ({model} not found at {where})",
    }
    return hints.get(status, "check the model config")


def provider_message(exc: BaseException) -> str:
    """First line of the error, without litellm's repeated ``litellm.<Class>:`` prefix."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    return re.sub(r"^litellm\.\w+:\s*", "", text)[:300]


class CircuitBreaker:
    """Opens after ``threshold`` consecutive hopeless failures; any success resets the count.

    Without it, a wrong key or model name is paid for (in time, and with some providers in
    money) once per item: a server answering 400 to everything received all 352 requests.
    Transient failures (429, 5xx, timeouts) neither count nor reset: retries handle them.
    """

    def __init__(self, threshold: int) -> None:
        self.threshold = max(1, threshold)
        self.consecutive = 0
        self.trip: tuple[int, str] | None = None
        """(status, provider message) of the failure that opened the breaker."""

    @property
    def is_open(self) -> bool:
        """Whether requests should no longer be sent."""
        return self.trip is not None

    def success(self) -> None:
        """A request succeeded: the failures were not systematic."""
        self.consecutive = 0

    def failure(self, exc: BaseException) -> None:
        """Count ``exc`` if it is hopeless; open once ``threshold`` of them come in a row."""
        status = hopeless_status(exc)
        if status is None or self.is_open:
            return
        self.consecutive += 1
        if self.consecutive >= self.threshold:
            self.trip = (status, provider_message(exc))


@dataclass
class CallStats:
    """What an API client did, for run.json and MLflow: nothing retried or estimated is silent.

    The chat client and the replica pool both keep exactly these counters.
    """

    sent: int = 0
    """HTTP requests made (first attempts and retries): the run's ``model_calls``."""
    ok: int = 0
    empty: int = 0
    """Items answered with empty content after ``retry.empty_attempts`` (status ok, text "")."""
    retries: Counter[str] = field(default_factory=Counter)
    """Retries by cause (:data:`RETRY_CAUSES`)."""
    failed: Counter[str] = field(default_factory=Counter)
    """Items that ended in an error after every attempt, by cause (:data:`CAUSES`)."""
    not_sent: int = 0
    """Items not sent: the breaker had opened or the stage was stopping (a rerun sends them)."""
    stopped: str | None = None
    """Why the breaker opened: status, provider message and fix, in one line."""
    usage_estimated: Counter[str] = field(default_factory=Counter)
    """Replies without ``usage``, charged by counting their tokens, by counting method."""
    retry_after_max_s: float | None = None
    """The longest ``Retry-After`` a server asked for (None: it never sent one)."""
    retry_after_capped: int = 0
    """``Retry-After`` hints longer than ``retry.max_wait_s``: the retry came earlier."""
    litellm_imported_for: Counter[str] = field(default_factory=Counter)
    """``wire`` only: what made the stage import litellm (its stored route lacked the answer)."""

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
            "usage_estimated": sum(self.usage_estimated.values()),
            "usage_estimated_by": dict(sorted(self.usage_estimated.items())),
            "retry_after_max_s": self.retry_after_max_s,
            "retry_after_capped": self.retry_after_capped,
            "litellm_imported_for": dict(sorted(self.litellm_imported_for.items())),
        }


@dataclass
class ItemCount:
    """One item's accounting across its attempts, whichever client or replica served them."""

    start: float = field(default_factory=time.perf_counter)
    attempts: int = 0
    empties: int = 0
    retries: Counter[str] = field(default_factory=Counter)
    wait_s: float = 0.0
    """Slot or routing waits and backoff sleeps between attempts."""
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

    def add(self, reply: GenerateResponse) -> None:
        """Count one wrapped client's attempt (its own slot wait included, normally none)."""
        self.attempts += reply.attempts
        self.wait_s += reply.wait_s
        self.server_latency_s = reply.server_latency_s

    def settle(self, reply: GenerateResponse) -> GenerateResponse:
        """``reply`` with the item's whole accounting instead of its last attempt's."""
        return dataclasses.replace(
            reply,
            latency_s=time.perf_counter() - self.start,
            attempts=self.attempts,
            retries_by_cause=dict(sorted(self.retries.items())),
            server_latency_s=self.server_latency_s,
            wait_s=self.wait_s,
        )


class RetryLoop:
    """The one retry loop: attempt, classify, count, wait, attempt again (tenacity).

    ``retryable`` says whether a failure is transient for the client at hand; the loop adds
    what every client shares: an open breaker stops retries, an empty reply is retried
    ``empty_attempts`` times, and every retry, final failure and ``Retry-After`` is counted by
    cause in ``stats``. ``cause_of`` names a failure's cause (:data:`CAUSES`); ``wait`` picks
    the sleep (default: the server's ``Retry-After``, else jittered exponential backoff).
    """

    def __init__(
        self,
        config: RetryConfig,
        stats: CallStats,
        breaker: CircuitBreaker,
        retryable: Callable[[BaseException], bool] = is_retryable,
        cause_of: Callable[[BaseException | None], str] = retry_cause,
        wait: Callable[[RetryCallState], float] | None = None,
    ) -> None:
        self.config = config
        self.stats = stats
        self.breaker = breaker
        self._retryable = retryable
        self.cause_of = cause_of
        self._wait = wait or WaitRetryAfterOrBackoff(config)

    async def run(self, attempt: Callable[[], Awaitable[R]], item: ItemCount) -> R:
        """``attempt()`` until it succeeds or the policy gives up (the last failure is raised).

        Most requests succeed at once: they skip tenacity's per-call cost (~0.1 ms).
        """
        try:
            return await self._try(attempt, item)
        except Exception as exc:
            if self.config.attempts <= 1 or not self._should_retry(exc, item):
                raise
            first: Exception | None = exc
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.config.attempts),
            wait=self._wait,
            retry=retry_if_exception(lambda exc: self._should_retry(exc, item)),
            before_sleep=lambda state: self._count_retry(state, item),
            reraise=True,
        )
        async for try_ in retrying:
            with try_:
                if first is not None:  # attempt 1's outcome, handed to tenacity
                    failed, first = first, None
                    raise failed
                return await self._try(attempt, item)
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    def failed(self, exc: BaseException) -> str:
        """Count an item that ended in ``exc`` after every attempt; returns its cause."""
        cause = self.cause_of(exc)
        self.stats.failed[cause] += 1
        return cause

    async def _try(self, attempt: Callable[[], Awaitable[R]], item: ItemCount) -> R:
        try:
            return await attempt()
        except Exception as exc:
            if self.cause_of(exc) == "empty":
                item.empties += 1
            self._note_retry_after(exc)
            raise

    def _should_retry(self, exc: BaseException, item: ItemCount) -> bool:
        if self.breaker.is_open:
            return False
        if self.cause_of(exc) == "empty":
            return item.empties < self.config.empty_attempts
        return self._retryable(exc)

    def _count_retry(self, state: RetryCallState, item: ItemCount) -> None:
        cause = self.cause_of(state.outcome.exception() if state.outcome else None)
        item.retries[cause] += 1
        self.stats.retries[cause] += 1
        item.wait_s += state.upcoming_sleep

    def _note_retry_after(self, exc: BaseException) -> None:
        """Keep the longest ``Retry-After``; say once per client that one was cut short."""
        hinted = retry_after_seconds(exc)
        if hinted is None:
            return
        self.stats.retry_after_max_s = max(self.stats.retry_after_max_s or 0.0, hinted)
        if hinted <= self.config.max_wait_s:
            return
        self.stats.retry_after_capped += 1
        if self.stats.retry_after_capped == 1:
            log.warning(
                "the server asked to wait %g s before retrying (Retry-After), longer than "
                "retry.max_wait_s = %g s: retries wait %g s instead (said once; counted in the "
                "run record as api.client.retry_after_capped); raise retry.max_wait_s to honour it",
                hinted,
                self.config.max_wait_s,
                self.config.max_wait_s,
            )
