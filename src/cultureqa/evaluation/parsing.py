"""Extract an option letter from a free-text reply: strict patterns first, then lenient ones.

Anything we cannot read is ``None`` — an explicit parse error that is counted wrong and reported,
never the raw text scored as if it were an answer. A reply that does not commit to one option is
not read as one either, whatever letter it mentions first: ``ANSWER: A or B`` names several
options, ``The answer is not A.`` negates one, ``maybe A`` hedges; each is unparsable, counted
under its own cause (:data:`PARSE_CAUSES`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from cultureqa.core.records import LETTERS

_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)
_JSON_KEYS = ("answer", "selection", "jawaban", "choice", "option")
_CUE = (
    r"(?:final answer|the answer is|answer|jawaban akhir|jawabannya adalah|jawabannya|jawaban"
    r"|pilihan|option|choice|selection)"
)


NO_LETTER = "no_letter"
SEVERAL = "several_options"
NEGATED = "negated"
HEDGED = "hedged"
PARSE_CAUSES = {
    NO_LETTER: "no option letter in reply",
    SEVERAL: "the reply names several options for its answer (e.g. 'A or B')",
    NEGATED: "the reply negates the option it names (e.g. 'not A')",
    HEDGED: "the reply hedges its answer (e.g. 'maybe A')",
}
"""Why a reply is unparsable: the cause opens the recorded error (``several_options: …``)."""
_NEGATION = r"(?:not|n't|never|nor|neither|bukan|tidak|tak)"
_HEDGE_WORDS = (
    r"\b(?:maybe|perhaps|possibly|probably|might\s+be|could\s+be|not\s+sure|unsure"
    r"|mungkin|barangkali|entah)\b"
)
_HEDGE = re.compile(_HEDGE_WORDS, re.IGNORECASE)
_HEDGE_AFTER = re.compile(rf"\W{{0,3}}{_HEDGE_WORDS}", re.IGNORECASE)
_JOINER = r"(?:,|/|&|\bor\b|\band\b|\batau\b|\bdan\b|\bserta\b)"


@dataclass(frozen=True)
class Reading:
    """What a reply commits to: one letter, or None with the cause it is unparsable."""

    letter: str | None
    cause: str | None = None

    @property
    def error(self) -> str:
        """The recorded error: the cause, then what it means (empty when a letter was read)."""
        return f"{self.cause}: {PARSE_CAUSES[self.cause]}" if self.cause else ""


def parse_cause(error: str) -> str:
    """The cause an unparsable item's recorded error opens with (``no_letter`` when older)."""
    head = str(error).split(":", 1)[0]
    return head if head in PARSE_CAUSES else NO_LETTER


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
    return read_reply(text, k).letter


def read_reply(text: str | None, k: int) -> Reading:
    """The option letter a reply commits to, or why it commits to none.

    Each parser returns the letter and the stretch of the reply that states it (the JSON value,
    the first line, the cue's line, or the whole reply); that stretch must name one option,
    without a negation before it and without a hedge.
    """
    if not text or not text.strip():
        return Reading(None, NO_LETTER)
    valid = _letters(k)
    body = text.strip()
    for parse in (_from_json, _from_bare, _from_cue, _from_single_letter):
        found = parse(body, valid)
        if isinstance(found, Reading):
            return found
        if found is not None:
            letter, stated = found
            doubt = _doubt(stated, letter, valid)
            return Reading(None, doubt) if doubt else Reading(letter)
    return Reading(None, NO_LETTER)


def _doubt(stated: str, letter: str, valid: str) -> str | None:
    """Why a stretch that names ``letter`` does not commit to it, or None when it does.

    Only words bound to the letter count: another option joined to it (``A or B``, ``A/B``), a
    negation before it (``not A``, ``isn't option A``), a hedge before it in its sentence
    (``probably A``) or just after it (``A, maybe``). A justification that mentions other
    options elsewhere on the line is no doubt.
    """
    prefix = r"(?:(?i:option|choice|pilihan)\s+)?\**\(?"
    mine = rf"(?<![A-Za-z]){prefix}{letter}\)?\**(?![A-Za-z])"
    other = rf"(?<![A-Za-z]){prefix}[{valid}]\)?\**(?![A-Za-z])"
    joined = rf"\s*{_JOINER}\s*(?i:either\s+)?"
    if re.search(rf"{mine}{joined}{other}|{other}{joined}{mine}", stated):
        return SEVERAL
    negation = rf"(?i:\b{_NEGATION}\b|n't)\s+(?i:(?:be|is|it|the|answer|option|choice)\s+)*"
    if re.search(rf"{negation}\**\(?{letter}\)?\**(?![A-Za-z])", stated):
        return NEGATED
    for match in re.finditer(mine, stated):
        sentence = re.split(r"[.!?\n]\s", stated[: match.start()])[-1]
        after = stated[match.end() : match.end() + 12]
        if _HEDGE.search(sentence) or _HEDGE_AFTER.match(after):
            return HEDGED
    return None


Found = tuple[str, str] | Reading | None
"""A parser's answer: the letter and the stretch stating it, a refusal with its cause, or no
match (the next parser tries)."""


def _from_json(text: str, valid: str) -> Found:
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
                found = _from_bare(value.strip(), valid)
                if found is not None:
                    return found
    return None


def _from_bare(text: str, valid: str) -> Found:
    match = re.match(rf"^\**\(?([{valid}])\)?\**(?:[.):]|\s*$|\n)", text)
    return (match.group(1), text.split("\n", 1)[0]) if match else None


def _from_cue(text: str, valid: str) -> Found:
    pattern = rf"(?i:{_CUE})\s*(?i:is|adalah|:)?\s*[:：]?\s*\**\(?([{valid}])\)?\**(?![A-Za-z])"
    matches = list(re.finditer(pattern, text))
    if not matches:
        return None
    last = matches[-1]
    return last.group(1), text[last.start() :].split("\n", 1)[0]


def _from_single_letter(text: str, valid: str) -> Found:
    found = set(re.findall(rf"(?<![A-Za-z])\(?([{valid}])\)?(?![A-Za-z'’])", text))
    # A sentence-initial "A word" is the English article, not an option; "A or B" is not.
    if re.search(r"(?:^|[.!?]\s+)A (?!or\b|and\b|atau\b|dan\b)[a-z]", text):
        found.discard("A")
    if len(found) == 1:
        return found.pop(), text
    if len(found) > 1 and any(_doubt(text, letter, valid) == SEVERAL for letter in found):
        return Reading(None, SEVERAL)
    return None
