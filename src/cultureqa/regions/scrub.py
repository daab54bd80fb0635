"""Replace every word that names a region, and find any that survive (docs/region-sets.md §3).

A two-hop item is only two-hop if nothing but the clue points at the region: its name, aliases,
demonyms ("Ethiopians"), capital and the declared leak terms (cities, languages, currencies,
historic polities) are replaced by neutral words before the clue is added, and the leak check
then looks for them again in everything the model reads, clue included (a clue naming
"Equatorial Guinea" as a neighbour leaks "Guinea").

Matching is on word boundaries, longest term first; a term written in capitals (``US``, ``UK``)
matches only in capitals, so the pronoun "us" is never taken for the country.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from cultureqa.regions.tables import Region, Term

_SENTENCE_START = re.compile(r"(^|[.!?]\s+|\n)$")
_PLURAL_KINDS = frozenset({"demonym"})
"""Kinds whose plural ("Ethiopians") is the word with an ``s``; the replacement takes it too."""


def _pattern(term: Term) -> re.Pattern[str]:
    flags = 0 if term.text.isupper() else re.IGNORECASE
    plural = "(?P<s>s)?" if term.kind in _PLURAL_KINDS else ""
    return re.compile(rf"(?<![\w-]){re.escape(term.text)}{plural}(?![\w-])", flags)


@lru_cache(maxsize=4096)
def _compiled(term: Term) -> re.Pattern[str]:
    return _pattern(term)


def ordered_terms(region: Region) -> list[Term]:
    """The region's terms, longest first (so "the United States" goes before "United States")."""
    return sorted(region.terms, key=lambda t: (-len(t.text), t.text))


Lost = dict[str, str]
"""One replaced occurrence: ``{matched, term, kind, lang, source, replacement}``."""


@dataclass(frozen=True)
class Scrubbed:
    """Text with the region's terms replaced, and a record of each replaced occurrence."""

    text: str
    replaced: tuple[Lost, ...]


def scrub(text: str, region: Region) -> Scrubbed:
    """Replace each of ``region``'s terms by its replacement.

    A term without a replacement is left in place, and the leak check then removes the item.
    """
    replaced: list[Lost] = []
    for term in ordered_terms(region):
        if term.replacement is None:
            continue
        pattern = _compiled(term)

        def swap(match: re.Match[str], term: Term = term) -> str:
            words = str(term.replacement) + ("s" if match.groupdict().get("s") else "")
            before = match.string[: match.start()]
            if _SENTENCE_START.search(before):
                words = words[:1].upper() + words[1:]
            replaced.append(
                {
                    "matched": match.group(0), "term": term.text, "kind": term.kind,
                    "lang": term.lang, "source": term.source, "replacement": words,
                }
            )  # fmt: skip
            return words

        text = pattern.sub(swap, text)
    return Scrubbed(text, tuple(replaced))


def leaks(texts: Iterable[str], region: Region, allowed: Iterable[str] = ()) -> list[str]:
    """Every term of ``region`` still present in any of ``texts`` (``term (kind)``).

    ``allowed``: kinds not counted (a clue may state the language or currency it rests on).
    """
    found = []
    joined = "\n".join(texts)
    skip = frozenset(allowed)
    for term in ordered_terms(region):
        if term.kind not in skip and _compiled(term).search(joined):
            found.append(f"{term.text} ({term.kind})")
    return found


def scrub_all(texts: Sequence[str], region: Region) -> tuple[list[str], list[Lost]]:
    """Scrub several texts; the texts and every replacement made."""
    out: list[str] = []
    replaced: list[Lost] = []
    for text in texts:
        s = scrub(text, region)
        out.append(s.text)
        replaced += s.replaced
    return out, replaced
