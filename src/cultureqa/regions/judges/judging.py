"""Judgement records and the panel's keep rule, shared by the rules judge and the LLM panel.

Both judges produce the same record: eight criteria scored 0–2 (total /16) and a category
OK / Minor / Moderate / Significant. Acceptable means OK or Minor. An item is kept iff at least
``min_acceptable`` judges (2 of 3 for the panel) say Acceptable and no judge says Significant;
a malformed reply counts as neither (DESIGN.md §5.3).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

CRITERIA: tuple[str, ...] = (
    "province_clue_accuracy",
    "conciseness",
    "cultural_alignment",
    "reasoning_structure",
    "answer_discrimination",
    "answer_quality",
    "question_clarity",
    "language_quality",
)
CATEGORIES: tuple[str, ...] = ("OK", "Minor", "Moderate", "Significant")
ACCEPTABLE: frozenset[str] = frozenset({"OK", "Minor"})
MAX_TOTAL = 2 * len(CRITERIA)
JUDGEMENT_COLUMNS = (
    "variant_id", "judge", "scores", "category", "rationale", "status", "error", "raw", "total",
    "acceptable",
)  # fmt: skip
"""The judgements table: one :meth:`Judgement.record` per (item, judge)."""


@dataclass(frozen=True)
class Judgement:
    """One judge's verdict on one variant (or why there is none)."""

    variant_id: str
    judge: str
    scores: Mapping[str, int] = field(default_factory=dict)
    category: str | None = None
    rationale: str = ""
    status: str = "ok"
    """``ok``, ``malformed`` (unparseable), ``empty`` (no text) or ``error`` (call failed)."""
    error: str = ""
    raw: str = ""

    @property
    def total(self) -> int | None:
        """Sum of the eight scores; None without a complete score set."""
        return sum(self.scores.values()) if len(self.scores) == len(CRITERIA) else None

    @property
    def acceptable(self) -> bool:
        """OK or Minor."""
        return self.category in ACCEPTABLE

    def record(self) -> dict[str, Any]:
        """Flat row for the judgements table (scores as JSON text)."""
        row = asdict(self)
        row["scores"] = json.dumps(dict(self.scores), sort_keys=True)
        row["total"] = self.total if self.total is not None else -1
        row["category"] = self.category or ""
        row["acceptable"] = self.acceptable
        return row


def keep(categories: Sequence[str | None], min_acceptable: int) -> bool:
    """The panel rule: ≥ ``min_acceptable`` Acceptable verdicts and no Significant one."""
    n_acceptable = sum(c in ACCEPTABLE for c in categories)
    return n_acceptable >= min_acceptable and "Significant" not in categories


def category_from_scores(
    scores: Mapping[str, int], thresholds: Mapping[str, int], critical: Sequence[str]
) -> str:
    """Category the rules judge derives from its scores.

    A zero on a critical criterion (the clue does not identify the province, a shortcut or
    leak, broken options) is Significant whatever the total; otherwise the total decides.
    """
    if any(scores.get(c, 0) == 0 for c in critical):
        return "Significant"
    total = sum(scores.values())
    for category in ("OK", "Minor", "Moderate"):
        if total >= int(thresholds[category.lower()]):
            return category
    return "Significant"


def decide(judgements: Sequence[Judgement], min_acceptable: int) -> dict[str, Any]:
    """Per-variant decision with the counts behind it."""
    categories = [j.category for j in judgements]
    return {
        "n_judges": len(judgements),
        "n_valid": sum(j.status == "ok" for j in judgements),
        "n_acceptable": sum(j.acceptable for j in judgements),
        "n_significant": sum(c == "Significant" for c in categories),
        "keep": keep(categories, min_acceptable),
    }


def _first_json_object(text: str) -> Any:
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text[start:])
            return value
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
    raise ValueError("no JSON object in the reply")


def _score(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ValueError(f"score '{name}' is not an integer: {value!r}")
    if not 0 <= int(value) <= 2:
        raise ValueError(f"score '{name}' is outside 0–2: {value!r}")
    return int(value)


def parse_reply(variant_id: str, judge: str, text: str) -> Judgement:
    """Parse a panel judge's JSON reply; anything unusable becomes a ``malformed`` record."""
    try:
        data = _first_json_object(text)
        if not isinstance(data, Mapping):
            raise ValueError("reply JSON is not an object")
        raw_scores = data.get("scores")
        if not isinstance(raw_scores, Mapping):
            raise ValueError("missing 'scores' object")
        missing = [c for c in CRITERIA if c not in raw_scores]
        if missing:
            raise ValueError(f"scores lack {missing}")
        scores = {c: _score(raw_scores[c], c) for c in CRITERIA}
        category = _category(data.get("category"))
    except ValueError as exc:
        return Judgement(variant_id, judge, status="malformed", error=str(exc), raw=text)
    return Judgement(variant_id, judge, scores, category, str(data.get("rationale", "")), raw=text)


def _category(value: Any) -> str:
    text = str(value or "").strip().strip(".").lower()
    for category in CATEGORIES:
        if text == category.lower() or text.startswith(category.lower() + " "):
            return category
    raise ValueError(f"category {value!r} is not one of {CATEGORIES}")
