"""A scripted model for tests: replies are given up front, calls are counted.

Like inspect_ai's ``mockllm``, it is a real ModelClient rather than a mock object, so tests drive
the same code paths a real backend does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cultureqa.llm.base import (
    GenerateRequest,
    GenerateResponse,
    LoglikRequest,
    LoglikResponse,
    UnsupportedOperation,
)

Reply = str | GenerateResponse
LoglikScript = Callable[[LoglikRequest], Sequence[float]]


class ScriptedModel:
    """Returns scripted replies in order (cycling), or computes them from the request."""

    def __init__(
        self,
        model_id: str = "fake",
        replies: Sequence[Reply] | Callable[[GenerateRequest], Reply] = ("A",),
        loglik_fn: LoglikScript | None = None,
    ) -> None:
        self._model_id = model_id
        self._replies = replies
        self._loglik_fn = loglik_fn
        self.generate_calls: list[GenerateRequest] = []
        self.loglik_calls: list[LoglikRequest] = []

    @property
    def model_id(self) -> str:
        """Display id."""
        return self._model_id

    @property
    def supports_loglik(self) -> bool:
        """True when a log-likelihood script was given."""
        return self._loglik_fn is not None

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        """Return the next scripted replies."""
        out = []
        for request in requests:
            if callable(self._replies):
                reply = self._replies(request)
            else:
                reply = self._replies[len(self.generate_calls) % len(self._replies)]
            self.generate_calls.append(request)
            out.append(reply if isinstance(reply, GenerateResponse) else GenerateResponse(reply))
        return out

    async def loglik(self, requests: Sequence[LoglikRequest]) -> list[LoglikResponse]:
        """Score with the scripted function."""
        if self._loglik_fn is None:
            raise UnsupportedOperation("ScriptedModel was built without loglik_fn")
        self.loglik_calls.extend(requests)
        return [LoglikResponse(logprobs=tuple(self._loglik_fn(r))) for r in requests]

    async def aclose(self) -> None:
        """Nothing to release."""
