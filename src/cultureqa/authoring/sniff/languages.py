"""Find each item's language: a path capture or a column whose every value names a language.

A benchmark published as one file per language (``data/{lang}.tsv``) or with a language column
would otherwise be tagged with the one ``--language`` given, so Sundanese items would be sliced
and prompted as Indonesian. Languages are those of BCP 47 and ISO 639 as :mod:`langcodes` knows
them (with the names of :mod:`language_data`): any code or tag (``et``, ``qu``, ``zh-Hant-TW``,
``sun``) and any language's name in English or in itself (``Sundanese``, ``basa Sunda``).

ISO 639-3 makes ordinary words codes (``war`` is Waray, ``sad`` Sandawe, ``men`` Mende, ``yes``
Nyankpa), so a field *not named* as a language counts only with two-letter codes, tags built on
them, three-letter codes of a language that has a two-letter one (``eng``, ``sun``) and names; a
field named as one (``lang``, ``language``, ``{lang}``) takes any valid code. A capture or column
counts only when *every* value it takes is a language, so split names (``train``/``test``) and
topics never are; a name that is also a country's (``Indonesia``) is none either.

A column is stricter than a capture, because a culture benchmark often has a column naming the
culture an item is about (``Korean``, ``Indonesian``) in questions all written in English, and
country codes (``ID``, ``MY``) look like language codes. So a column is a language when its name
says so, or else only when it holds lowercase codes or tags (``id``, ``en-us``); a column of
language names under another name is a note. Whatever the source, the questions tagged with a
language must be written in its script (:mod:`cultureqa.benchmarks.scripts`), or the field
describes something else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import langcodes
import pandas as pd
from language_data import names as language_names

from cultureqa.authoring.sniff.fields import texts
from cultureqa.benchmarks.scripts import language_scripts, mismatch, script_name, text_script

MIN_SCRIPT_SHARE = 0.5
"""Least share of a language's questions that must be written in its script."""
LANGUAGE_NAMES = ("lang", "language", "languages", "bahasa", "locale", "lng", "언어")
"""Names that say a field holds a language (a note when its values are not ones add knows)."""
MAX_COLUMN_LANGUAGES = 50


def language_code(value: str, named: bool = False) -> str | None:
    """The language ``value`` names, as its shortest code, or None.

    ``Sundanese`` → ``su``, ``id-ID`` → ``id``, ``zh-yue`` → ``yue``, ``eng`` → ``en``.

    ``named``: the field is named as a language, so any valid ISO 639 code counts (``war``).
    """
    shown = " ".join(value.strip().split())
    if not shown or shown.startswith("-") or shown.endswith(("-", "_")):
        return None
    tag = shown.replace("_", "-")
    if re.fullmatch(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*", tag) and langcodes.tag_is_valid(tag):
        return _from_tag(tag, named)
    return _from_name(shown)


def _from_tag(tag: str, named: bool) -> str | None:
    try:
        language = langcodes.Language.get(tag, normalize=True)
    except (ValueError, LookupError):
        return None
    code = language.language
    if code is None or language.extlangs or not language.is_valid():
        return None  # en-aug: a file variant, not English; zh-xyz: no such language
    if code == "und" or re.fullmatch(r"q[a-t][a-z]", code) or code in ("mul", "mis", "zxx"):
        return None  # undetermined, private use, several, uncoded, no linguistic content
    short = langcodes.standardize_tag(code, macro=True)
    if len(short) == 3 and not named and len(tag.split("-")[0]) == 3:
        return None  # a three-letter word of its own (war, sad, yes) outside a language field
    return short


def _from_name(name: str) -> str | None:
    """A language's name in English or in itself, exactly (never a country's name)."""
    key = language_names.normalize_name(name)
    if key in _exact_names("territory"):
        return None
    try:
        code = language_names.name_to_code("language", name)
    except (ValueError, LookupError):
        return None
    if code is None:
        return None
    known = language_names.code_to_names(code)
    own = {language_names.normalize_name(n) for n in (known.get("en"), known.get(code)) if n}
    if key not in own and key not in _exact_names("language"):
        return None  # a fuzzy match (music → Mossi) is no name
    return langcodes.standardize_tag(code, macro=True)


@cache
def _exact_names(category: str) -> frozenset[str]:
    """Every English name language_data holds for a language or a territory, normalized."""
    language_names.name_to_code(category, "English", "en")  # loads the trie
    trie = language_names.TRIES.get(f"en/name_to_{category}")
    return frozenset(trie.keys()) if trie is not None else frozenset()


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
        values = _all_languages(seen, _named(name))
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
    """A note when the questions tagged with a language are mostly not in its script."""
    raw = fields[candidate.expr].map(lambda v: str(v).strip())
    codes = raw.map(candidate.values)
    for code in candidate.codes:
        asked = questions[codes == code].map(str)
        judged = [mismatch(q, code) for q in asked if text_script(q) is not None]
        if not judged or not language_scripts(code):
            continue
        share = sum(w is None for w in judged) / len(judged)
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
    return all(raw == raw.lower() and language_code(raw) == raw.split("-")[0] for raw in values)


def _named(name: str) -> bool:
    return any(part in LANGUAGE_NAMES for part in re.split(r"[\W_]+", name.lower()))


def _all_languages(seen: list[str], named: bool) -> dict[str, str] | None:
    if not seen:
        return None
    values = {str(v).strip(): language_code(str(v), named) for v in seen}
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
    values = _all_languages(sorted(set(shown)), named)
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


def one_language_note(questions: pd.Series, language: str) -> str | None:
    """A note when the questions every item is tagged ``language`` for are in another script.

    With one language for all items, a Chinese file among English ones would be evaluated and
    sliced as English without a word; its script shows it.
    """
    judged = [(q, mismatch(q, language)) for q in questions.map(str) if text_script(q)]
    wrong = [q for q, why in judged if why is not None]
    total = len(questions)
    if wrong:
        scripts = pd.Series([script_name(text_script(q) or "") for q in wrong]).value_counts()
        shown = ", ".join(f"{n} in {script}" for script, n in scripts.items())
        own = ", ".join(sorted(map(script_name, language_scripts(language))))
        return (f"{len(wrong)} of {total} sampled questions are written in another script "
                f"({shown}) than '{language}' ({own}): "
                "give items their own language with columns.language (a path capture or column; "
                "docs/benchmarks-loading.md) or pass --language")  # fmt: skip
    return None
