"""Find each item's language: a path capture or a column whose every value names a language.

A benchmark published as one file per language (``data/{lang}.tsv``) or with a language column
would otherwise be tagged with the one ``--language`` given, so Sundanese items would be sliced
and prompted as Indonesian. A capture or column counts only when *every* value it takes is a
language code or name in :data:`LANGUAGES` (``su``, ``sun``, ``Sundanese``, ``id-ID``); split
names (``train``/``test``) and topics never are. The table is explicit rather than all of
ISO 639-2/3 because those lists make ordinary words codes (``war`` is Waray, ``sad`` Sandawe,
``men`` Mende): a value must be a code or name of a language listed here, and a capture or
column must consist of such values entirely.

A column is stricter than a capture, because a culture benchmark often has a column naming the
culture an item is about (``Korean``, ``Indonesian``) in questions all written in English, and
country codes (``ID``, ``MY``) look like language codes. So a column is a language when its name
says so, or else only when it holds lowercase codes or tags (``id``, ``en-us``); a column of
language names under another name is a note. Whatever the source, a language with a script of
its own (Korean, Chinese, Thai, …) must have that script in the questions tagged with it, or the
field describes something else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cultureqa.authoring.sniff.fields import texts

LANGUAGES: dict[str, tuple[str, ...]] = {
    # code: other codes (ISO 639-2/T and /B, 639-3) and names (English, endonym), lowercased
    "en": ("eng", "english"),
    "id": ("ind", "indonesian", "bahasa indonesia"),
    "ms": ("msa", "may", "zsm", "malay", "bahasa melayu", "bahasa malaysia"),
    "jv": ("jav", "javanese", "basa jawa", "bahasa jawa"),
    "su": ("sun", "sundanese", "basa sunda", "bahasa sunda"),
    "ban": ("balinese", "basa bali", "bahasa bali"),
    "min": ("minangkabau", "minang", "baso minang"),
    "bug": ("buginese", "bugis"),
    "mad": ("madurese",),
    "ace": ("acehnese", "achinese"),
    "bjn": ("banjar", "banjarese"),
    "bbc": ("batak toba",),
    "tl": ("tgl", "tagalog"),
    "fil": ("filipino",),
    "ceb": ("cebuano",),
    "vi": ("vie", "vietnamese", "tiếng việt"),
    "th": ("tha", "thai"),
    "my": ("mya", "bur", "burmese"),
    "km": ("khm", "khmer"),
    "lo": ("lao",),
    "zh": ("zho", "chi", "cmn", "chinese", "mandarin", "中文", "汉语"),
    "yue": ("cantonese",),
    "ja": ("jpn", "japanese", "日本語"),
    "ko": ("kor", "korean", "한국어"),
    "hi": ("hin", "hindi"),
    "bn": ("ben", "bengali", "bangla"),
    "ta": ("tam", "tamil"),
    "te": ("tel", "telugu"),
    "mr": ("mar", "marathi"),
    "ur": ("urd", "urdu"),
    "ar": ("ara", "arabic"),
    "fa": ("fas", "per", "persian", "farsi"),
    "tr": ("tur", "turkish", "türkçe"),
    "he": ("heb", "hebrew"),
    "ru": ("rus", "russian"),
    "uk": ("ukr", "ukrainian"),
    "pl": ("pol", "polish"),
    "cs": ("ces", "cze", "czech"),
    "de": ("deu", "ger", "german", "deutsch"),
    "fr": ("fra", "fre", "french", "français"),
    "es": ("spa", "spanish", "español"),
    "pt": ("por", "portuguese", "português"),
    "it": ("ita", "italian", "italiano"),
    "nl": ("nld", "dut", "dutch"),
    "sv": ("swe", "swedish"),
    "da": ("dan", "danish"),
    "fi": ("fin", "finnish"),
    "el": ("ell", "gre", "greek"),
    "hu": ("hun", "hungarian"),
    "ro": ("ron", "rum", "romanian"),
    "sw": ("swa", "swahili", "kiswahili"),
    "am": ("amh", "amharic"),
    "yo": ("yor", "yoruba"),
    "ha": ("hau", "hausa"),
    "zu": ("zul", "zulu"),
    "af": ("afr", "afrikaans"),
}
_CODES = {name: code for code, names in LANGUAGES.items() for name in (code, *names)}
_NAMES = {n for names in LANGUAGES.values() for n in names if not re.fullmatch(r"[a-z]{2,3}", n)}
SCRIPT_BLOCKS = {
    "Han": ("\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff", ("zh", "yue", "ja")),
    "Kana": ("\u3040-\u30ff", ("ja",)),
    "Hangul": ("\u1100-\u11ff\u3130-\u318f\uac00-\ud7af", ("ko",)),
    "Thai": ("\u0e00-\u0e7f", ("th",)),
    "Lao": ("\u0e80-\u0eff", ("lo",)),
    "Khmer": ("\u1780-\u17ff", ("km",)),
    "Myanmar": ("\u1000-\u109f", ("my",)),
    "Arabic": ("\u0600-\u06ff", ("ar", "fa", "ur")),
    "Hebrew": ("\u0590-\u05ff", ("he",)),
    "Cyrillic": ("\u0400-\u04ff", ("ru", "uk")),
    "Greek": ("\u0370-\u03ff", ("el",)),
    "Devanagari": ("\u0900-\u097f", ("hi", "mr")),
    "Bengali": ("\u0980-\u09ff", ("bn",)),
    "Tamil": ("\u0b80-\u0bff", ("ta",)),
    "Telugu": ("\u0c00-\u0c7f", ("te",)),
    "Ethiopic": ("\u1200-\u137f", ("am",)),
}
"""Unicode blocks of the scripts of their own, with the languages written in them (the other
languages of :data:`LANGUAGES` are written in Latin)."""
SCRIPTS = {
    code: "".join(block for block, codes in SCRIPT_BLOCKS.values() if code in codes)
    for code in {c for _, codes in SCRIPT_BLOCKS.values() for c in codes}
}
MIN_SCRIPT_SHARE = 0.5
"""Least share of a language's questions that must contain its script."""
WRITTEN_IN = 0.3
"""Least share of a question's letters in a script for the question to be written in it."""
TAG_SCRIPTS = ("latn", "cyrl", "arab", "hans", "hant", "hani", "jpan", "kore", "hang", "thai",
               "laoo", "khmr", "mymr", "deva", "beng", "taml", "telu", "ethi", "grek", "hebr",
               "java", "bali", "sund", "bugi")  # fmt: skip
