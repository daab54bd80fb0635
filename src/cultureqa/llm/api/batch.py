"""Provider Batch APIs (about half price, results within 24 h) behind ``options.batch: true``.

The cache layer hands this client every request the store lacks in one call (``max_in_flight``
1, one chunk); it uploads them as one JSONL file (``litellm.acreate_file``), creates one batch
(``litellm.acreate_batch``), polls it (``litellm.aretrieve_batch``) and reads the output and error
files (``litellm.afile_content``). Each reply goes back to the cache layer, which stores it like a
synchronous answer (same store key: the same model answered the same request).

Resume: the batch id is written to ``<state>/batches/<digest>.json`` (digest of the JSONL) the
moment the batch exists. A stage stopped before the batch completes (``options.batch_wait_s``
passed, a signal) answers the items ``not sent`` and stops with rc 2 naming the batch; its rerun
builds the same JSONL, finds the state file and polls the same batch instead of submitting (and
paying for) a second one. Failed lines are per-item errors, counted by HTTP status.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cultureqa.core.io import write_json
from cultureqa.core.runlock import stop_requested
from cultureqa.core.spend import BUDGET, BUDGET_REASON
from cultureqa.llm.base import (
    NOT_SENT,
    GenerateRequest,
    GenerateResponse,
    LoglikRequest,
    LoglikResponse,
    ModelConfigError,
    UnsupportedOperation,
    Usage,
)
from cultureqa.llm.pricing import estimated_tokens, worst_case_tokens

BATCH_DISCOUNT = 0.5
"""Price factor of batch requests where litellm's table has no batch price (OpenAI: half)."""


@dataclass(frozen=True)
class BatchConfig:
    """Where the batch goes and how long a stage waits for it."""

    model_id: str
    litellm_model: str
    api_base: str | None
    api_key: str | None
    state_dir: Path
    poll_s: float = 30.0
    wait_s: float = 3600.0
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None


@dataclass
class BatchStats:
    """The same counters as the HTTP client's (run.json, MLflow), plus the batches used."""

    sent: int = 0
    ok: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    not_sent: int = 0
    stopped: str | None = None
    batches_submitted: list[str] = field(default_factory=list)
    batches_resumed: list[str] = field(default_factory=list)
    usage_estimated: Counter[str] = field(default_factory=Counter)
    """Replies without usage, charged by counting their tokens, by counting method."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the keys tracking reads from any client."""
        return {
            "sent": self.sent, "ok": self.ok, "retries": 0, "retries_by_cause": {},
            "failed_by_cause": dict(sorted(self.failed.items())), "not_sent": self.not_sent,
            "stopped": self.stopped, "batches_submitted": self.batches_submitted,
            "batches_resumed": self.batches_resumed,
            "usage_estimated": sum(self.usage_estimated.values()),
            "usage_estimated_by": dict(sorted(self.usage_estimated.items())),
        }  # fmt: skip


