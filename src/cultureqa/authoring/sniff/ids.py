"""Find the id column by what ids are: one short, blank-free, unique token on every question row.

A name list misses ids named after the dataset (``MCQID``) and takes a column called ``ID`` that
repeats (one id per source question, several MCQs each). So every field is judged by its values:
unique over the sampled rows that hold a question, none blank there, no whitespace, at most
:data:`MAX_LENGTH` characters. A field whose name says "id" (``id``, ``question_id``, ``MCQID``,
``questionId``) may hold any such values; any other field only codes with letters and digits
(``MCQ-0012``), since a unique number or word (a year, a dish) is content. Among several, a name
that says "id" wins, then a top-level column.
"""

from __future__ import annotations

import re

import pandas as pd

from cultureqa.authoring.sniff.fields import ID_NAMES, texts

MAX_LENGTH = 64
_ID_WORD = re.compile(r"(?:^|[_\W\d])(?:id|idx)$", re.I)
"""``id``, ``question_id``, ``item-idx``: "id" as a word at the end of the name."""
_ID_CASED = re.compile(r"(?:[a-z]Id|ID|IDX)$")
"""``questionId``, ``MCQID``: "id" set apart by its case."""
_CODE = re.compile(r"(?=.*\d)(?=.*[A-Za-z])\S+")


def find_id(fields: dict[str, pd.Series], exclude: set[str], question: str) -> str | None:
    """The field whose values identify the sampled rows that hold a question, or None."""
    asked = texts(fields[question]).index
    if len(asked) < 2:
        return None
    found = [name for name, values in fields.items()
             if name not in exclude and _is_id(values.loc[asked], is_id_name(name))]  # fmt: skip
    if not found:
        return None
    return min(found, key=lambda n: (not is_id_name(n), n.count("."), list(fields).index(n)))


def is_id_name(name: str) -> bool:
    """Whether a field's name says it identifies something (``ID``, ``MCQID``, ``item_id``)."""
    leaf = name.rsplit(".", 1)[-1]
    return leaf.lower() in ID_NAMES or bool(_ID_WORD.search(leaf) or _ID_CASED.search(leaf))


def _is_id(values: pd.Series, named: bool) -> bool:
    if values.map(lambda v: isinstance(v, float | bool | dict | list)).any():
        return False
    shown = texts(values)
    if len(shown) < len(values) or not shown.is_unique:
        return False
    if shown.str.len().max() > MAX_LENGTH or shown.str.contains(r"\s").any():
        return False
    return named or bool(shown.map(lambda v: bool(_CODE.fullmatch(v))).all())
