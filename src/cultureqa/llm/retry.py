"""One retry policy for every HTTP provider and both transports (DESIGN.md §4).

Providers are called with ``max_retries=0`` so exactly this policy applies: exponential backoff
with jitter, ``Retry-After`` honoured, and only transient failures retried — rate limits, timeouts,
connection errors, 5xx, malformed and empty replies. A 400 or 401 will not fix itself, so it is
never retried. Failures are judged by class name (litellm's and openai's, which the aiohttp
transport's own errors mirror) or by ``status_code``, so both transports classify alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tenacity import RetryCallState
from tenacity.wait import wait_random_exponential


class EmptyReply(RuntimeError):
    """The provider answered 200 with no content: retried ``empty_attempts`` times, then counted.

    ``reply`` is what came back (its token usage is still paid for).
    """

    def __init__(self, message: str, reply: Any = None) -> None:
        super().__init__(message)
        self.reply = reply


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

    A wrapped client (``llm/replicas.py``) reports a failed attempt that way.
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
    if names & _HOPELESS_NAMES.keys() or status in _HOPELESS_STATUS:
        return "other"
    if "APIConnectionError" in names or "Connection error" in message:
        return "connection"
    if (isinstance(status, int) and status >= 500) or names & _RETRYABLE_NAMES:
        return "5xx"
    return "other"


def is_retryable_cause(cause: str) -> bool:
    """:func:`is_retryable` for a failure known only by its exception class name.

    A wrapped client (``llm/replicas.py``) records a failed attempt as ``"<Class>: message"``;
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
