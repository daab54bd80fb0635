"""The real embedded model (Gemma-3-270M) in the default suite: a broken local backend fails CI.

The client's log-likelihoods (padded batches, shared-context paths, the boundary handling of
``_encode_pair``) are checked against an independent computation: the model's own forward pass
through transformers on the unpadded text, ``log_softmax``, summing the continuation's tokens,
whose span comes from the fast tokenizer's character offsets rather than from our code. The
weights come from ``~/.cache/cultureqa/models`` (converted from the bundled GGUF on first use,
about 45 s; offline).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import torch  # hard dependencies (pyproject): a missing backend fails here, it is never skipped

from cultureqa.llm.base import LoglikRequest
from cultureqa.llm.local.local_hf import LocalHFClient

ITEMS = [
    LoglikRequest(
        "Saat upacara pernikahan adat Batak, keluarga pengantin perempuan memberikan",
        (" kain ulos", " kain songket", " kain batik"),
    ),
    LoglikRequest("The capital of France is", (" London", " Paris", " Berlin")),
    LoglikRequest("Di Bali, orang membawa sesajen ke", (" pura", " masjid dan gereja")),
]


def forward_logprob(model: Any, tok: Any, context: str, continuation: str) -> float:
    """Sum of log P(token) over the continuation's tokens, from one unpadded forward pass."""
    enc = tok(context + continuation, add_special_tokens=False, return_offsets_mapping=True)
    ids = [tok.bos_token_id, *enc["input_ids"]]
    first = next(k for k, (start, end) in enumerate(enc["offset_mapping"]) if end > len(context))
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    return sum(float(logp[k, ids[k + 1]]) for k in range(first, len(ids) - 1))


@pytest.fixture(scope="module")
def client() -> LocalHFClient:
    cache = Path.home() / ".cache" / "cultureqa" / "models"
    return LocalHFClient(model_id="gemma3-270m", cache_dir=cache, batch_size=2, num_threads=1)


def test_embedded_model_logliks_match_its_own_forward_pass(client: LocalHFClient) -> None:
    got = asyncio.run(client.loglik(ITEMS))
    model, tok = client._model, client._tok
    for req, resp in zip(ITEMS, got, strict=True):
        assert resp.status == "ok", resp.error
        want = [forward_logprob(model, tok, req.context, c) for c in req.continuations]
        assert resp.logprobs == pytest.approx(want, abs=2e-3), req.context
    paris = got[1].logprobs
    assert max(range(3), key=paris.__getitem__) == 1  # the converted weights make sense


def test_a_broken_backend_fails_the_check(
    client: LocalHFClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted fault: the client scores one token too few; the forward-pass check rejects it."""
    encode = client._encode_pair

    def off_by_one(context: str, continuation: str) -> tuple[list[int], list[int]]:
        ctx, cont = encode(context, continuation)
        return [*ctx, *cont[:1]], cont[1:]

    monkeypatch.setattr(client, "_encode_pair", off_by_one)
    req = ITEMS[0]
    (got,) = asyncio.run(client.loglik([req]))
    model, tok = client._model, client._tok
    want = [forward_logprob(model, tok, req.context, c) for c in req.continuations]
    assert got.logprobs != pytest.approx(want, abs=2e-3)
