"""Model calls for the LLM generator, the judge panel, repairs and translation.

Every call goes through the one door (:func:`cultureqa.llm.door.open_client`) and its response
store, so a rerun of a build stage makes no calls for answered requests and a crash loses nothing
already paid for. Prompts are files under ``prompts/mocqa/`` filled with ``string.Template``
(``$name``): their JSON examples keep their braces, and each prompt's hash is part of the request,
so editing a prompt invalidates its stored answers.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

from cultureqa.core.spend import ApiStopped, api_stats, stopped_reason
from cultureqa.llm import event_loop
from cultureqa.llm.base import GenerateRequest, GenerateResponse, Message
from cultureqa.llm.door import open_client
from cultureqa.llm.store import ResponseStore, StoreLocation, open_store

_SPLIT = "---user---"


class PromptError(ValueError):
    """A prompt file is missing a placeholder its caller fills."""


@dataclass(frozen=True)
class Prompt:
    """A prompt file: optional system part, user part, and a content hash."""

    path: str
    system: str
    user: str
    version: str

    def request(self, model_cfg: Mapping[str, Any], **slots: Any) -> GenerateRequest:
        """A request with the model's decoding settings; unknown ``$slots`` raise."""
        decoding = dict(model_cfg.get("decoding") or {})
        try:
            user = Template(self.user).substitute(**slots)
            system = Template(self.system).substitute(**slots) if self.system else ""
        except KeyError as exc:
            raise PromptError(f"{self.path}: no value for placeholder {exc}") from exc
        messages = ((Message("system", system),) if system else ()) + (Message("user", user),)
        return GenerateRequest(
            messages=messages,
            max_tokens=int(decoding.get("max_tokens") or 1024),
            temperature=float(decoding.get("temperature") or 0.0),
            seed=decoding.get("seed"),
            template_version=self.version,
        )


@lru_cache(maxsize=64)
def load_prompt(path: Path, required: tuple[str, ...] = ()) -> Prompt:
    """Read a prompt file; ``required`` placeholders must appear in it."""
    text = Path(path).read_text(encoding="utf-8")
    missing = [r for r in required if f"${r}" not in text and f"${{{r}}}" not in text]
    if missing:
        raise PromptError(f"{path}: lacks placeholders {missing}")
    system, _, user = text.partition(_SPLIT) if _SPLIT in text else ("", "", text)
    version = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return Prompt(str(path), system.strip(), user.strip(), version)


async def _generate(
    name: str,
    model_cfg: Mapping[str, Any],
    requests: Sequence[GenerateRequest],
    store: ResponseStore,
) -> list[GenerateResponse]:
    client = open_client(name, model_cfg, store)
    try:
        responses = await client.generate(requests)
    finally:
        await client.aclose()  # records the client's counters in the ledger
    if (reason := stopped_reason(api_stats(client))) is not None:
        raise ApiStopped(reason)
    return responses


def run_models(
    jobs: Mapping[str, tuple[Mapping[str, Any], Sequence[GenerateRequest]]],
    store_path: StoreLocation,
) -> dict[str, list[GenerateResponse]]:
    """Run each named model on its requests concurrently; failures come back as error responses.

    Each client's counters go to :data:`cultureqa.core.spend.LEDGER` under its job name. When a
    model's circuit breaker opened (the provider refuses every request), this raises
    :class:`cultureqa.core.spend.ApiStopped` instead: the caller would otherwise count a refused
    key as hundreds of rejected variants.

    Args:
        jobs: Name → (model config from ``conf/model``, requests).
        store_path: The response store (SQLite file or PostgreSQL URL) shared with evaluation.
    """
    if not any(requests for _, requests in jobs.values()):
        return {name: [] for name in jobs}
    store = open_store(store_path)

    async def run_all() -> list[list[GenerateResponse]]:
        return list(
            await asyncio.gather(
                *(_generate(name, cfg, reqs, store) for name, (cfg, reqs) in jobs.items())
            )
        )

    try:
        answers = event_loop.run(run_all())
    finally:
        store.close()
    return dict(zip(jobs, answers, strict=True))
