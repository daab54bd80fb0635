"""The Unicode script a text is written in, and the scripts a language is written in.

A language tag says nothing about the text it is put on: XCOPA's Haitian items tagged ``en``, or
a CMMLU file loaded without ``--language``, read as English. The letters say which script a text
is in (Unicode's ``Script`` property, through :mod:`regex`), and CLDR's likely subtags (through
:mod:`langcodes`) say which script a language is written in: Thai text tagged ``en`` is a
mislabel, whatever the tag.

Only letters count: digits, punctuation and marks are common to every script.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import langcodes
import regex

COMPOSITE = {
    "Hans": ("Hani",), "Hant": ("Hani",), "Hanb": ("Hani", "Bopo"),
    "Jpan": ("Hani", "Hira", "Kana"), "Kore": ("Hang", "Hani"), "Hrkt": ("Hira", "Kana"),
    "Aran": ("Arab",), "Latf": ("Latn",), "Latg": ("Latn",), "Cyrs": ("Cyrl",),
    "Syre": ("Syrc",), "Syrj": ("Syrc",), "Syrn": ("Syrc",), "Geok": ("Geor",),
}  # fmt: skip
"""ISO 15924 codes that name a writing system rather than one Unicode script (``Jpan`` is Han
plus Hiragana plus Katakana; ``Hans`` is Han): the Unicode scripts each stands for."""
NAMES = {"Hani": "Han", "Hira": "Hiragana", "Kana": "Katakana", "Hang": "Hangul",
         "Latn": "Latin", "Cyrl": "Cyrillic", "Arab": "Arabic", "Deva": "Devanagari",
         "Thai": "Thai", "Grek": "Greek", "Hebr": "Hebrew"}  # fmt: skip
"""Names for the scripts messages most often show; any other is shown by its ISO 15924 code."""
WRITTEN_IN = 0.5
"""Least share of a text's letters in one script for the text to be written in it."""
MIN_LETTERS = 3
"""Fewer letters say nothing about a script (``A``, ``pH``, ``2+2``)."""


@cache
def _script_patterns() -> tuple[tuple[str, regex.Pattern[str]], ...]:
    """One pattern per Unicode script that ``regex`` knows by its ISO 15924 code."""
    found = []
    for code in sorted(langcodes.ALL_SCRIPTS):  # type: ignore[attr-defined]
        try:
            found.append((code, regex.compile(rf"\p{{sc={code}}}")))
        except regex.error:  # a composite code (Jpan) or one Unicode does not encode
            continue
    return tuple(found)


@cache
def char_script(char: str) -> str | None:
    """The ISO 15924 code of a letter's Unicode script (None for a non-letter)."""
    if not char.isalpha():
        return None
    for code, pattern in _script_patterns():
        if pattern.match(char):
            return code
    return None


def letter_scripts(text: str) -> Counter[str]:
    """How many of a text's letters are in each script."""
    return Counter(s for s in map(char_script, text) if s is not None)


def text_script(text: str) -> str | None:
    """The script most of a text's letters are in; None with too few letters.

    A writing system when its scripts mix: ``Jpan`` for kanji with kana, ``Kore`` for Hangul.
    """
    counts = letter_scripts(text)
    total = sum(counts.values())
    if total < MIN_LETTERS:
        return None
    if counts["Hira"] + counts["Kana"] and counts["Hira"] + counts["Kana"] + counts["Hani"]:
        return "Jpan"
    if counts["Hang"]:
        return "Kore"
    script, n = counts.most_common(1)[0]
    return script if n / total >= WRITTEN_IN else None


@cache
def language_scripts(language: str) -> frozenset[str]:
    """The Unicode scripts a language tag is written in.

    Its own script subtag, else CLDR's likely script: ``th`` → Thai, ``ja`` → Han, Hiragana and
    Katakana, ``sr-Latn`` → Latin.
    """
    try:
        script = langcodes.Language.get(language).maximize().script
    except (ValueError, LookupError):
        return frozenset()
    if script is None:
        return frozenset()
    return frozenset(COMPOSITE.get(script, (script,)))


def script_name(code: str) -> str:
    """A script's name for messages (``Thai``, ``Han``) or its ISO 15924 code."""
    if code in ("Jpan", "Kore"):
        return {"Jpan": "Japanese (Han and kana)", "Kore": "Korean (Hangul)"}[code]
    return NAMES.get(code, code)


def mismatch(text: str, language: str) -> str | None:
    """Why ``text`` is not in a script ``language`` is written in, or None when it is.

    None too when there are too few letters, or the language's script is unknown, to tell.
    """
    own = language_scripts(language)
    counts = letter_scripts(text)
    total = sum(counts.values())
    if not own or total < MIN_LETTERS:
        return None
    mine = sum(n for s, n in counts.items() if s in own)
    if mine / total >= WRITTEN_IN:
        return None
    found = text_script(text) or counts.most_common(1)[0][0]
    return (f"written in {script_name(found)} ({mine} of {total} letters in the script of "
            f"'{language}': {', '.join(sorted(map(script_name, own)))})")  # fmt: skip


def guess_language(texts: list[str]) -> tuple[str, str] | None:
    """A language for texts whose script names one, with the script's name, or None.

    Thai → ``th``, Hangul → ``ko``, kana → ``ja``, Han alone → ``zh``; None for Latin, Cyrillic,
    Arabic and every other script many languages share (the user must say which).
    """
    scripts = Counter(filter(None, map(text_script, texts)))
    if not scripts:
        return None
    script, n = scripts.most_common(1)[0]
    if n / sum(scripts.values()) < WRITTEN_IN:
        return None
    language = _ONE_LANGUAGE.get(script)
    return (language, script_name(script)) if language else None


_ONE_LANGUAGE = {"Hani": "zh", "Thai": "th", "Kore": "ko", "Hang": "ko", "Jpan": "ja", "Laoo": "lo",
                 "Khmr": "km", "Mymr": "my", "Grek": "el", "Hebr": "he", "Geor": "ka",
                 "Armn": "hy", "Sinh": "si", "Gujr": "gu", "Guru": "pa", "Knda": "kn",
                 "Mlym": "ml", "Orya": "or", "Taml": "ta", "Telu": "te", "Tibt": "bo"}  # fmt: skip
"""Scripts in which one language is written almost alone, so the script names it (Han without
kana: Chinese; a Japanese text has kana)."""
