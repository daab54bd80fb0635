"""Chance references: a seeded random chooser and a fixed-position chooser.

Both answer every kind of request so every setting has a chance row. The random choice is derived
from a hash of (seed, request), not from a global RNG, so it is identical across reruns, request
orders and processes.
"""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence

from cultureqa.core.records import LETTERS
from cultureqa.llm.base import GenerateRequest, GenerateResponse, LoglikRequest, LoglikResponse

_OPTION_LINE = re.compile(r"^\s*([A-J])[.)]\s", re.MULTILINE)


def _option_count(request: GenerateRequest) -> int:
    """Number of lettered options shown in the prompt (at least 2)."""
    text = "\n".join(m.content for m in request.messages)
    letters = {m.group(1) for m in _OPTION_LINE.finditer(text)}
    return max(2, len(letters))


def _unit_hash(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(parts).encode()).digest()[:8], "big")


class _Baseline(ABC):
    supports_loglik = True

    def __init__(self, model_id: str) -> None:
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        """Display id."""
        return self._model_id

    @abstractmethod
    def _choose(self, key: str, k: int) -> int:
        """Index of the option this baseline picks for a request identified by ``key``."""

    async def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResponse]:
        """Answer with a bare letter, the format every MCQ parser accepts."""
        out = []
        for r in requests:
            key = "\x1e".join(m.content for m in r.messages)
            out.append(GenerateResponse(text=LETTERS[self._choose(key, _option_count(r))]))
        return out

    async def loglik(self, requests: Sequence[LoglikRequest]) -> list[LoglikResponse]:
        """Score the chosen continuation 0 and the others -1, so argmax picks the choice."""
        out = []
        for r in requests:
            chosen = self._choose(
                r.context + "\x1e" + "\x1f".join(r.continuations), len(r.continuations)
            )
            scores = tuple(0.0 if i == chosen else -1.0 for i in range(len(r.continuations)))
            out.append(LoglikResponse(logprobs=scores, token_counts=(1,) * len(scores)))
        return out

    async def aclose(self) -> None:  # noqa: B027 - baselines hold no resources
        """Nothing to release."""


class RandomBaseline(_Baseline):
    """Uniform choice, deterministic per (seed, request)."""

    def __init__(self, model_id: str, seed: int) -> None:
        super().__init__(model_id)
        self.seed = seed

    def _choose(self, key: str, k: int) -> int:
        return _unit_hash(str(self.seed), key) % k


class FixedPositionBaseline(_Baseline):
    """Always the option at ``position`` (clamped to the last option)."""

    def __init__(self, model_id: str, position: int) -> None:
        super().__init__(model_id)
        self.position = position

    def _choose(self, key: str, k: int) -> int:
        return min(self.position, k - 1)
