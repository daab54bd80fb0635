"""Text checks that rules can decide, shared by the generator, the rules judge, verify and GX.

Keeping them in one module means the template generator avoids exactly what the verifier and the
dataset suite would later reject, so the offline build does not lose items to its own checks.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

_WORD = re.compile(r"[0-9a-z]+(?:['’\-][0-9a-z]+)*")
STOPWORDS: frozenset[str] = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "is",
        "are",
        "was",
        "be",
        "as",
        "that",
        "this",
        "its",
        "it",
        "his",
        "her",
        "their",
        "them",
        "they",
        "which",
        "who",
        "whom",
        "called",
        "known",
        "into",
        "over",
        "one",
        "two",
        "yang",
        "di",
        "ke",
        "dari",
        "dan",
        "atau",
        "dengan",
        "untuk",
        "pada",
        "dalam",
        "ini",
        "itu",
        "adalah",
        "sebagai",
        "oleh",
        "para",
        "sebuah",
        "seorang",
        "satu",
        "dua",
        "disebut",
        "berupa",
    ]
)
"""Function words never count as copied or shared content (English and Indonesian)."""

ANAPHORS: dict[str, tuple[str, ...]] = {
    "en": ("this province", "that province", "the province"),
    "id": ("provinsi tersebut", "provinsi itu", "provinsi ini"),
}
"""Second-hop references back to the province the clue identifies."""

_LANGUAGE_MARKERS: dict[str, frozenset[str]] = {
    "en": frozenset(["the", "of", "and", "is", "which", "this", "that", "with", "in"]),
    "id": frozenset(["yang", "dan", "di", "dengan", "ini", "itu", "adalah", "pada", "dari"]),
}


def tokens(text: str) -> list[str]:
    """Lowercase, accent-folded word tokens; hyphenated and apostrophe words stay whole."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return _WORD.findall(folded.replace("’", "'"))


def content_tokens(text: str) -> list[str]:
    """Tokens that are not function words."""
    return [t for t in tokens(text) if t not in STOPWORDS]


def _ngrams(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def copied_option(question: str, options: Sequence[str], n: int = 4) -> str | None:
    """The first option whose text the question copies, or None.

    An option is copied when the question contains it whole (options shorter than ``n`` tokens)
    or shares a run of ``n`` tokens with it; runs made only of function words do not count.
    This is the paper's "question shares a long n-gram with an option" made exact for the short
    options of IndoCulture (often one or two words).
    """
    q_grams: dict[int, set[tuple[str, ...]]] = {}
    q_words = tokens(question)
    for option in options:
        words = tokens(option)
        size = min(n, len(words))
        if size == 0:
            continue
        grams = q_grams.setdefault(size, _ngrams(q_words, size))
        for gram in _ngrams(words, size):
            if gram in grams and any(w not in STOPWORDS for w in gram):
                return option
    return None


def distinctive_tokens(options: Sequence[str]) -> set[str]:
    """Content tokens that tell the options apart (words shared by every option are dropped).

    "songket cloth" / "tapis cloth" / "ulos cloth" → {songket, tapis, ulos}: a clue naming any of
    them hints at an option, while "cloth" says nothing.
    """
    per_option = [set(content_tokens(o)) for o in options]
    common = set.intersection(*per_option) if per_option else set()
    return {t for words in per_option for t in words if t not in common and len(t) >= 3}


def shortcut_terms(clue: str, options: Sequence[str]) -> list[str]:
    """Distinctive option words the clue repeats: a shortcut that skips the second hop."""
    found = set(content_tokens(clue)) & distinctive_tokens(options)
    return sorted(found)


def has_anaphor(question: str, language: str) -> bool:
    """Whether the question points back at the province the clue identifies (second hop)."""
    lowered = question.lower()
    return any(a in lowered for a in ANAPHORS.get(language, ()))


def word_count(text: str) -> int:
    """Whitespace-separated words (what a reader counts, not tokens)."""
    return len(text.split())


def looks_like(text: str, language: str) -> bool:
    """Whether ``text`` reads as ``language`` by function-word counts (en vs id).

    Crude on purpose: it only has to catch a question left in the wrong language, where the
    other language's function words dominate.
    """
    words = tokens(text)
    scores = {lang: sum(w in markers for w in words) for lang, markers in _LANGUAGE_MARKERS.items()}
    other = max(v for k, v in scores.items() if k != language)
    return scores.get(language, 0) >= other