"""ISO 15924 codes of the scripts the languages of :data:`LANGUAGES` are written in; any other
four letters after a code (``id_test``) are a file's name, not a script."""
_TAG = re.compile(
    r"^(?P<base>[a-z]{2,3})(?:[-_](?P<extlang>[a-z]{3}))?"
    rf"(?:[-_](?:{'|'.join(TAG_SCRIPTS)}))?"
    r"(?:[-_](?:[a-z]{2}|[0-9]{3}))?(?:[-_](?:[a-z0-9]{5,8}|[0-9][a-z0-9]{3}))*$",
    re.IGNORECASE,
)
"""A BCP 47 tag: language, then an optional extended language (``zh-yue``), script (``Hant``),
region (``US``, ``419``) and variants. The shape matters: ``en_aug`` (GeoMLAMA's augmented-prompt
files) is not English with a region but a file variant, and ``zh-yue`` is Cantonese, not
Mandarin; reading either as its first two letters would mislabel items."""
LANGUAGE_NAMES = ("lang", "language", "languages", "bahasa", "locale", "lng", "언어")
"""Names that say a field holds a language (a note when its values are not ones add knows)."""
MAX_COLUMN_LANGUAGES = 50


def language_code(value: str) -> str | None:
    """The code ``value`` names (``Sundanese`` → ``su``, ``id-ID`` → ``id``), or None."""
    shown = " ".join(value.strip().split())
    folded = shown.lower()
    if folded in _CODES:
        return _CODES[folded]
    match = _TAG.match(shown)
    if match is None or match["base"].lower() not in _CODES:
        return None
    extlang = (match["extlang"] or "").lower()
    if extlang:  # the extended subtag is the language itself, and must be one add knows
        return _CODES.get(extlang)
    return _CODES[match["base"].lower()]


