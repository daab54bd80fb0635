"""Wrap any :class:`ModelClient` with the response store.

The wrapper, not each backend, owns caching, so baselines, the local model and every API provider
get the same zero-call reruns and crash safety. Misses are sent in chunks (1 request per chunk for
concurrent API clients, ``chunk_size`` for batching local models) and each chunk is stored the
moment it completes.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from cultureqa.llm.base import (
    GenerateRequest,
    GenerateResponse,
    LoglikRequest,
    LoglikResponse,
    ModelClient,
    Usage,
)
from cultureqa.llm.store import ResponseStore, StoredResponse, request_key

Req = TypeVar("Req", GenerateRequest, LoglikRequest)
Resp = TypeVar("Resp", GenerateResponse, LoglikResponse)
ProgressHook = Callable[[Sequence[Any]], None]


def generate_to_payload(resp: GenerateResponse) -> dict[str, Any]:
    """Serialize a generation response for the store."""
    return dataclasses.asdict(resp)


def payload_to_generate(payload: Mapping[str, Any]) -> GenerateResponse:
    """Rebuild a stored generation response, marked as cached and free."""
    usage = Usage(**payload.get("usage", {}))
    return GenerateResponse(
        text=payload.get("text"),
        status=payload.get("status", "ok"),
        error=payload.get("error"),
        usage=usage,
        latency_s=float(payload.get("latency_s", 0.0)),
        cached=True,
    )


def payload_to_loglik(payload: Mapping[str, Any]) -> LoglikResponse:
    """Rebuild a stored log-likelihood response, marked as cached."""
    return LoglikResponse(
        logprobs=tuple(payload["logprobs"]),
        token_counts=tuple(payload.get("token_counts", ())),
        status=payload.get("status", "ok"),
        error=payload.get("error"),
        latency_s=float(payload.get("latency_s", 0.0)),
        cached=True,
    )


class CachedClient:
    """A ModelClient that answers from the store first and records every new answer."""

    def __init__(
        self,
        inner: ModelClient,
        store: ResponseStore,
        identity: Mapping[str, Any],
        chunk_size: int = 1,
        on_progress: ProgressHook | None = None,
    ) -> None:
        self.inner = inner
        self.store = store
        self.identity = dict(identity)
        self.chunk_size = max(1, chunk_size)
        self.on_progress = on_progress
        self.calls = 0
        """Requests actually sent to the inner client (0 on a fully cached rerun)."""

    @property
    def model_id(self) -> str:
        """The wrapped client's display id."""
        return self.inner.model_id

    @property
    def supports_loglik(self) -> bool:
        """Whether the wrapped client can score continuations."""
        return self.inner.supports_loglik

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        """Answer from the store, sending only misses to the model."""
        return await self._run(
            "generate", requests, self.inner.generate, generate_to_payload, payload_to_generate
        )

    async def loglik(self, requests: Sequence[LoglikRequest]) -> list[LoglikResponse]:
        """Score from the store, sending only misses to the model."""
        return await self._run(
            "loglik", requests, self.inner.loglik, dataclasses.asdict, payload_to_loglik
        )

    async def aclose(self) -> None:
        """Close the wrapped client (the store is owned by the caller)."""
        await self.inner.aclose()

    async def _run(
        self,
        kind: str,
        requests: Sequence[Req],
        send: Callable[[Sequence[Req]], Awaitable[list[Resp]]],
        to_payload: Callable[[Resp], dict[str, Any]],
        from_payload: Callable[[Mapping[str, Any]], Resp],
    ) -> list[Resp]:
        keys = [
            request_key({**self.identity, "kind": kind}, dataclasses.asdict(r)) for r in requests
        ]
        stored = self.store.get_many_ok(keys)
        results: list[Resp | None] = [
            from_payload(stored[k]) if k in stored else None for k in keys
        ]
        hits: list[Any] = [r for r in results if r is not None]
        if hits and self.on_progress:
            self.on_progress(hits)
        missing = [i for i, r in enumerate(results) if r is None]
        chunks = [missing[s : s + self.chunk_size] for s in range(0, len(missing), self.chunk_size)]

        async def run_chunk(indices: list[int]) -> None:
            self.calls += len(indices)
            answers = await send([requests[i] for i in indices])
            rows = []
            for i, answer in zip(indices, answers, strict=True):
                results[i] = answer
                rows.append(
                    StoredResponse(keys[i], kind, self.model_id, answer.status, to_payload(answer))
                )
            await self.store.put_async(rows)
            if self.on_progress:
                self.on_progress(answers)

        await asyncio.gather(*(run_chunk(c) for c in chunks))
        return [r for r in results if r is not None]
