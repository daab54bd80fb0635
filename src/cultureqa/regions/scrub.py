"""Replace every word that names a region, and find any that survive (docs/region-sets.md §3).

A two-hop item is only two-hop if nothing but the clue points at the region: its name, aliases,
demonyms ("Ethiopians"), capital and the declared leak terms (cities, languages, currencies,
historic polities) are replaced by neutral words before the clue is added, and the leak check
then looks for them again in everything the model reads, clue included (a clue naming
"Equatorial Guinea" as a neighbour leaks "Guinea").

Matching is on word boundaries, longest term first. A term with a capital letter matches only
as written (``US`` never takes the pronoun "us", the city ``Nice`` never takes "a nice dinner");
a term all in lower case (``injera``, ``yen``) matches in any case. Only terms of the text's
language, English and language-neutral (``und``) ones are matched, and names in other languages
only where they have a letter outside ASCII (``Türkiye``): an ASCII name in another language can
be an English word (a Walloon name ``Male``), which is no term of an English sentence; terms of
other kinds (practices, institutions) in another language are loanwords, matched in any text.
Terms of kind ``frame`` (the source's own frame, such as the case bank's Chinese protagonists) are
never replaced nor counted as leaks; the item records them (:func:`frame_terms`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from cultureqa.regions.generation.tables import Region, Term

_SENTENCE_START = re.compile(r"(^|[.!?]\s+|\n)$")
_PLURAL_KINDS = frozenset({"demonym"})
"""Kinds whose plural ("Ethiopians") is the word with an ``s``; the replacement takes it too."""


FRAME = "frame"
"""The kind of a term that describes the source's frame, not the region (declared per set)."""


def _pattern(term: Term) -> re.Pattern[str]:
    """The term as the scrub replaces it.

    A plural only where the kind takes one, a hyphenated compound only where the set declares
    its replacement.
    """
    flags = 0 if term.text != term.text.lower() else re.IGNORECASE
    plural = "(?P<s>s)?" if term.kind in _PLURAL_KINDS else ""
    if term.plural is not None:
        plural = "(?P<many>e?s)?"
    after = r"(?![\w])(?P<compound>-(?=\w))?" if term.compound is not None else r"(?![\w-])"
    before = r"(?<![\w])(?<![^\W\d_]-)"  # "1,000-yen" yes, "X-Bissau" (for Bissau) no
    return re.compile(rf"{before}{re.escape(term.text)}{plural}{after}", flags)


def _found_pattern(term: Term) -> re.Pattern[str]:
    """The term as the leak check finds it.

    Any plural, and inside a hyphenated compound too ("1,000-yen", "euros"), as a reader (and
    ``bench/country_leaks.py``) sees it; a phrase's first letter in either case.
    """
    flags = 0 if term.text != term.text.lower() else re.IGNORECASE
    body = re.escape(term.text)
    if flags == 0 and " " in term.text and term.text[0].isalpha():
        # a phrase's head takes a capital at a sentence start or in a title ("Suku Nias",
        # "suku Nias"; "Nasi Padang", "nasi Padang"); its name keeps its case ("Turkey")
        first = term.text[0]
        body = f"[{first.lower()}{first.upper()}]{re.escape(term.text[1:])}"
    return re.compile(rf"(?<![\w]){body}(?:e?s)?(?![\w])", flags)


# Unbounded: a set's terms (8,367 for the UN members) are scanned in the same order for
# every item, so a bounded LRU smaller than that evicted each pattern just before its next use
# and recompiled them for every item.
@cache
def _found(term: Term) -> re.Pattern[str]:
    return _found_pattern(term)


@cache
def _compiled(term: Term) -> re.Pattern[str]:
    return _pattern(term)


def _matches(term: Term, text: str, pattern: Callable[[Term], re.Pattern[str]]) -> bool:
    """Whether ``pattern(term)`` matches ``text``, compiling it only where it might.

    A term with a capital letter matches only as written (a phrase's head in either case), so
    where the rest of it is not a substring no pattern is compiled: a set has thousands of
    terms and each text holds a few of them. A term in lower case matches in any case, which
    only its regex decides.
    """
    if term.text != term.text.lower() and term.text[1:] not in text:
        return False
    return pattern(term).search(text) is not None


