"""Check a row's gold: a letter, a 0-based index or an option's text, never a guess.

An answer that is not a letter ("Banana"), names a letter beyond the options, or says "(B) Aceh"
while option B reads otherwise is a row error; several golds only where ``columns.answer_sep``
declares them.
"""

from __future__ import annotations

import re
from typing import Any

from cultureqa.benchmarks.fields import FieldError, options_from
from cultureqa.benchmarks.load.counts import Where
from cultureqa.benchmarks.load.mapping import as_int, get, option_text, text
from cultureqa.benchmarks.load.options import folded, split_label
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.records import LETTERS

_LETTER_ANSWER = re.compile(r"^\s*(?:\(([A-Za-z])\)|([A-Za-z])[.)]?)\s*$")


def parse_letter(value: str) -> str | None:
    """Read a letter answer: B, b, (B), B. or B) give "B"; anything else ("Banana") gives None."""
    match = _LETTER_ANSWER.match(value)
    if match is None:
        return None
    return (match.group(1) or match.group(2)).upper()


def gold_indices(
    row: dict[str, Any],
    options: tuple[str, ...],
    spec: BenchmarkSpec,
    where: Where,
    among: str,
    moved: list[int] | None,
) -> tuple[int, ...]:
    """Gold positions, first-listed first; several only where ``answer_sep`` allows them."""
    column = spec.columns.answer
    value = get(row, column, where, "answer")
    golds: list[int] = []
    for part in _gold_parts(value, options, spec, where, column):
        index = _answer_index(part, options, spec, where, among, moved)
        if index not in golds:
            golds.append(index)
    return tuple(golds)


def _gold_parts(
    value: Any, options: tuple[str, ...], spec: BenchmarkSpec, where: Where, column: str
) -> list[str]:
    sep = spec.columns.answer_sep
    listed = value if isinstance(value, list | tuple) else None
    if isinstance(value, str) and value.strip().startswith("[") and sep is not None:
        try:
            listed = options_from(value, "list", "|")
        except FieldError:
            listed = None
    if listed is not None:
        if sep is None:
            raise where.error(
                f"answer {value!r} lists several golds; set columns.answer_sep to accept them",
                column,
                "multi_gold_undeclared",
            )
        parts = [option_text(v) for v in listed]
    else:
        found = text(value, where, column, "missing_gold")
        whole = spec.columns.answer_format == "text" and found in options
        parts = [found] if sep is None or whole else [p.strip() for p in found.split(sep)]
    if not parts or any(not p for p in parts):
        raise where.error(f"answer {value!r} has an empty gold", column, "missing_gold")
    return parts


def _answer_index(
    value: str,
    options: tuple[str, ...],
    spec: BenchmarkSpec,
    where: Where,
    among: str,
    moved: list[int] | None,
) -> int:
    column = spec.columns.answer
    fmt = spec.columns.answer_format
    if fmt == "letter":
        index = LETTERS.find(_answer_letter(value, options, where, column))
    elif fmt == "index":
        number = as_int(value)
        if number is None:
            raise where.error(
                f"answer {value!r} is not a 0-based option index", column, "answer_not_index"
            )
        index = moved[number] if moved is not None and 0 <= number < len(moved) else number
    else:
        index = options.index(value) if value in options else -1
        if index < 0:
            raise where.error(
                f"answer {value!r} is not the text of any option", column, "answer_not_option"
            )
    if not 0 <= index < len(options):
        raise where.error(
            f"answer {value!r} is not among the {len(options)} options of '{among}'",
            column,
            "answer_out_of_range",
        )
    return index


def _answer_letter(value: str, options: tuple[str, ...], where: Where, column: str) -> str:
    """The letter of "B", "(b)", "B." — or of "(B) Aceh" when option B's text is "Aceh"."""
    letter = parse_letter(value)
    if letter is not None:
        return letter
    labelled = split_label(value)
    if labelled is None:
        raise where.error(
            f"answer {value!r} is not a letter (A, (B), c. …)", column, "answer_not_letter"
        )
    letter, rest = labelled
    index = LETTERS.index(letter)
    said = (folded(rest), folded(value))  # options with labels stripped, or kept
    if index < len(options) and folded(options[index]) not in said:
        raise where.error(
            f"answer {value!r} names option {letter}, whose text is {options[index]!r}; "
            "fix the answer or the option",
            column,
            "answer_label_mismatch",
        )
    return letter
