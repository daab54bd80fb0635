"""Find a story-cloze layout: a right ending and wrong ones in columns of their own.

IndoCloze (like the English Story Cloze Test) has no answer column: ``Correct Ending`` holds the
right ending and ``Incorrect Ending`` the wrong one, after the story's sentences ``Kalimat-1``…
``Kalimat-4``. Read naively, the sentences look like four options and ``Correct Ending`` like a
gold that names none of them. Here the endings are the options, the right one is always first,
so the proposal shuffles them with a seed (``options.shuffle``) and the story is the question.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from cultureqa.authoring.sniff.fields import is_text, name_words, texts
from cultureqa.authoring.sniff.options import Options, column_run
from cultureqa.authoring.sniff.question import MIN_QUESTION, Question, ref

RIGHT_WORDS = ("correct", "right", "true", "benar", "positive")
WRONG_WORDS = ("incorrect", "wrong", "false", "salah", "negative", "distractor")
SHUFFLE_SEED = 0
"""The seed proposed for ``options.shuffle`` (any integer: the order is reproducible by it)."""


@dataclass(frozen=True)
class Pairwise:
    """The options (right ending first), the question, and the note that explains both."""

    options: Options
    question: Question
    note: str


def find_pairwise(fields: dict[str, pd.Series], answer: str, exclude: set[str]) -> Pairwise | None:
    """A right-answer column of free text with wrong-answer columns named alike, or None.

    ``Correct Ending`` and ``Incorrect Ending`` share every word but the one that says right or
    wrong. A right-answer column of letters or numbers is a gold, not an option: None.
    """
    right_words = name_words(answer)
    if not right_words & set(RIGHT_WORDS) or right_words & set(WRONG_WORDS):
        return None
    if not _free_text(fields[answer]):
        return None
    rest = right_words - set(RIGHT_WORDS)
    wrong = [name for name, values in fields.items()
             if name not in exclude and name != answer and "." not in name
             and name_words(name) & set(WRONG_WORDS) and name_words(name) - set(WRONG_WORDS) == rest
             and is_text(values)]  # fmt: skip
    if not wrong:
        return None
    used = (answer, *wrong)
    rows = [[str(v).strip() for v in row] for row in zip(*(fields[u] for u in used), strict=True)]
    config = {"from": list(used), "shuffle": {"seed": SHUFFLE_SEED}}
    question = _story(fields, set(used) | exclude)
    if question is None:
        return None
    note = (f"story-cloze layout: '{answer}' is the right option and {_quoted(wrong)} the wrong "
            f"one(s) on every row, so the gold would always be A: options shuffled with a seed "
            f"(options.shuffle: {{seed: {SHUFFLE_SEED}}}; each item keeps its original position "
            "as gold_source_position)")  # fmt: skip
    return Pairwise(Options(config, used, rows), question, note)


def _story(fields: dict[str, pd.Series], exclude: set[str]) -> Question | None:
    """The sentences before the endings (``Kalimat-1``…), joined; else one free-text field."""
    free = {k: v for k, v in fields.items() if k not in exclude and "." not in k and is_text(v)}
    run = column_run(free)
    if len(run) >= 2:
        expr = " ".join(f"{{{{ {ref(name)} }}}}" for name in run)
        return Question(expr, tuple(run), notes=[f"question: the story, {_quoted(run)} joined"])
    texts_only = {k: v for k, v in free.items() if _free_text(v)}
    if not texts_only:
        return None
    name = max(texts_only, key=lambda k: float(texts(texts_only[k]).str.len().median()))
    return Question(name, (name,))


def _free_text(values: pd.Series) -> bool:
    shown = texts(values)
    return bool(len(shown)) and shown.str.len().median() >= MIN_QUESTION


def _quoted(names: list[str] | tuple[str, ...]) -> str:
    return ", ".join(f"'{n}'" for n in names)
