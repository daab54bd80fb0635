"""Worst-case size of a request, for the budget's reservations (``core.spend.Budget``).

A reservation must never be smaller than what the reply will cost, or concurrent requests could
pass the cap together. The completion side is exact: a provider bills at most ``max_tokens``
completion tokens. The prompt side is bounded without a tokenizer: every token of a byte-level
BPE tokenizer (OpenAI, Llama 3, Qwen, DeepSeek, ...) or of a SentencePiece tokenizer with byte
fallback (Gemma, Mistral) covers at least one byte of UTF-8 text, so the UTF-8 byte count bounds
the content's tokens from above; the chat template adds markers around each message, bounded by
:data:`PER_MESSAGE_TOKENS` per message plus :data:`PER_REQUEST_TOKENS`. The bound is about 4×
the real count for English text: it costs concurrency only near the cap (a request waits for
others' unused reservations to come back), never money. The same bound serves every transport,
so the guarantee does not depend on litellm knowing a model's tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence

from cultureqa.llm.base import GenerateRequest, Message

PER_MESSAGE_TOKENS = 16
"""Template markers around one message (OpenAI's format adds 3-4, Llama 3's about 5)."""

PER_REQUEST_TOKENS = 16
"""Markers around the whole conversation (BOS, the assistant header that primes the reply)."""


def prompt_token_bound(messages: Sequence[Message]) -> int:
    """An upper bound on the prompt tokens any byte-level tokenizer makes of ``messages``."""
    content = sum(len(m.content.encode("utf-8")) + len(m.role) for m in messages)
    return content + PER_MESSAGE_TOKENS * len(messages) + PER_REQUEST_TOKENS


def worst_case_tokens(request: GenerateRequest) -> tuple[int, int]:
    """(prompt tokens, completion tokens) that ``request`` can be billed for at most."""
    return prompt_token_bound(request.messages), request.max_tokens


BYTE_BOUND = "byte bound"
"""How a reply without usage is counted when the model's tokenizer is not known here."""


def estimated_tokens(request: GenerateRequest, text: str) -> tuple[int, int, str]:
    """(prompt, completion, method) for a reply that carried no usage, bounded from above.

    The prompt by :func:`prompt_token_bound` (what was reserved for it), the completion by the
    reply's UTF-8 bytes plus one message's markers, never more than ``max_tokens`` (a provider
    bills no more). Conservative: an estimate above the bill costs concurrency near the cap,
    one below it would cost money.
    """
    completion = len(text.encode("utf-8")) + PER_MESSAGE_TOKENS
    return prompt_token_bound(request.messages), min(request.max_tokens, completion), BYTE_BOUND
