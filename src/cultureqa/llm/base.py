"""The one narrow model interface every backend implements.

Evaluation code depends only on these types, so a scripted fake, a baseline, the local
Hugging Face model and any litellm provider are interchangeable (DESIGN.md §4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

Status = Literal["ok", "error"]

NOT_SENT = "not sent: "
"""Error prefix of a response for which no call was made (breaker open, stage stopping): it is
returned and counted, but never stored, so a rerun or another process sends it."""


@dataclass(frozen=True)
class Message:
    """One chat turn."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class GenerateRequest:
    """A chat request; everything that can change the answer lives here (it is hashed)."""

    messages: tuple[Message, ...]
    max_tokens: int = 64
    temperature: float = 0.0
    seed: int | None = None
    template_version: str = ""
    """Hash of the prompt template, so a template edit invalidates stored answers."""


@dataclass(frozen=True)
class Usage:
    """Token counts and cost of one call (zero for local models and cache hits)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    estimated_by: str = ""
    """How the tokens were counted when the reply carried no usage ("" when the server said)."""


@dataclass(frozen=True)
class GenerateResponse:
    """A model reply, or the reason there is none; never raised, always recorded."""

    text: str | None
    status: Status = "ok"
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    """Time the item took in the client, end to end (slot wait, backoff and retries included)."""
    cached: bool = False
    attempts: int = 0
    """HTTP requests made for this item (0 for cache hits and non-HTTP backends)."""
    retries_by_cause: Mapping[str, int] = field(default_factory=dict)
    """Retries by cause (``retry.RETRY_CAUSES``: 429, 5xx, timeout, malformed, empty, ...)."""
    server_latency_s: float = 0.0
    """Duration of the successful HTTP exchange only (for local backends: the model's time)."""
    wait_s: float = 0.0
    """Time spent waiting for a concurrency slot plus backoff sleeps before retries."""


@dataclass(frozen=True)
class LoglikRequest:
    """Score each continuation as log P(continuation | context)."""

    context: str
    continuations: tuple[str, ...]


@dataclass(frozen=True)
class LoglikResponse:
    """Summed log-probabilities, one per continuation, in request order."""

    logprobs: tuple[float, ...]
    token_counts: tuple[int, ...] = ()
    status: Status = "ok"
    error: str | None = None
    latency_s: float = 0.0
    cached: bool = False


@runtime_checkable
class ModelClient(Protocol):
    """What evaluation needs from a model.

    ``supports_loglik`` tells the runner whether log-likelihood scoring is possible; API chat
    models answer multiple-choice questions by generation and letter extraction instead.
    """

    @property
    def model_id(self) -> str:
        """Display id used in results and MLflow."""
        ...

    @property
    def supports_loglik(self) -> bool:
        """Whether :meth:`loglik` is implemented by this backend."""
        ...

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        """Answer every request; failures come back as ``status="error"`` responses."""
        ...

    async def loglik(self, requests: Sequence[LoglikRequest]) -> list[LoglikResponse]:
        """Score continuations; raises ``UnsupportedOperation`` where the backend cannot."""
        ...

    async def aclose(self) -> None:
        """Release resources (HTTP sessions, model weights)."""
        ...


class UnsupportedOperation(RuntimeError):
    """The backend cannot do what was asked (e.g. log-likelihood over a chat API)."""


class ModelConfigError(ValueError):
    """A model config is missing a key, has a wrong value, or names credentials that are unset."""
