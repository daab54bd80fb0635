"""Baselines are deterministic and behave like chance."""

from __future__ import annotations

import asyncio

from cultureqa.llm.base import GenerateRequest, LoglikRequest, Message
from cultureqa.llm.baselines import FixedPositionBaseline, RandomBaseline


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
