"""Tell how a sample's gold answers point at options: letter, 0-based or 1-based index, or text.

Each format is tried on every sampled row against that row's own options, so "1" with three
options and "(D) Rendang" with option D "Rendang" are judged by what they mean, not by their look.
A gold that fits no format in some rows is named in a note (the loader will refuse or drop it);
one that fits none anywhere is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cultureqa.authoring.sniff.fields import MISSING
from cultureqa.benchmarks.fields import FieldError, options_from, plain
from cultureqa.benchmarks.load import parse_letter, split_label, strip_labels
from cultureqa.core.io import SourceError
from cultureqa.core.records import LETTERS

FORMATS = ("letter", "index", "one_based", "text")
NATIVE_LETTERS = {
    "Myanmar": "ကခဂဃငစ",
    "Thai": "กขคงจฉ",
    "Hangul": "가나다라마바",
    "Devanagari": "कखगघङच",
    "Cyrillic": "АБВГДЕ",
    "Greek": "ΑΒΓΔΕΖ",
    "Arabic": "أبجدهو",
    "Katakana": "アイウエオカ",
    "Han": "甲乙丙丁戊己",
}
"""The letters that label options in other scripts, in order (Burmese က ခ ဂ ဃ as A B C D:
SEA-HELM's Burmese Global-MMLU-Lite file writes its golds so)."""
_INT = re.compile(r"-?\d+(?:\.0+)?")


@dataclass
class Answers:
    """The proposed answer format, separator for several golds, and notes."""

    format: str
    """letter, index, one_based (written as an index template) or text."""
    several: bool = False
    notes: list[str] = field(default_factory=list)
    letters: dict[str, str] = field(default_factory=dict)
    """Another script's option letters → A, B, … (written as a template); empty: none."""


def find_format(answer: pd.Series, rows: list[list[str]], column: str, origin: str) -> Answers:
    """The format every sampled gold fits (the first of FORMATS), or the one most fit."""
    golds = [_split_on_options(_parts(v), _shown(r)) for v, r in zip(answer, rows, strict=True)]
    script, letters = _native_letters(golds)
    if letters:
        golds = [[letters.get(p, p) for p in g] for g in golds]
    several = any(len(g) > 1 for g in golds)
    pairs = [(g, _shown(r)) for g, r in zip(golds, rows, strict=True) if g and r]
    written = [r for g, r in zip(golds, rows, strict=True) if g and r]  # labels kept
    if not pairs:
        raise SourceError(origin, f"column '{column}' holds no gold answer in the sampled rows")
    fits = {f: [all(_fits(f, p, o) or (f == "text" and p in w) for p in g)
                for (g, o), w in zip(pairs, written, strict=True)] for f in FORMATS}  # fmt: skip
    best = max(FORMATS, key=lambda f: (sum(fits[f]), -FORMATS.index(f)))
    found = Answers(best, several, letters=letters if best == "letter" else {})
    if found.letters:
        native = sum(p in letters for v in answer for p in _parts(v))
        found.notes.append(f"{native} sampled golds are {script} letters "
                           f"({' '.join(letters)}): read as {'/'.join(letters.values())} by a "
                           "template")  # fmt: skip
    if not any(fits[best]):
        raise SourceError(
            origin,
            f"cannot tell how column '{column}' names the right option (e.g. "
            f"{pairs[0][0][0]!r} with options {pairs[0][1][:4]}): not a letter, an index or an "
            "option's text; write conf/benchmark/<name>.yaml by hand",
        )
    misfits = [i for i, ok in enumerate(fits[best]) if not ok]
    if misfits:
        first, options = pairs[misfits[0]]
        found.notes.append(
            f"{len(misfits)} of {len(pairs)} sampled golds name none of their row's options as "
            f"{_article(best)} {best} (first: {', '.join(map(repr, first))} with "
            f"{len(options)} options); those rows do not load (the trial load counts them)"
        )
    if best in ("index", "one_based") and all(fits["text"]):
        found.notes.append("golds are numbers that are also option texts: check answer_format")
    if best == "one_based":
        found.notes.append("golds run 1…k (none is 0, some is k): shifted to 0-based")
    numbers = [int(float(p)) for g, _ in pairs for p in g if _INT.fullmatch(p)]
    if best == "index" and numbers and min(numbers) > 0:
        found.notes.append(
            "no sampled gold is 0: if the golds are 1-based, subtract 1 (docs/benchmark-configs.md)"
        )
    return found


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _parts(value: Any) -> list[str]:
    """A gold cell as its listed golds: a list, a list literal, or letters like "A, C"."""
    value = plain(value)
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if str(v).strip()]
    text = "" if value is None else str(value).strip()
    if text in MISSING:
        return []
    if text.startswith("["):
        try:
            return [str(v).strip() for v in options_from(text, "list", "|")]
        except FieldError:
            pass
    if re.fullmatch(r"[A-Ja-j](\s*,\s*[A-Ja-j])+", text):
        return [p.strip() for p in text.split(",")]
    return [text]


def _native_letters(golds: list[list[str]]) -> tuple[str, dict[str, str]]:
    """The script whose option letters are all the golds not written in Latin letters."""
    others = {p for g in golds for p in g if p and not (len(p) == 1 and p.isascii())}
    if not others:
        return "", {}
    for script, letters in NATIVE_LETTERS.items():
        if others <= set(letters):
            last = max(letters.index(p) for p in others)
            return script, {letters[i]: LETTERS[i] for i in range(last + 1)}
    return "", {}


def _split_on_options(golds: list[str], options: list[str]) -> list[str]:
    """A text gold that is no option but lists several (``feet, inch``) as those options.

    Split as the loader's ``answer_sep: ","`` splits it: only where the whole is not an option.
    """
    if len(golds) != 1 or golds[0] in options or "," not in golds[0]:
        return golds
    parts = [p.strip() for p in golds[0].split(",")]
    return parts if all(p in options for p in parts) else golds


def _shown(row: list[str]) -> list[str]:
    return strip_labels(row) or row


def _fits(fmt: str, gold: str, options: list[str]) -> bool:
    if fmt == "letter":
        return _letter_index(gold, options) is not None
    if fmt == "text":
        return gold in options  # as the loader compares: exact, after stripping
    if not _INT.fullmatch(gold):
        return False
    number = int(float(gold))
    if fmt == "index":
        return 0 <= number < len(options)
    return 1 <= number <= len(options)


def _letter_index(gold: str, options: list[str]) -> int | None:
    letter = parse_letter(gold)
    if letter is None:
        labelled = split_label(gold)
        if labelled is None:
            return None
        letter, rest = labelled
        index = LETTERS.index(letter)
        if index >= len(options) or _folded(options[index]) != _folded(rest):
            return None
    index = LETTERS.index(letter)
    return index if index < len(options) else None


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()
