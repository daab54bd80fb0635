"""Baselines are deterministic and behave like chance."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cultureqa.llm.base import GenerateRequest, LoglikRequest, Message
from cultureqa.llm.baselines import FixedPositionBaseline, RandomBaseline
from cultureqa.llm.door import open_client
from cultureqa.llm.store import open_store


def _loglik(n: int) -> list[LoglikRequest]:
    return [LoglikRequest(f"context {i}", (" A", " B", " C")) for i in range(n)]


def test_random_is_deterministic_and_roughly_uniform() -> None:
    first = asyncio.run(RandomBaseline("r", 13).loglik(_loglik(3000)))
    again = asyncio.run(RandomBaseline("r", 13).loglik(_loglik(3000)))
    other = asyncio.run(RandomBaseline("r", 14).loglik(_loglik(3000)))
    picks = [max(range(3), key=r.logprobs.__getitem__) for r in first]
    assert picks == [max(range(3), key=r.logprobs.__getitem__) for r in again]
    assert picks != [max(range(3), key=r.logprobs.__getitem__) for r in other]
    shares = [picks.count(k) / len(picks) for k in range(3)]
    assert all(0.3 < s < 0.37 for s in shares), shares


def test_fixed_position_in_both_modes() -> None:
    out = asyncio.run(FixedPositionBaseline("f", 1).loglik(_loglik(5)))
    assert all(max(range(3), key=r.logprobs.__getitem__) == 1 for r in out)
    prompt = "Q?\nA. x\nB. y\nC. z\nD. w\nAnswer:"
    gen = asyncio.run(
        FixedPositionBaseline("f", 9).generate([GenerateRequest((Message("user", prompt),))])
    )
    assert gen[0].text == "D"  # clamped to the last option shown


@pytest.mark.parametrize(
    "cfg",
    [
        {"id": "random", "backend": "random", "options": {"seed": 3}},
        {"id": "fixed", "backend": "fixed", "options": {"position": 1}},
    ],
    ids=["random", "fixed"],
)
def test_baselines_call_no_model_and_store_nothing(cfg: dict[str, Any], tmp_path: Path) -> None:
    """Issue 33 item 8: a random baseline over 1 M rows wrote 311 MB into the response store."""
    store = open_store(tmp_path / "store.sqlite")
    seen: list[int] = []
    client = open_client(cfg["id"], cfg, store, on_progress=lambda r: seen.append(len(r)))
    gen = [GenerateRequest((Message("user", f"Q{i}\nA. x\nB. y\nC. z"),)) for i in range(2500)]
    ll = [LoglikRequest(f"c{i}", (" a", " b")) for i in range(5)]

    async def go() -> tuple[list[Any], list[Any], list[Any]]:
        try:
            first = await client.generate(gen)
            return first, await client.generate(gen), await client.loglik(ll)
        finally:
            await client.aclose()

    first, again, scored = asyncio.run(go())
    try:
        assert store.count() == 0
    finally:
        store.close()
    assert [r.text for r in first] == [r.text for r in again]  # recomputed alike, for free
    assert all(r.status == "ok" and not r.cached for r in first) and len(scored) == 5
    assert sum(seen) == 2 * 2500 + 5 and client.calls == 0  # no model was called
    assert client.stats.sent == 2 * 2500 + 5  # the baseline answered each
