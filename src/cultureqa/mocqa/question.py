"""Turn an IndoCulture sentence stem into the second hop of a two-hop question.

IndoCulture contexts are incomplete sentences whose options complete them. The stem becomes a
quoted statement about "that province", preceded by the first-hop clue. Any province, city or
regency the stem names as a location is replaced by a reference back to the province, since the
question must not reveal what the clue is there to identify.
"""

from __future__ import annotations

from dataclasses import dataclass

from cultureqa.knowledge.gazetteer import find_location_mentions
from cultureqa.mocqa.templates import TemplateBook, render

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


def clean_stem(context: str, language: str) -> Stem:
    """Strip location mentions from ``context`` and normalise it for quoting.

    The text is whitespace-normalised first, so the mention spans refer to the cleaned text.
    """
    text = " ".join(context.replace('"', "'").split()).rstrip(" .…")
    removed: list[str] = []
    while True:
        mentions = find_location_mentions(text, language)  # type: ignore[arg-type]
        if not mentions or len(removed) > 10:
            break
        last = max(mentions, key=lambda m: m.span[0])
        removed.append(last.name)
        text = _replace_mention(text, *last.span, language)
    return Stem(text, tuple(reversed(removed)))


def build_question(
    clue: str, stem: str, language: str, book: TemplateBook, index: int
) -> tuple[str, str]:
    """Clue + framed stem as one question; returns the text and the frame's template id."""
    frame, frame_id = book.frame(language, index)
    return render(frame, clue=clue, stem=stem), frame_id
