"""The fields a sniffer can map: top-level columns and the leaves of nested records.

A published JSON file often nests what a config needs (ARC's ``question.stem`` and
``question.choices``, a ``meta.island`` record); the loader reads any of them by dotted path, so
the sniffer offers them as fields beside the columns, by the same names the config will use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from cultureqa.benchmarks.fields import plain
from cultureqa.benchmarks.sources import ROW_COLUMNS

ID_NAMES = ("id", "qid", "idx", "uid", "question_id", "item_id", "no", "nomor", "번호")
QUESTION_NAMES = ("question", "prompt", "query", "stem", "question_stem", "prompt_question",
                  "context", "ctx", "text", "sentence", "goal", "pertanyaan", "soal", "질문",
                  "문제")  # fmt: skip
OPTION_NAMES = ("choices", "options", "candidates", "answers", "endings", "pilihan", "opsi",
                "선택지", "보기")  # fmt: skip
OPTION_WORDS = ("candidate", "candidates", "choices", "options")
"""Words that make a compound name the options (``Candidate Ans``, ``answer_options``)."""
ANSWER_NAMES = ("answer", "answerkey", "answer_key", "answer_idx", "answer_index", "label",
                "gold", "correct", "correct_answer", "target", "kunci", "kunci_jawaban",
                "jawaban", "정답")  # fmt: skip
ANSWER_WORDS = ("answer", "answerkey", "gold", "correct", "kunci", "jawaban", "정답")
"""Words that make a compound name a gold (``answer_majority``, ``gold_label``, ``correctKey``)."""
MODEL_OUTPUT = re.compile(r"pred|output|response|completion|generated|model|logit|score", re.I)
"""Columns holding a model's answers: never proposed as metadata to slice by."""
MISSING = ("", "nan", "None", "<NA>")


def fields_of(
    frame: pd.DataFrame, depth: int = 2, partial: list[str] | None = None
) -> dict[str, pd.Series]:
    """Every column, plus ``a.b`` for each key that every record of a record column has.

    A key only some records have (one annotator's ``reason.W1``) is no field: the loader would
    refuse every row without it. Such keys are appended to ``partial`` for the user's notes.
    """
    found: dict[str, pd.Series] = {}
    for column in frame.columns:
        if str(column) in ROW_COLUMNS:
            continue
        values = frame[column].map(plain)
        found[str(column)] = values
        prefix = str(column)
        if len(values) and values.map(_one_record).all():
            values, prefix = values.map(lambda v: v[0]), f"{column}.0"
            found[prefix] = values
        if depth > 1 and len(values) and values.map(lambda v: isinstance(v, Mapping)).all():
            every = set.intersection(*({str(k) for k in record} for record in values))
            if partial is not None:
                seen = {str(k) for record in values for k in record}
                partial.extend(f"{prefix}.{k}" for k in sorted(seen - every))
            nested = pd.DataFrame({k: values.map(lambda r, k=k: r.get(k)) for k in sorted(every)})
            inner: list[str] | None = [] if partial is not None else None
            for name, series in fields_of(nested, depth - 1, inner).items():
                found[f"{prefix}.{name}"] = series
            if partial is not None and inner:
                partial.extend(f"{prefix}.{k}" for k in inner)
    return found


def _one_record(value: Any) -> bool:
    """A list holding one record: SEA-HELM's ``prompts: [{question, option_a, …}]``.

    Its record's keys become ``prompts.0.question``, a path the loader reads as it is.
    """
    return isinstance(value, list) and len(value) == 1 and isinstance(value[0], Mapping)


def leaf(name: str) -> str:
    """The last part of a dotted field name, lowercased, for matching against known names."""
    return name.rsplit(".", 1)[-1].lower()


def pick(fields: dict[str, pd.Series], names: tuple[str, ...], exclude: set[str]) -> str | None:
    """The first known name present; any top-level column before a nested field.

    So ``gold`` wins over ``choices.label`` although ``label`` comes first in ``names``.
    """
    candidates = [f for f in fields if f not in exclude]
    for depth in sorted({f.count(".") for f in candidates}):
        level = [f for f in candidates if f.count(".") == depth]
        for wanted in names:
            found = next((f for f in level if leaf(f) == wanted), None)
            if found is not None:
                return found
    return None


def is_options_name(name: str) -> bool:
    """Whether a field's name says it holds the options: a known name or a compound of one."""
    return leaf(name) in OPTION_NAMES or bool(name_words(name) & set(OPTION_WORDS))


def name_words(name: str) -> set[str]:
    """The lowercased words of a field's last part: ``Candidate Ans``, ``answerOptions``."""
    last = name.rsplit(".", 1)[-1]
    return {w.lower() for w in re.split(r"[_\-\s]+|(?<=[a-z])(?=[A-Z])", last) if w}


def is_answer_like(name: str) -> bool:
    """Whether a field's name says it holds a gold: a known answer name or a compound of one.

    A model's answer (``pred_answer``) is not a gold.
    """
    if MODEL_OUTPUT.search(name):
        return False
    words = name_words(name)
    if words & set(OPTION_WORDS):  # answer_choices, candidate_answers: the options
        return False
    return leaf(name) in ANSWER_NAMES or bool(words & set(ANSWER_WORDS))


def texts(values: pd.Series) -> pd.Series:
    """Non-blank cells as stripped strings (blanks and nulls left out)."""
    shown = values.map(lambda v: "" if v is None else str(v).strip())
    return shown[~shown.isin(MISSING)]


def is_text(values: pd.Series) -> bool:
    """Whether every non-null cell is a string."""
    return bool(values.map(lambda v: v is None or isinstance(v, str) or _is_nan(v)).all())


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value