@dataclass(frozen=True)
class ItemLanguage:
    """The field each item's language comes from, and what its values map to."""

    expr: str
    kind: str
    """``path capture`` or ``column``."""
    values: dict[str, str]
    """Every value seen → its code."""

    @property
    def codes(self) -> list[str]:
        """The languages found, sorted."""
        return sorted(set(self.values.values()))

    def config(self) -> str | dict[str, Any]:
        """``columns.language``: the field, with ``values`` for those that are not codes."""
        mapped = {raw: code for raw, code in sorted(self.values.items()) if raw != code}
        return {"from": self.expr, "values": mapped} if mapped else self.expr

    def shown(self) -> str:
        """The field and its values for a note: ``path capture {lang} (sundanese → su, …)``."""
        where = f"{{{self.expr}}}" if self.kind == "path capture" else f"'{self.expr}'"
        return f"{self.kind} {where} ({_pairs(self.values)})"


@dataclass
class Found:
    """The item language, if any, and the notes on fields named as languages that are not."""

    language: ItemLanguage | None = None
    notes: list[str] = field(default_factory=list)


def find_item_language(
    fields: dict[str, pd.Series],
    captures: dict[str, list[str]],
    exclude: set[str],
    questions: pd.Series,
) -> Found:
    """A path capture (all its values over every file), else a top-level column.

    Args:
        fields: every field of the sample.
        captures: each path capture with its values over all files of the pattern.
        exclude: fields a role reads (question, options, answer, id).
        questions: each sampled row's question text, for the script check.
    """
    found = Found()
    candidates: list[ItemLanguage] = []
    for name, seen in captures.items():
        values = _all_languages(seen)
        if values is not None:
            candidates.append(ItemLanguage(name, "path capture", values))
        elif _named(name):
            found.notes.append(_not_known(f"path capture {{{name}}}", seen))
    for name, series in fields.items():
        if name in exclude or name in captures or "." in name:
            continue
        values = _column(series, _named(name))
        if values is not None and (_named(name) or _codes_only(values)):
            candidates.append(ItemLanguage(name, "column", values))
        elif values is not None:
            found.notes.append(f"column '{name}' holds language names or codes ({_pairs(values)}) "
                               "but is not named as a language (it may say what culture or "
                               "country an item is about): not proposed as each item's language; "
                               f"if it is, declare columns.language: {{from: {name}, values: "
                               "{…}}")  # fmt: skip
        elif _named(name) and _is_flag(series):
            flags = ", ".join(sorted(set(texts(series))))
            found.notes.append(f"column '{name}' is named as a language but holds a yes/no "
                               f"flag ({flags}): not each item's language (it may say whether "
                               "an item needs one)")  # fmt: skip
        elif _named(name) and series.map(lambda v: isinstance(v, str)).all():
            found.notes.append(_not_known(f"column '{name}'", list(texts(series))))
    for candidate in candidates:
        wrong = _script_mismatch(candidate, fields, questions)
        if wrong:
            found.notes.append(wrong)
        elif found.language is None:
            found.language = candidate
    return found


def _script_mismatch(
    candidate: ItemLanguage, fields: dict[str, pd.Series], questions: pd.Series
) -> str | None:
    """A note when questions tagged with a language of its own script lack that script."""
    raw = fields[candidate.expr].map(lambda v: str(v).strip())
    codes = raw.map(candidate.values)
    for code in candidate.codes:
        if code not in SCRIPTS:
            continue
        asked = questions[codes == code].map(str)
        share = asked.str.contains(f"[{SCRIPTS[code]}]").mean() if len(asked) else 1.0
        if share < MIN_SCRIPT_SHARE:
            named = _pairs(candidate.values)
            return (f"{candidate.kind} '{candidate.expr}' names languages ({named}) but only "
                    f"{share:.0%} of the questions tagged {code} are in its script: not each "
                    "item's language (it may say what an item is about)")  # fmt: skip
    return None


