"""Find the question and any cue that belongs in it, as a column or a Jinja question template.

A cue is text the model must read with the question: a passage, a hint, a premise. The config has
one question field, so a cue joins the question in a template (lm-eval's ``doc_to_text``). COPA's
layout (a premise and a ``cause``/``effect`` column) gets the question its relation asks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from cultureqa.authoring.sniff.fields import QUESTION_NAMES, is_text, leaf, name_words, pick, texts
from cultureqa.authoring.sniff.ids import is_id_name
from cultureqa.core.io import SourceError

CUE_NAMES = ("context", "passage", "premise", "hint", "background", "scenario", "situation",
             "story", "paragraph", "article", "dialogue", "konteks", "petunjuk", "bacaan",
             "wacana", "situasi", "cerita", "지문", "문맥")  # fmt: skip
MIN_QUESTION = 12
"""Shortest median length of a field taken as the question by its content alone."""
RELATION = {
    "en": ("What was the cause?", "What happened as a result?"),
    "id": ("Apa penyebabnya?", "Apa yang terjadi sebagai akibatnya?"),
}
"""COPA's two questions, by language (others get English and a note)."""


@dataclass
class Question:
    """The question field (a column, a path or a template) and what it reads."""

    expr: str
    used: tuple[str, ...]
    metadata: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def find_question(
    fields: dict[str, pd.Series], exclude: set[str], origin: str, language: str
) -> Question:
    """The question, joined with a cue column where the sample has one."""
    text_fields = {k: v for k, v in fields.items() if k not in exclude and is_text(v)}
    copa = _copa(text_fields, language)
    if copa is not None:
        return copa
    name = pick(text_fields, QUESTION_NAMES[:1], set()) or _compound(text_fields)
    name = name or pick(text_fields, QUESTION_NAMES, set())
    notes = []
    if name is None:
        name = _longest_text(text_fields, origin)
        notes.append(f"question: '{name}', the longest free text (no field has a known name)")
    cue = pick(text_fields, CUE_NAMES, {name}) or _cue_word(text_fields, name)
    if cue is not None and _is_label(text_fields[cue]):
        shown = texts(text_fields[cue])
        notes.append(f"'{cue}' is named like a cue but holds short repeated labels "
                     f"({shown.nunique()} values over {len(shown)} rows, e.g. "
                     f"{shown.iloc[0]!r}): left out of the question")  # fmt: skip
        cue = None
    if cue is None or leaf(name) in CUE_NAMES:
        return Question(name, (name,), notes=notes)
    blank = len(texts(text_fields[cue])) < len(text_fields[cue])
    shown = f"{{{{ {ref(cue)} }}}}\n"
    if blank:
        shown = f"{{% if {ref(cue)} is string and {ref(cue)}.strip() %}}{shown}{{% endif %}}"
    notes.append(f"cue column '{cue}' joins the question in a template (edit it freely)")
    return Question(f"{shown}{{{{ {ref(name)} }}}}", (name, cue), notes=notes)


QUESTION_WORDS = ("question", "questions", "pertanyaan", "soal")
MIN_CUE = 40
"""Median length under which a repeated cue-named field is a label (a topic), not a passage."""


def _compound(fields: dict[str, pd.Series]) -> str | None:
    """A top-level field of free text whose name has a question word (``Corresponding Questions``).

    It comes before ``prompt`` or ``context``: GeoMLAMA's ``Prompt`` is the masked sentence
    for a masked language model, its ``Corresponding Questions`` the question a chat model reads.
    Names like ``question_type`` hold labels, so the field must hold mostly distinct text.
    """
    for name, values in fields.items():
        words = name_words(name)
        shown = texts(values)
        if ("." not in name and words & set(QUESTION_WORDS) and not is_id_name(name)
                and len(shown) and shown.nunique() >= len(shown) / 2
                and shown.str.contains(r"\s").mean() >= 0.5
                and shown.str.len().median() >= MIN_QUESTION):  # fmt: skip
            return name  # words, not codes: question_id holds long unique tokens too
    return None


CUE_WORDS = ("text", "passage", "context", "paragraph", "story", "article")
"""Words that make a compound name, or a bare ``text`` beside a question, a cue (Belebele's
``text`` and ``flores_passage``)."""


def _cue_word(fields: dict[str, pd.Series], question: str) -> str | None:
    """A field beside the question named by a cue word, holding text longer than the question."""
    asked = texts(fields[question]).str.len().median()
    for name, values in fields.items():
        words = name_words(name)
        shown = texts(values)
        if (name != question and words & set(CUE_WORDS) and len(shown)
                and shown.str.len().median() > asked):  # fmt: skip
            return name
    return None


def _is_label(values: pd.Series) -> bool:
    """Short values that repeat (GeoMLAMA's ``Context``: ``driver seat``): a topic, not a cue."""
    shown = texts(values)
    return bool(len(shown)) and (
        shown.nunique() < len(shown) / 2 and shown.str.len().median() < MIN_CUE
    )


def _longest_text(fields: dict[str, pd.Series], origin: str) -> str:
    """The field of free text (mostly distinct values) with the longest median value."""
    lengths = {
        name: float(shown.str.len().median())
        for name, values in fields.items()
        if len(shown := texts(values)) and shown.nunique() >= len(shown) / 2
    }
    candidates = {k: v for k, v in lengths.items() if v >= MIN_QUESTION}
    if not candidates:
        raise SourceError(
            origin,
            f"cannot tell which field holds the question (text fields: {sorted(fields)}); "
            "write conf/benchmark/<name>.yaml by hand (docs/benchmark-configs.md)",
        )
    return max(candidates, key=lambda k: candidates[k])


def _copa(fields: dict[str, pd.Series], language: str) -> Question | None:
    """COPA: a premise and a column whose every value is ``cause`` or ``effect``."""
    relation = next(
        (k for k, v in fields.items() if len(texts(v)) == len(v) and len(v)
         and set(texts(v).str.casefold()) <= {"cause", "effect"}),
        None,
    )  # fmt: skip
    premise = pick(fields, ("premise", "context", "sentence", "text"), {relation or ""})
    if relation is None or premise is None:
        return None
    cause, effect = RELATION.get(language, RELATION["en"])
    expr = (
        f"{{{{ {ref(premise)} }}}} {{{{ '{cause}' if {ref(relation)} == 'cause' "
        f"else '{effect}' }}}}"
    )
    notes = [f"COPA layout: the question is '{premise}' plus what '{relation}' asks"]
    if language not in RELATION:
        notes.append(f"the cause/effect questions are in English: translate them to {language}")
    return Question(expr, (premise, relation), {"relation": relation}, notes)


def ref(name: str) -> str:
    """How a template names a field: ``meta.island`` as it is, ``row['Kalimat-1']`` otherwise.

    A path through a list (``prompts.0.text``, as :func:`~cultureqa.benchmarks.fields.resolve`
    reads it) is ``prompts[0].text``.
    """
    parts = name.split(".")
    if all(part.isidentifier() for part in parts) and parts[0] != "row":
        return name
    if (
        len(parts) > 1
        and parts[0].isidentifier()
        and parts[0] != "row"
        and all(p.isidentifier() or p.isdigit() for p in parts[1:])
    ):
        return parts[0] + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in parts[1:])
    return f"row[{name!r}]"
