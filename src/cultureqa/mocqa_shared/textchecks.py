"""The option-copy check of the ID-MoCQA layout (``expect_questions_to_not_copy_options``).

A question that holds an option whole, or a run of four content words of it, points at that
option: the shared suite's ``statement`` part rejects it (``expectations/twohop_dataset.json``).
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


def tokens(text: str) -> list[str]:
    """Lowercase, accent-folded word tokens; hyphenated and apostrophe words stay whole."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return _WORD.findall(folded.replace("’", "'"))


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