def _pairs(values: dict[str, str]) -> str:
    return ", ".join(
        raw if raw == code else f"{raw} → {code}" for raw, code in sorted(values.items())
    )


def _codes_only(values: dict[str, str]) -> bool:
    """Lowercase codes or tags (``id``, ``en-us``): not names, not country codes (``ID``)."""
    return all(raw == raw.lower() and raw not in _NAMES for raw in values)


def _named(name: str) -> bool:
    return any(part in LANGUAGE_NAMES for part in re.split(r"[\W_]+", name.lower()))


def _all_languages(seen: list[str]) -> dict[str, str] | None:
    if not seen:
        return None
    values = {str(v).strip(): language_code(str(v)) for v in seen}
    if not all(values.values()):
        return None
    return {raw: code for raw, code in values.items() if code is not None}


def _column(series: pd.Series, named: bool) -> dict[str, str] | None:
    """A column of languages: no blank cell, every value a language, at least two of them.

    One value repeated counts only under a language name: alone, ``no`` may be a word.
    """
    if not series.map(lambda v: isinstance(v, str)).all():
        return None
    shown = texts(series)
    if len(shown) < len(series) or shown.nunique() > MAX_COLUMN_LANGUAGES:
        return None
    values = _all_languages(sorted(set(shown)))
    if values is None or (not named and len(set(values.values())) < 2):
        return None
    return values


FLAG_VALUES = {"0", "1", "true", "false", "yes", "no", "y", "n"}


def _is_flag(series: pd.Series) -> bool:
    """Two-valued yes/no cells (``0``/``1``, ``True``/``False``), text or not."""
    shown = {v.lower() for v in texts(series)}
    return 1 <= len(shown) <= 2 and shown <= FLAG_VALUES


def _not_known(where: str, seen: list[str]) -> str:
    unknown = sorted({v for v in map(str, seen) if language_code(v) is None})
    shown = ", ".join(unknown[:5]) + (", …" if len(unknown) > 5 else "")
    return (f"{where} is named as a language but holds values add does not know as languages "
            f"({shown}): not proposed as columns.language; map them by hand with "
            "columns.language: {from: …, values: {…}} (docs/benchmarks-loading.md)")  # fmt: skip


def written_in(question: str) -> str | None:
    """The script of its own a question is written in (:data:`SCRIPT_BLOCKS`); None: Latin."""
    letters = [c for c in question if c.isalpha()]
    if not letters:
        return None
    for script, (block, _) in SCRIPT_BLOCKS.items():
        share = len(re.findall(f"[{block}]", question)) / len(letters)
        if share >= WRITTEN_IN:
            return script
    return None


def one_language_note(questions: pd.Series, language: str) -> str | None:
    """A note when the questions every item is tagged ``language`` for are in another script.

    With one language for all items, a Chinese file among English ones would be evaluated and
    sliced as English without a word; its script shows it.
    """
    scripts = questions.map(lambda q: written_in(str(q)))
    own = {name for name, (_, codes) in SCRIPT_BLOCKS.items() if language in codes}
    other = scripts[scripts.notna() & ~scripts.isin(own)]
    total = len(questions)
    if len(other):
        shown = ", ".join(f"{n} in {script} ({'/'.join(SCRIPT_BLOCKS[script][1])})"
                          for script, n in other.value_counts().items())  # fmt: skip
        return (f"{len(other)} of {total} sampled questions are written in another script "
                f"({shown}) but every item is tagged '{language}': give items their own "
                "language with columns.language (a path capture or column; "
                "docs/benchmarks-loading.md)")  # fmt: skip
    mine = int(scripts.isin(own).sum())
    if own and total and mine / total < MIN_SCRIPT_SHARE:
        return (f"only {mine} of {total} sampled questions are in the script of '{language}' "
                f"({', '.join(sorted(own))}): check --language")  # fmt: skip
    return None
