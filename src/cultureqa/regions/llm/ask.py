"""One round of labelled-reply requests, and the paper's "revise until usable" message.

Both generators (the engine's and the ID-MoCQA build's) ask the model for ``LABEL: value``
replies, parse them, and send a reply that cannot be used back with what is wrong. An empty
reply is named as such, a failed call keeps the provider's error: neither is guessed around.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cultureqa.evaluation.parsing import EMPTY_ERROR, is_empty_reply
from cultureqa.llm.base import GenerateRequest, Message
from cultureqa.llm.store import StoreLocation
from cultureqa.mocqa_shared.models import run_models
from cultureqa.regions.llm.parse import Reply, parse_labelled


@dataclass(frozen=True)
class Answer:
    """A parsed reply (None when there is none), its raw text, and why it is missing."""

    reply: Reply | None
    text: str
    error: str = ""


def ask(
    name: str,
    model: Mapping[str, Any],
    requests: Sequence[GenerateRequest],
    store_path: StoreLocation,
) -> list[Answer]:
    """Send ``requests`` to one model (through the response store) and parse every reply."""
    out = []
    for response in run_models({name: (model, list(requests))}, store_path)[name]:
        text = response.text or ""
        if is_empty_reply(response.status, response.text):
            out.append(Answer(None, text, EMPTY_ERROR))  # answered with nothing: named as such
        elif response.status == "ok" and response.text:
            out.append(Answer(parse_labelled(response.text), text))
        else:
            out.append(Answer(None, text, f"model call failed: {response.error}"))
    return out


def revise(request: GenerateRequest, reply_text: str, problem: str) -> GenerateRequest:
    """The conversation so far, the model's reply, and what is wrong with it."""
    feedback = Message(
        "user",
        f"Your answer cannot be used: {problem}. Revise it and answer again "
        "in exactly the requested format.",
    )
    return GenerateRequest(
        (*request.messages, Message("assistant", reply_text), feedback),
        request.max_tokens,
        request.temperature,
        request.seed,
        request.template_version,
    )
