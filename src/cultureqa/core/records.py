"""Typed records shared by loaders, runners and scorers, and the column contracts of artifacts."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cultureqa.core.runlog import CALL_COLUMNS

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
    "score_normalisation": "str",
    "margin": "float64",
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "cost_usd": "float64",
    **CALL_COLUMNS,
}


SCORE_SIGNIFICANT = 10
"""Significant digits of every per-option score and margin written to ``predictions.parquet``.

The scores are there so a researcher can compare scoring rules or check agreement with another
harness (lm-eval's log-likelihoods agree to 6.7e-5 on COPAL-ID), keyed by the row's item id. Ten
digits keep all a float32 model computes and drop the float64 tails that differ with the BLAS
kernel; the argmax is taken before rounding. A float32 model's scores still move by ~1e-5 with
the CPU and the padded batch: :data:`cultureqa.core.runlog.NEAR_TIE` counts the picks that could
flip.
"""

NORMALISATION_SUM = "sum"
"""Scores are the summed log-probability of each option's continuation tokens, unnormalised
(lm-eval's ``loglikelihood``); the pick is their argmax."""
NORMALISATION_PROVINCE = "answer: sum; province: per_token_mean (sum / province_tokens)"
"""ID-MoCQA: letters by summed log-probability, provinces by the mean per token (names differ in
length), with each province name's token count in the scores."""


def significant(value: float) -> float:
    """``value`` at :data:`SCORE_SIGNIFICANT` significant digits (inf and NaN unchanged)."""
    return float(f"{value:.{SCORE_SIGNIFICANT}g}")


def pick_best(scores: Sequence[float]) -> tuple[int, float]:
    """Index of the highest score (the first one on an exact tie) and its margin over the next.

    The margin is what a reader needs to judge the pick: one below
    :data:`cultureqa.core.runlog.NEAR_TIE` could flip with floating-point noise.
    One option: ``inf``.
    """
    best = max(range(len(scores)), key=scores.__getitem__)
    rest = [s for i, s in enumerate(scores) if i != best]
    return best, significant(float(scores[best] - max(rest))) if rest else math.inf


def scores_json(scores: Any) -> str:
    """``scores`` (a list, or a dict of lists) as JSON, every float at SCORE_SIGNIFICANT digits."""

    def rounded(value: Any) -> Any:
        if isinstance(value, float):
            return significant(value)
        if isinstance(value, list | tuple):
            return [rounded(v) for v in value]
        if isinstance(value, dict):
            return {k: rounded(v) for k, v in value.items()}
        return value

    return json.dumps(rounded(scores))
