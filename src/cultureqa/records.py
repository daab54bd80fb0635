"""Typed records shared by loaders, runners and scorers, and the column contracts of artifacts."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cultureqa.runlog import CALL_COLUMNS

Scoring = Literal["completion", "mcq"]
LETTERS = "ABCDEFGHIJ"


@dataclass(frozen=True, slots=True)
class McqItem:
    """One multiple-choice question in one language, independent of its source format.

    Slotted: a million-row source is a million items, and a per-instance dict costs ~100 bytes each.
    """

    id: str
    question: str
    options: tuple[str, ...]
    answer_index: int
    language: str
    metadata: dict[str, Any] = field(default_factory=dict)
    answer_indices: tuple[int, ...] = ()
    """Every right answer, first-listed first, when a benchmark declares several; else empty."""

    @property
    def answer_letter(self) -> str:
        """Gold letter (A, B, ...); the first-listed one when there are several."""
        return LETTERS[self.answer_index]

    @property
    def golds(self) -> tuple[int, ...]:
        """Positions of every right answer (an answer is right if it is any of them)."""
        return self.answer_indices or (self.answer_index,)

    @property
    def gold_letters(self) -> str:
        """The gold letters joined by commas ("A" or "A,C")."""
        return ",".join(LETTERS[i] for i in self.golds)


@dataclass(frozen=True)
class Setting:
    """One evaluation condition: how to score, which location context, which language.

    Named ``<scoring>-<location>-<language>`` so DVC, MLflow and tables share one key.
    """

    scoring: Scoring
    location: str
    language: str

    @property
    def name(self) -> str:
        """Stable key used in file names, metric names and MLflow run names."""
        return f"{self.scoring}-{self.location}-{self.language}"

    @classmethod
    def parse(cls, name: str) -> Setting:
        """Inverse of :attr:`name`; raises ValueError naming the bad part."""
        parts = name.split("-")
        if len(parts) != 3 or parts[0] not in ("completion", "mcq"):
            raise ValueError(
                f"setting '{name}' must look like '<completion|mcq>-<location>-<language>'"
            )
        scoring: Scoring = "completion" if parts[0] == "completion" else "mcq"
        return cls(scoring=scoring, location=parts[1], language=parts[2])


# Column contract of the predictions table every evaluation writes (one row per item × setting).
PREDICTION_COLUMNS: dict[str, str] = {
    "benchmark": "str",
    "model": "str",
    "setting": "str",
    "scoring": "str",
    "location": "str",
    "language": "str",
    "item_id": "str",
    "gold": "str",
    "pred": "str",
    "correct": "bool",
    "status": "str",
    "error": "str",
    "raw": "str",
    "scores": "str",
    "margin": "float64",
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "cost_usd": "float64",
    **CALL_COLUMNS,
}


SCORE_DECIMALS = 4
"""Log-likelihoods are shown to 1e-4 in the run log and MLflow. They never enter a DVC output
(:data:`cultureqa.runlog.SCORE_COLUMNS`); the argmax is taken before rounding."""


def pick_best(scores: Sequence[float]) -> tuple[int, float]:
    """Index of the highest score (the first one on an exact tie) and its margin over the next.

    The margin is what a reader needs to judge the pick: one below
    :data:`cultureqa.runlog.NEAR_TIE` could flip with floating-point noise. One option: ``inf``.
    """
    best = max(range(len(scores)), key=scores.__getitem__)
    rest = [s for i, s in enumerate(scores) if i != best]
    return best, float(scores[best] - max(rest)) if rest else math.inf


def scores_json(scores: Any) -> str:
    """``scores`` (a list, or a dict of lists) as JSON, every float rounded to SCORE_DECIMALS."""

    def rounded(value: Any) -> Any:
        if isinstance(value, float):
            return round(value, SCORE_DECIMALS)
        if isinstance(value, list | tuple):
            return [rounded(v) for v in value]
        if isinstance(value, dict):
            return {k: rounded(v) for k, v in value.items()}
        return value

    return json.dumps(rounded(scores))