DETERMINERS = frozenset(
    ("the", "a", "an", "this", "that", "these", "those", "its", "his", "her", "their", "our")
)
"""English words that open a noun phrase: a replacement opening with one is a whole phrase."""
_ARTICLES = r"an?|the|this|that|its|his|her|their|our|my|your"
"""Determiners matched before a term, so an indefinite replacement ("a local custom") can drop
its own article after one ("their M-Pesa account" → "their local institution account")."""
# place modifiers ("central X", "northern X") that cannot stand before a whole phrase
_MODIFIERS = (
    r"(?:north|south|east|west)(?:ern)?|(?:north|south)-?(?:east|west)(?:ern)?|central|rural"
    r"|coastal|inland|upland|highland"
)


@cache
def _slot_pattern(term: Term) -> re.Pattern[str]:
    """The term with the English article and place modifier before it, when present."""
    bare = _compiled(term).pattern
    flags = 0 if term.text != term.text.lower() else re.IGNORECASE
    return re.compile(
        rf"(?:(?<![\w'’-])(?P<art>(?i:{_ARTICLES}))\s+)?"
        rf"(?:(?<![\w'’-])(?P<mod>(?i:{_MODIFIERS}))\s+)?{bare}",
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
    art = match.group("art")
    if art and art.casefold() not in ("a", "an", "the") and words.split(" ", 1)[0] in ("a", "an"):
        words = words.split(" ", 1)[1]  # "their a local custom" → "their local custom"
        repairs.append("indefinite article dropped")
        return f"{art} {words}", repairs
    if art and art.casefold() not in ("a", "an", "the"):
        # "her this country host" is left as it is: the rule judge removes it (no slot fits)
        return f"{art} {words}", repairs
    if art:
        if words.split(" ", 1)[0].casefold() in ("a", "an"):
            words = words.split(" ", 1)[1]  # "the a local custom" → "the local custom"
            repairs.append("indefinite article dropped")
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


_POSSESSIVE = re.compile(r"['’]s(?![\w])")
_PLACE_THERE = re.compile(r"^(?P<det>\S+) (?P<noun>.+) there$")


def _place_possessive(words: str, after: str) -> tuple[str, list[str]]:
    """A place phrase before a possessive moves "there" into the adjective "local".

    "Punjab's farmers" → "a region there's farmers" does not read; "a local region's farmers"
    does. The article agrees with "local" ("an island there's" → "a local island's").
    """
    place = _PLACE_THERE.match(words)
    if place is None or not _POSSESSIVE.match(after):
        return words, []
    det = place["det"]
    if det.casefold() == "an":
        det = "A" if det[:1].isupper() else "a"
    return f"{det} local {place['noun']}", ["place possessive"]


NAME_KINDS = frozenset({"name", "alias"})
"""Kinds read from catalogues of names in many languages: filtered by the text's language."""


def in_language(term: Term, language: str | None) -> bool:
    """A term of ``language``'s text: its own, English or language-neutral (``None``: any).

    Only names and aliases are filtered: a catalogue's name in another language may be an English
    word (a Walloon ``Male``). Every other kind in another language is a loanword met as written
    in any text (``Pfand`` in an English scenario about German bottle deposits).
    """
    if language is None or term.kind not in NAME_KINDS:
        return True
    if term.lang.split("-")[0].casefold() in ("und", "en", language.split("-")[0].casefold()):
        return True
    return not term.text.isascii()  # "Vélorie" is a pointer anywhere; "Pain" may be English


def ordered_terms(region: Region, language: str | None = None) -> list[Term]:
    """The region's terms met in ``language``, longest first ("the United States" first)."""
    terms = [t for t in region.terms if in_language(t, language)]
    return sorted(terms, key=lambda t: (-len(t.text), t.text))


def frame_terms(texts: Iterable[str], region: Region, language: str | None = None) -> list[str]:
    """The source's frame terms that also point at ``region`` and stay in ``texts`` (recorded)."""
    joined = "\n".join(texts)
    return [
        t.text
        for t in ordered_terms(region, language)
        if t.kind == FRAME and _compiled(t).search(joined)
    ]


_NOUN_USE = re.compile(
    r"\s+(?:are|were|have|had|do|did|tend|love|like|value|see|say|believe|think|prefer|often"
    r"|usually|always|never|generally|also)\b"
)
"""Words after a demonym that show it stands as a plural noun ("the French are", "the Swedish
value"): a one-word replacement then takes its plural ("the locals are", not "the local are")."""


def _merge_varieties(text: str, replaced: list[dict[str, str]]) -> str:
    """Drop a one-word replacement standing before a phrase replacement made in the same text.

    "Mexican Spanish" → "local the local language" is a local variety of a language, which the
    phrase alone names: "the local language". Each merge is recorded on the phrase's record.
    """
    singles = {r["replacement"] for r in replaced if " " not in r["replacement"]}
    for record in replaced:
        phrase = record["replacement"]
        if phrase.split(" ", 1)[0].casefold() not in DETERMINERS:
            continue
        for word in singles:
            slot = re.compile(rf"(?<![\w'’-]){re.escape(word)} ({re.escape(phrase)})", re.I)
            if slot.search(text):
                text = slot.sub(lambda m: m.group(1), text)
                record["repair"] = ", ".join(filter(None, (record["repair"], "variety merged")))
    return text


Lost = dict[str, str]
"""One replaced occurrence: ``{matched, term, kind, lang, source, replacement, repair,
described}`` (``described``: "yes" where the leak table gave the term its own description)."""


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
    for term in ordered_terms(region, language):
        if term.replacement is None or term.kind == FRAME or not _matches(term, text, _compiled):
            continue
        pattern = _slot_pattern(term) if language == "en" else _compiled(term)

        def swap(match: re.Match[str], term: Term = term) -> str:
            groups = match.groupdict()
            words = str(term.replacement) + ("s" if groups.get("s") else "")
            if groups.get("many"):
                words = str(term.plural)
            elif (
                term.kind == "demonym"
                and language == "en"
                and " " not in words
                and _NOUN_USE.match(match.string, match.end())
            ):
                # "the French are" → "the locals are"; "Americans are" is already plural
                words = term.plural or f"{term.replacement}s"
            if groups.get("compound"):
                words = f"{term.compound}-"
            if match.string[: match.start()].endswith("-"):  # "a 1,000-yen note"
                if term.compound is None:
                    return match.group(0)  # left in place: the leak check removes the item
                words = str(term.compound) + ("-" if groups.get("compound") else "")
            repairs: list[str] = []
            if language == "en":
                words, repairs = _in_slot(match, words)
                words, moved = _place_possessive(words, match.string[match.end() :])
                repairs += moved
            before = match.string[: match.start()]
            if _SENTENCE_START.search(before):
                words = words[:1].upper() + words[1:]
            replaced.append(
                {
                    "matched": match.group(0), "term": term.text, "kind": term.kind,
                    "lang": term.lang, "source": term.source, "replacement": words,
                    "repair": ", ".join(repairs), "described": "yes" if term.described else "",
                }
            )  # fmt: skip
            return words

        text = pattern.sub(swap, text)
    if language == "en":
        text = _merge_varieties(text, replaced)
    text = _drop_repeated_glosses(text, replaced)
    return Scrubbed(text, tuple(replaced))


def _drop_repeated_glosses(text: str, replaced: list[Lost]) -> str:
    """Drop a parenthesis that repeats the replacement just before it.

    A source glosses its own word ("Pfand (deposit)", "huipiles (embroidered blouses)"); where
    the term's replacement is that gloss, the text would read "deposit (deposit)". The gloss
    goes, and the record of the replacement says so (``repair``: "repeated gloss dropped").
    """
    for record in replaced:
        first, _, rest = record["replacement"].partition(" ")
        own = rest and re.fullmatch(_ARTICLES, first, re.IGNORECASE)  # "your younger sibling"
        words = re.escape(rest if own else first + _ + rest)
        slot = re.compile(rf"(?<![\w'’-])({words})\s*\((?i:{words})\)")
        if slot.search(text):
            text = slot.sub(lambda m: m.group(1), text)
            record["repair"] = ", ".join(filter(None, (record["repair"], "repeated gloss dropped")))
    return text


def leaks(
    texts: Iterable[str], region: Region, allowed: Iterable[str] = (), language: str | None = None
) -> list[str]:
    """Every term of ``region`` still present in any of ``texts`` (``term (kind)``).

    ``allowed``: kinds not counted (a clue may state the language or currency it rests on);
    frame terms are never counted. ``language``: the texts' language (``None``: every term).
    """
    found = []
    joined = "\n".join(texts)
    skip = frozenset(allowed) | {FRAME}
    for term in ordered_terms(region, language):
        if term.kind not in skip and _matches(term, joined, _found):
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
