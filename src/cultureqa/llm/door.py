"""The one door to the models: every model call of every stage goes through :func:`open_client`.

It builds the client from a ``conf/model`` entry (``registry.build_model``: slots, retry policy,
circuit breaker, and for API models the budget's reservation before each request, see
:class:`cultureqa.core.spend.Budget`), wraps it in the response store (leases, zero-call reruns)
with the prompt-length guard, and names the client for :data:`cultureqa.core.spend.LEDGER`,
which records its counters when it closes. Evaluation (``evaluation.engine``), the ID-MoCQA
build's generator, judges, repairs and question analysis (``mocqa_shared.models``) and case
construction (``stages/cases_construct.py``) all open their clients here;
``tests/llm/test_door.py`` lists every place that builds a client, so a new caller cannot skip a
guard unnoticed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cultureqa.llm.base import GenerateRequest, ModelConfigError
from cultureqa.llm.cached import CachedClient, ProgressHook
from cultureqa.llm.pricing import prompt_token_bound
from cultureqa.llm.registry import build_model
from cultureqa.llm.store import ResponseStore

log = logging.getLogger(__name__)

DEFAULT_MAX_PROMPT_TOKENS = 1_000_000
"""The prompt limit of an API model whose context neither its config (``max_prompt_tokens``) nor
litellm's table gives: no served model today reads more in one request, and a prompt past it is
a bug (a whole file pasted into a template), not a question."""

PROMPT_TOO_LONG = "prompt too long"
"""Error prefix of a request the guard refused (an item error, counted by this reason)."""


def open_client(
    name: str,
    model_cfg: Mapping[str, Any],
    store: ResponseStore,
    on_progress: ProgressHook | None = None,
) -> CachedClient:
    """The cached, guarded client for ``model_cfg``; close it with ``await client.aclose()``.

    Args:
        name: The ledger name (roster entry, or a build job such as ``judge``).
        model_cfg: A model config from ``conf/model``.
        store: The response store (the caller opens and closes it).
        on_progress: Called with each batch of replies (the progress bar).
    """
    built = build_model(model_cfg)
    return CachedClient(
        built.client,
        store,
        built.identity,
        built.chunk_size,
        on_progress=on_progress,
        prompt_guard=prompt_guard(model_cfg, built.client),
        ledger=name,
        persist=built.stored,
    )


def check_credentials(model_cfg: Mapping[str, Any]) -> None:
    """Raise :class:`MissingKey` now if the model's provider key is unset; nothing is sent.

    Composing params asks this before DVC touches the workspace, so a sweep without its key
    stops with one line instead of failing in its first stage.
    """
    from cultureqa.llm.api.chat_client import ChatClient

    client = build_model(model_cfg).client
    if isinstance(client, ChatClient):
        client.check_credentials()


@dataclass(frozen=True)
class PromptGuard:
    """Refuses a prompt over ``limit`` tokens, counted by ``count`` (see :func:`prompt_guard`)."""

    limit: int
    source: str
    count: Callable[[GenerateRequest], int]
    counted_by: str

    def __call__(self, request: GenerateRequest) -> str | None:
        """The refusal reason, or None when the prompt fits."""
        if prompt_token_bound(request.messages) <= self.limit:
            return None  # fits even by the upper bound: no tokenizer needed
        tokens = self.count(request)
        if tokens <= self.limit:
            return None
        return (
            f"{PROMPT_TOO_LONG}: {tokens:,} tokens ({self.counted_by}) > {self.limit:,} "
            f"({self.source}); not sent"
        )


def prompt_guard(model_cfg: Mapping[str, Any], client: object = None) -> PromptGuard | None:
    """The guard of an API model (local models check their own window with their tokenizer).

    The limit is ``max_prompt_tokens`` from the model config, else litellm's ``max_input_tokens``
    for the model (litellm and wire transports: the http transport never imports litellm), else
    :data:`DEFAULT_MAX_PROMPT_TOKENS`; the wire transport's ``client`` answers from its stored
    route (no litellm import). Tokens are counted by ``litellm.token_counter`` on the
    litellm and wire transports (exact for OpenAI models, tiktoken's estimate for others) and as
    UTF-8 characters / 4 on the http transport; a prompt that fits the byte bound is never counted.
    """
    if model_cfg.get("backend") != "litellm":
        return None
    options = dict(model_cfg.get("options") or {})
    name = str(options.get("litellm_model"))
    via_litellm = str(options.get("transport", "litellm")) in ("litellm", "wire")
    configured = model_cfg.get("max_prompt_tokens")
    if configured is not None:
        limit, source = _positive(model_cfg, configured), "model.max_prompt_tokens"
    elif via_litellm and (known := _context(name, client)) is not None:
        limit, source = known, f"litellm's context of {name}; set max_prompt_tokens to change"
    else:
        limit, source = DEFAULT_MAX_PROMPT_TOKENS, "default; set max_prompt_tokens to change"
    if via_litellm:
        return PromptGuard(limit, source, _litellm_counter(name), "litellm.token_counter")
    return PromptGuard(limit, source, _chars4, "characters / 4")


def _positive(model_cfg: Mapping[str, Any], value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModelConfigError(
            f"model '{model_cfg.get('id')}': max_prompt_tokens must be a positive integer or "
            f"null, got {value!r}"
        )
    return value


def _chars4(request: GenerateRequest) -> int:
    return -(-sum(len(m.content) for m in request.messages) // 4)


def _context(name: str, client: object) -> int | None:
    """The model's input window: the wire transport's stored route, else litellm's table."""
    stored = getattr(getattr(client, "transport", None), "max_input_tokens", None)
    return stored() if callable(stored) else _litellm_context(name)


def _litellm_context(name: str) -> int | None:
    from cultureqa.llm.api.litellm_lib import import_litellm

    try:
        info = import_litellm().get_model_info(name)
    except Exception:  # not in litellm's table: no context to go by
        return None
    value = info.get("max_input_tokens") or info.get("max_tokens")
    return int(value) if value else None


def _litellm_counter(name: str) -> Callable[[GenerateRequest], int]:
    def count(request: GenerateRequest) -> int:
        from cultureqa.llm.api.litellm_lib import import_litellm

        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        return int(import_litellm().token_counter(model=name, messages=messages))

    return count
