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


DETERMINERS = frozenset(
    ("the", "a", "an", "this", "that", "these", "those", "its", "his", "her", "their", "our")
)
"""English words that open a noun phrase: a replacement opening with one is a whole phrase."""
# place modifiers ("central X", "northern X") that cannot stand before a whole phrase
_MODIFIERS = (
    r"(?:north|south|east|west)(?:ern)?|(?:north|south)-?(?:east|west)(?:ern)?|central|rural"
    r"|coastal|inland|upland|highland"
)


@lru_cache(maxsize=4096)
def _slot_pattern(term: Term) -> re.Pattern[str]:
    """The term with the English article and place modifier before it, when present."""
    bare = _pattern(term).pattern
    flags = 0 if term.text.isupper() else re.IGNORECASE
    return re.compile(
        rf"(?:(?<![\w'’-])(?P<art>an?|the)\s+)?(?:(?<![\w'’-])(?P<mod>{_MODIFIERS})\s+)?{bare}",
        flags,
    )


def _in_slot(match: re.Match[str], words: str) -> tuple[str, list[str]]:
    """The replacement fitted to its English slot, and the repairs made (for the record).

    A phrase replacement ("this country") after a place modifier becomes "the central part of
    this country"; an article before the replacement agrees with it ("an Israeli guest" → "a
    local guest") or goes when the replacement brings its own determiner.
    """
    repairs = []
    own_phrase = words.split(" ", 1)[0].casefold() in DETERMINERS
    if (mod := match.group("mod")) and own_phrase:
        words = f"the {mod.casefold()} part of {words}"
        repairs.append("modifier")
    elif mod:
        words = f"{mod} {words}"
    if art := match.group("art"):
        if words.split(" ", 1)[0].casefold() in DETERMINERS:
            repairs.append("article dropped")
        elif art.casefold() == "the":
            words = f"{art} {words}"
        else:
            fitted = "an" if words[:1].casefold() in "aeiou" else "a"
            if fitted != art.casefold():
                repairs.append("article agreement")
            words = f"{fitted.capitalize() if art[:1].isupper() else fitted} {words}"
    return words, repairs


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


def scrub(text: str, region: Region, language: str = "en") -> Scrubbed:
    """Replace each of ``region``'s terms by its replacement, fitted to its slot in English.

    A term without a replacement is left in place, and the leak check then removes the item.
    """
    replaced: list[Lost] = []
    for term in ordered_terms(region):
        if term.replacement is None:
            continue
        pattern = _slot_pattern(term) if language == "en" else _compiled(term)

        def swap(match: re.Match[str], term: Term = term) -> str:
            words = str(term.replacement) + ("s" if match.groupdict().get("s") else "")
            repairs: list[str] = []
            if language == "en":
                words, repairs = _in_slot(match, words)
            before = match.string[: match.start()]
            if _SENTENCE_START.search(before):
                words = words[:1].upper() + words[1:]
            replaced.append(
                {
                    "matched": match.group(0), "term": term.text, "kind": term.kind,
                    "lang": term.lang, "source": term.source, "replacement": words,
                    "repair": ", ".join(repairs),
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


def ungrammatical(texts: Iterable[str], phrases: Iterable[str]) -> list[str]:
    """English slots a phrase replacement cannot fill: after a determiner or a place modifier.

    ``phrases``: the set's replacements that open with a determiner ("this country"); "in the
    this country" or "in central this country" is a replacement that does not read as grammar.
    """
    joined = "\n".join(texts)
    found = []
    before = rf"(?<![\w'’-])(?:{'|'.join(sorted(DETERMINERS))}|{_MODIFIERS})\s+"
    for phrase in phrases:
        slot = before + re.escape(phrase)
        found += [m.group(0) for m in re.finditer(slot, joined, re.IGNORECASE)]
    return found


def scrub_all(
    texts: Sequence[str], region: Region, language: str = "en"
) -> tuple[list[str], list[Lost]]:
    """Scrub several texts; the texts and every replacement made."""
    out: list[str] = []
    replaced: list[Lost] = []
    for text in texts:
        s = scrub(text, region, language)
        out.append(s.text)
        replaced += s.replaced
    return out, replaced