class BatchClient:
    """A ModelClient whose ``generate`` is one provider batch."""

    supports_loglik = False
    max_in_flight = 1

    def __init__(self, config: BatchConfig) -> None:
        self.config = config
        self.stats = BatchStats()
        provider, _, served = config.litellm_model.partition("/")
        self._provider, self._served = provider, served or provider

    @property
    def model_id(self) -> str:
        """Display id."""
        return self.config.model_id

    async def loglik(self, requests: Sequence[LoglikRequest]) -> list[LoglikResponse]:
        """Batches carry chat requests only."""
        raise UnsupportedOperation(f"{self.model_id}: no log-likelihoods through a batch")

    async def aclose(self) -> None:
        """Nothing to release."""

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        """Submit (or resume) one batch for ``requests`` and wait for it, at most ``wait_s``."""
        from cultureqa.llm.api.litellm_lib import import_litellm

        litellm = import_litellm()
        reserved = self._reserve(requests)
        fits = [i for i, worst in enumerate(reserved) if worst is not None]
        out = [_unsent(f"{BUDGET_REASON} (the line's worst case passes the cap)")] * len(requests)
        self.stats.not_sent += len(requests) - len(fits)
        if not fits:
            return out
        try:
            replies = await self._submit_and_wait(litellm, [requests[i] for i in fits])
        except BaseException:
            BUDGET.settle(sum(reserved[i] or 0.0 for i in fits), 0.0, requests=0)
            raise
        for i, reply in zip(fits, replies, strict=True):
            out[i] = reply
            BUDGET.settle(reserved[i] or 0.0, reply.usage.cost_usd, int(reply.status == "ok"))
        return out

    def _reserve(self, requests: Sequence[GenerateRequest]) -> list[float | None]:
        """Each line's worst case held under the cap (None: it does not fit; nothing held)."""
        if not BUDGET.capped:
            return [0.0] * len(requests)
        worst = [self._cost(*worst_case_tokens(r), strict=True) for r in requests]
        return [w if BUDGET.try_reserve(w) else None for w in worst]

    async def _submit_and_wait(
        self, litellm: Any, requests: Sequence[GenerateRequest]
    ) -> list[GenerateResponse]:
        """Submit (or resume) the batch, poll it, and read its answers."""
        lines = [self._line(i, r) for i, r in enumerate(requests)]
        data = "".join(json.dumps(x, sort_keys=True) + "\n" for x in lines).encode("utf-8")
        state = self.config.state_dir / f"{hashlib.sha256(data).hexdigest()[:24]}.json"
        try:
            batch = await self._batch(litellm, data, state)
            deadline = time.monotonic() + self.config.wait_s
            while batch.status not in ("completed", "failed", "expired", "cancelled"):
                if time.monotonic() >= deadline or stop_requested():
                    return self._unfinished(batch, len(requests))
                await asyncio.sleep(self.config.poll_s)
                batch = await litellm.aretrieve_batch(batch_id=batch.id, **self._kw())
            answers = await self._results(litellm, batch)
        except Exception as exc:  # refused key, unreachable server: stop with the cause
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            self.stats.stopped = f"{self.model_id}: batch API call failed: {first}"
            self.stats.not_sent += len(requests)
            return [_unsent(f"batch API call failed: {first}") for _ in requests]
        state.unlink(missing_ok=True)  # its answers go to the store now
        return [self._answer(answers.get(f"r{i}"), batch, r) for i, r in enumerate(requests)]

    def _kw(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"custom_llm_provider": self._provider}
        if self.config.api_base:
            kw["api_base"] = self.config.api_base
            kw["api_key"] = self.config.api_key or "EMPTY"
        elif self.config.api_key:
            kw["api_key"] = self.config.api_key
        return kw

    def _line(self, index: int, request: GenerateRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._served,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        return {"custom_id": f"r{index}", "method": "POST", "url": "/v1/chat/completions",
                "body": body}  # fmt: skip

    async def _batch(self, litellm: Any, data: bytes, state: Path) -> Any:
        """The batch recorded for this JSONL, or a new one (recorded before anything else)."""
        if state.exists():
            batch_id = json.loads(state.read_text(encoding="utf-8"))["batch_id"]
            self.stats.batches_resumed.append(batch_id)
            return await litellm.aretrieve_batch(batch_id=batch_id, **self._kw())
        upload = await litellm.acreate_file(
            file=("batch.jsonl", data), purpose="batch", **self._kw()
        )
        batch = await litellm.acreate_batch(
            completion_window="24h", endpoint="/v1/chat/completions", input_file_id=upload.id,
            **self._kw(),
        )  # fmt: skip
        write_json(state, {"batch_id": batch.id, "input_file_id": upload.id,
                           "model": self.config.litellm_model, "created": time.time()})  # fmt: skip
        self.stats.batches_submitted.append(batch.id)
        self.stats.sent += data.count(b"\n")
        return batch

    def _unfinished(self, batch: Any, n: int) -> list[GenerateResponse]:
        counts = getattr(batch, "request_counts", None)
        done = f"{getattr(counts, 'completed', 0)}/{getattr(counts, 'total', n)} done"
        self.stats.stopped = (
            f"{self.model_id}: batch {batch.id} is {batch.status} ({done}) after "
            f"{self.config.wait_s:g} s (options.batch_wait_s); rerun to resume polling it (its "
            "id is kept under .cultureqa/batches/; nothing is submitted twice)"
        )
        self.stats.not_sent += n
        return [_unsent(f"batch {batch.id} still {batch.status}") for _ in range(n)]

    async def _results(self, litellm: Any, batch: Any) -> dict[str, dict[str, Any]]:
        """custom_id → output line, from the output file and the error file."""
        found: dict[str, dict[str, Any]] = {}
        for file_id in (batch.output_file_id, getattr(batch, "error_file_id", None)):
            if not file_id:
                continue
            content = await litellm.afile_content(file_id=file_id, **self._kw())
            for raw in content.content.decode("utf-8").splitlines():
                if raw.strip():
                    line = json.loads(raw)
                    found[str(line["custom_id"])] = line
        return found

    def _answer(
        self, line: dict[str, Any] | None, batch: Any, request: GenerateRequest
    ) -> GenerateResponse:
        """One reply, or the reason there is none (counted by cause)."""
        response = (line or {}).get("response") or {}
        status = int(response.get("status_code") or 0)
        body = response.get("body") or {}
        choices = body.get("choices") or []
        text = (choices[0].get("message") or {}).get("content") if choices else None
        if line is None or status != 200 or not text or not str(text).strip():
            cause = "missing" if line is None else f"HTTP {status}" if status != 200 else "empty"
            self.stats.failed[f"batch {cause}"] += 1
            detail = ((body.get("error") or {}).get("message")) or f"batch {batch.status}"
            return GenerateResponse(text=None, status="error", error=f"batch {cause}: {detail}")
        usage = body.get("usage") or {}
        prompt, completion = (
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
        )
        estimated = ""
        if not (prompt or completion):  # no usage: counted from above, never charged $0
            prompt, completion, estimated = estimated_tokens(request, str(text))
            self.stats.usage_estimated[estimated] += 1
        self.stats.ok += 1
        cost = self._cost(prompt, completion)
        return GenerateResponse(str(text), usage=Usage(prompt, completion, cost, estimated))

    def _cost(self, prompt: int, completion: int, strict: bool = False) -> float:
        """Batch price: configured price × the discount, or litellm's batch (or halved) price.

        ``strict``: an unknown price raises (a budget cap cannot be kept without one).
        """
        if self.config.input_cost_per_token is not None:
            full = prompt * self.config.input_cost_per_token + completion * (
                self.config.output_cost_per_token or 0.0
            )
            return full * BATCH_DISCOUNT
        from cultureqa.llm.api.litellm_lib import import_litellm

        litellm = import_litellm()
        try:
            info = litellm.get_model_info(self.config.litellm_model)
            if info.get("input_cost_per_token_batches") is not None:
                out = info.get("output_cost_per_token_batches") or 0.0
                return float(prompt * info["input_cost_per_token_batches"] + completion * out)
            p, c = litellm.cost_per_token(
                model=self.config.litellm_model, prompt_tokens=prompt, completion_tokens=completion
            )
        except Exception:  # not in litellm's table and no configured price: cost unknown, 0
            if strict:
                raise ModelConfigError(
                    f"model '{self.model_id}': spend.budget_usd is set but litellm has no price "
                    f"for {self.config.litellm_model}; set price.input_per_token and "
                    "price.output_per_token in its config"
                ) from None
            return 0.0
        return float(p + c) * BATCH_DISCOUNT


def _unsent(reason: str) -> GenerateResponse:
    """An item this run did not get an answer for (never stored: a rerun asks again)."""
    return GenerateResponse(text=None, status="error", error=f"{NOT_SENT}{reason}")
