"""Turn an IndoCulture sentence stem into the second hop of a two-hop question.

IndoCulture contexts are incomplete sentences whose options complete them. The stem becomes a
quoted statement about "that province", preceded by the first-hop clue. Any province, city or
regency the stem names as a location is replaced by a reference back to the province, since the
question must not reveal what the clue is there to identify.
"""

from __future__ import annotations

from dataclasses import dataclass

from cultureqa.knowledge.gazetteer import (
    CULTURAL_HEAD_NOUNS,
    PEOPLE_HEADS_ID,
    NameLeak,
    find_location_mentions,
    find_own_province_leaks,
)
from cultureqa.mocqa_build.templates import TemplateBook, render

_REFERENCE = {"en": "this province", "id": "provinsi ini"}
_PREPOSITIONS = {
    "en": frozenset(["in", "at", "from", "to", "across", "throughout", "within", "near"]),
    "id": frozenset(["di", "dari", "ke"]),
}
_PLACE_NOUNS = frozenset(
    [
        "the",
        "of",
        "kota",
        "kabupaten",
        "kab",
        "provinsi",
        "daerah",
        "wilayah",
        "city",
        "town",
        "regency",
        "province",
    ]
)


@dataclass(frozen=True)
class Stem:
    """A stem ready to quote, and the place names taken out of it."""

    text: str
    removed: tuple[str, ...]
    rewritten: tuple[str, ...] = ()
    """Own-province terms replaced by "local"/"setempat" ("Batak" in "a Batak wedding")."""


def _replace_mention(text: str, start: int, end: int, language: str) -> str:
    """Replace one mention, with the place nouns and preposition before it, by the reference.

    "di Kota Medan" → "di provinsi ini"; "in the province of Bali" → "in this province";
    a bare "Bali" → "this province".
    """
    words = text[:start].split()
    i = len(words)
    while i > 0 and words[i - 1].lower() in _PLACE_NOUNS:
        i -= 1
    reference = _REFERENCE[language]
    if i > 0 and words[i - 1].lower() in _PREPOSITIONS.get(language, frozenset()):
        i -= 1
        reference = f"{words[i]} {reference}"
    prefix = " ".join(words[:i])
    if not prefix and text[:1].isupper():
        reference = reference[:1].upper() + reference[1:]
    return " ".join(p for p in (prefix, reference) if p) + text[end:]


_LOCAL = {"en": "local", "id": "setempat"}
_HEADS = CULTURAL_HEAD_NOUNS | PEOPLE_HEADS_ID


def _rewrite_term(text: str, leak: NameLeak, language: str) -> str:
    """Replace an own-province term by "local" (en) / "setempat" (id), keeping the sentence.

    "At a Batak customary wedding" → "At a local customary wedding"; "orang Batak" → "orang
    setempat"; "Coto Makassar" → "local coto" / "coto setempat"; a bare people name with no
    noun around it becomes "the local people" / "masyarakat setempat".
    """
    start, end = leak.span
    before, after = text[:start], text[end:]
    words = before.split()
    if language == "id":
        if words and words[-1].lower() in _HEADS:
            return before + _LOCAL["id"] + after
        return before + "masyarakat setempat" + after
    if words and words[-1].lower() in CULTURAL_HEAD_NOUNS:  # "Coto Makassar" → "local coto"
        head_start = before.rstrip().rfind(" ") + 1
        head = before[head_start:].strip()
        lead = "Local " if head_start == 0 else "local "
        return before[:head_start] + lead + head.lower() + after
    following = after.lstrip()
    if following[:1].isalpha() and not following.lower().startswith(("and ", "or ")):
        text = before + _LOCAL["en"] + after  # adjective: "Batak wedding" → "local wedding"
    else:
        text = before + "the local people" + after
    return text.replace(" an local", " a local").replace("An local", "A local")


def clean_stem(context: str, language: str, province: str | None = None) -> Stem:
    """Strip location mentions (and, given ``province``, its own terms) from ``context``.

    The text is whitespace-normalised first, so the mention spans refer to the cleaned text.
    A statement that names its province's people makes the clue unnecessary (one hop), so
    those terms are rewritten to "local"/"setempat"; what cannot be rewritten stays and is
    caught by verify.
    """
    text = " ".join(context.replace('"', "'").split()).rstrip(" .…")
    removed: list[str] = []
    while len(removed) <= 10:
        mentions = find_location_mentions(text, language)  # type: ignore[arg-type]
        if not mentions:
            break
        last = max(mentions, key=lambda m: m.span[0])
        removed.append(last.name)
        text = _replace_mention(text, *last.span, language)
    rewritten: list[str] = []
    while province is not None and len(rewritten) <= 10:
        leaks = find_own_province_leaks(text, language, province)  # type: ignore[arg-type]
        if not leaks:
            break
        last_leak = leaks[-1]
        rewritten.append(f"{last_leak.name} ({last_leak.kind})")
        text = _rewrite_term(text, last_leak, language)
    return Stem(text, tuple(reversed(removed)), tuple(reversed(rewritten)))


def build_question(
    clue: str, stem: str, language: str, book: TemplateBook, index: int
) -> tuple[str, str]:
    """Clue + framed stem as one question; returns the text and the frame's template id."""
    frame, frame_id = book.frame(language, index)
    return render(frame, clue=clue, stem=stem), frame_id
