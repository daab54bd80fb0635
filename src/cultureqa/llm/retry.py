"""One retry policy for every HTTP provider (DESIGN.md §4).

Providers are called with ``max_retries=0`` so exactly this policy applies: exponential backoff
with jitter, ``Retry-After`` honoured, and only transient failures retried — rate limits, timeouts,
connection errors, 5xx and empty replies. A 400 or 401 will not fix itself, so it is never retried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tenacity import RetryCallState
from tenacity.wait import wait_random_exponential


class EmptyReply(RuntimeError):
    """The provider answered 200 with no content; worth a retry, never a silent wrong answer."""


@dataclass(frozen=True)
class RetryConfig:
    """Retry knobs from the model config (they do not change answers, so they are not hashed)."""

    attempts: int = 6
    initial_wait_s: float = 1.0
    max_wait_s: float = 60.0
    timeout_s: float = 60.0


_RETRYABLE_NAMES = {
    "RateLimitError",
    "Timeout",
    "APITimeoutError",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
    "EmptyReply",
}


def is_retryable(exc: BaseException) -> bool:
    """Whether a failure is transient, judged by litellm/openai exception class or HTTP status."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _RETRYABLE_NAMES:
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and status >= 500


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
