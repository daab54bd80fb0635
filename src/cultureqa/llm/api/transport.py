"""What a chat transport is and what it is given: the layer below the chat client.

A transport (``http_transport``, ``litellm_client``) turns one request into one
:class:`ChatReply` or raises; :mod:`cultureqa.llm.api.chat_client` owns everything around it. The
types both sides share live here, below both, so transports never import the client that
drives them and the model seam reads top-down: registry → chat client → transports → this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from cultureqa.llm.api.retry import RetryConfig
from cultureqa.llm.base import GenerateRequest, ModelConfigError

Transport = Literal["http", "litellm", "wire"]


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
    wire_base: str | None = None
    """The provider's OpenAI-compatible endpoint for ``transport: wire`` where litellm's own
    route is not OpenAI's protocol (``openai/``, ``gemini/``, ``anthropic/``); None: litellm's."""
    wire_key_env: str | None = None
    """The variable holding the key sent to ``wire_base`` (the provider's own, which litellm's
    transport reads itself); unlike ``api_key_env`` it leaves the litellm and batch paths as they
    are."""
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
    """The scored part of one successful HTTP exchange; ``cost_usd`` None: price it here.

    ``prompt_tokens``/``completion_tokens`` are None when the reply carried no ``usage`` (older
    vLLM, llama.cpp, proxies): the client then counts them itself, never at 0.
    """

    text: str
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    cost_usd: float | None = None

    @property
    def has_usage(self) -> bool:
        """Whether the server said what it billed."""
        return self.prompt_tokens is not None and self.completion_tokens is not None


@dataclass(frozen=True)
class TokenCount:
    """Tokens of a reply that carried no usage, and how they were counted (for the record)."""

    prompt_tokens: int
    completion_tokens: int
    method: str


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

    def count_tokens(self, request: GenerateRequest, text: str) -> TokenCount | None:
        """The model's own tokenizer count of ``request`` and ``text``; None if it is unknown."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class MissingKey(ModelConfigError):
    """A provider key variable is unset: checked before the first request, never retried."""
