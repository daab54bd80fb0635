"""Extract an option letter from a free-text reply: strict patterns first, then lenient ones.

Anything we cannot read is ``None`` — an explicit parse error that is counted wrong and reported,
never the raw text scored as if it were an answer.
"""

from __future__ import annotations

import json
import re

from cultureqa.records import LETTERS

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)
_JSON_KEYS = ("answer", "selection", "jawaban", "choice", "option")
_CUE = (
    r"(?:final answer|the answer is|answer|jawaban akhir|jawabannya adalah|jawabannya|jawaban"
    r"|pilihan|option|choice|selection)"
)


EMPTY = "empty"
"""Prediction status of an item whose model answered with no text (after the client's retries)."""
EMPTY_ERROR = "empty reply: the model answered with no text"
"""The reason recorded with it (scorers: in ``error``; build stages: as the rejection reason)."""


def is_empty_reply(status: str, text: str | None) -> bool:
    """Whether a call succeeded but the reply holds no text (only whitespace counts as none).

    Such an item is a wrong, unanswered answer with status :data:`EMPTY`, counted apart from
    parse errors and from failed calls (the endpoint answered); like them it counts toward
    ``max_error_share`` under its own cause: a model that answers nothing has not been evaluated.
    """
    return status == "ok" and not (text or "").strip()


def _letters(k: int) -> str:
    return LETTERS[:k]


def parse_letter(text: str | None, k: int) -> str | None:
    """The option letter (of the first ``k``) a reply commits to, or None if it commits to none."""
    if not text or not text.strip():
        return None
    valid = _letters(k)
    body = text.strip()
    for parse in (_from_json, _from_bare, _from_cue, _from_single_letter):
        letter = parse(body, valid)
        if letter is not None:
            return letter
    return None


def _from_json(text: str, valid: str) -> str | None:
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + _OBJECT.findall(text)
    for blob in candidates:
        try:
            obj = json.loads(blob)
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        for key in _JSON_KEYS:
            value = obj.get(key)
            if isinstance(value, str):
                letter = _from_bare(value.strip(), valid)
                if letter:
                    return letter
    return None


def _from_bare(text: str, valid: str) -> str | None:
    match = re.match(rf"^\**\(?([{valid}])\)?\**(?:[.):]|\s*$|\n)", text)
    return match.group(1) if match else None


def _from_cue(text: str, valid: str) -> str | None:
    pattern = rf"(?i:{_CUE})\s*(?i:is|adalah|:)?\s*[:：]?\s*\**\(?([{valid}])\)?\**(?![A-Za-z])"
    matches = re.findall(pattern, text)
    return matches[-1] if matches else None


def _from_single_letter(text: str, valid: str) -> str | None:
    found = set(re.findall(rf"(?<![A-Za-z])\(?([{valid}])\)?(?![A-Za-z'’])", text))
    # A sentence-initial "A word" is the English article, not an option; "A or B" is not.
    if re.search(r"(?:^|[.!?]\s+)A (?!or\b|and\b|atau\b|dan\b)[a-z]", text):
        found.discard("A")
    return found.pop() if len(found) == 1 else None
