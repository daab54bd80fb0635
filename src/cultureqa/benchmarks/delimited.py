"""CSV and TSV sources: with a header row or without one, blank lines kept as rows.

Some published files have no header row (JMMLU's CSVs start with their first question): read as
if they had one, the first question silently becomes the column names and the set loses an item.
``source.header: none`` with ``source.columns`` names the fields instead, and :func:`headerless`
lets ``benchmark add`` notice such a file.

Blank lines are read as rows (all values empty), not passed over by the parser, so the loader
counts them as blank rows and every later row keeps its line's number.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from cultureqa.core.io import SourceError, _check_utf8

HEADERLESS_NAME = re.compile(r"[?？。!]|\s\S+\s\S+\s|^\s*-?\d+(?:\.\d+)?\s*$")
"""A field name no header would have: a sentence (``?``, three spaces' worth of words) or a
number."""


def read_delimited(path: Path, sep: str, names: Sequence[str] | None = None) -> pd.DataFrame:
    """Every row of a CSV (``sep=","``) or TSV (a tab) file as text.

    ``names``: the file has no header row and these are its fields (a row with another number of
    fields is an error naming its line).
    """
    _check_utf8(path)
    kind = "TSV" if sep == "\t" else "CSV"
    try:
        frame = pd.read_csv(
            path,
            sep=sep,
            dtype=str,
            keep_default_na=False,
            encoding="utf-8",
            skip_blank_lines=False,
            header=None if names is not None else "infer",
            names=list(names) if names is not None else None,
            quoting=3 if sep == "\t" else 0,
        )
    except pd.errors.EmptyDataError as exc:
        raise SourceError(path, "file is empty") from exc
    except (pd.errors.ParserError, ValueError) as exc:
        raise SourceError(path, f"cannot parse as {kind}: {' '.join(str(exc).split())}") from exc
    if frame.empty:
        raise SourceError(path, "no data rows")
    if names is not None:
        _same_width(path, sep, len(names))
    return frame


def _same_width(path: Path, sep: str, width: int) -> None:
    """Without a header, pandas pads short rows; a row of another width is the file's error."""
    if sep != "\t":
        return  # quoted CSV fields may hold the separator; the parser has checked the width
    text = path.read_bytes().decode("utf-8-sig")
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() and line.count("\t") + 1 != width:
            raise SourceError(
                path,
                f"line {number} has {line.count(chr(9)) + 1} fields but source.columns names "
                f"{width}",
            )


def headerless(frame: pd.DataFrame) -> str | None:
    """Why the first row read as a header looks like data, or None when it looks like names.

    A header names fields: short, distinct words. A first row holding a question (``?``, a
    sentence), a number, or a value its column repeats below (the answer ``B`` of an answer
    column) is a data row.
    """
    names = [str(c) for c in frame.columns]
    for name in names:
        if HEADERLESS_NAME.search(name):
            return f"the first row holds {name[:60]!r}, a value rather than a field name"
    for column, name in zip(frame.columns, names, strict=True):
        values = frame[column].astype(str).str.strip()
        repeated = values.value_counts()
        labels = len(repeated) <= max(10, len(values) // 4)  # a column of a few labels
        if len(values) >= 4 and labels and name.strip() and repeated.get(name.strip(), 0) >= 2:
            return f"the first row's {name!r} is also a value of its column below"
    return None


_ONE_LETTER = re.compile(r"\s*[A-Ja-j]\s*")


def guess_names(frame: pd.DataFrame) -> tuple[str, ...]:
    """Names for a headerless file's fields by what they hold (the MMLU layout and its kin).

    The last column of single option letters is ``answer``; the column of the longest texts
    before it is ``question``; the columns between them are ``option_1`` … ; any other is
    ``field_<n>``. Without a letters column every field is ``field_<n>``.
    """
    names = [f"field_{n}" for n in range(1, len(frame.columns) + 1)]
    cells = [frame[c].astype(str).str.strip() for c in frame.columns]
    letters = [i for i, v in enumerate(cells) if len(v) and v.map(_ONE_LETTER.fullmatch).all()]
    if not letters or letters[-1] < 2:
        return tuple(names)
    gold = letters[-1]
    question = max(range(gold), key=lambda i: cells[i].str.len().mean())
    names[gold] = "answer"
    names[question] = "question"
    for n, i in enumerate(range(question + 1, gold), start=1):
        names[i] = f"option_{n}"
    return tuple(names)
