"""Propose a benchmark config from a sample: source, columns, row filter, languages, slices.

The order matters: the answer is found by name, the options by form (with the answer as evidence
for delimited strings), the question among the text fields left (with its cue), the answer format
against each row's own options, and metadata from whatever no role took.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cultureqa.benchmarks.sniff.answers import Answers, find_format
from cultureqa.benchmarks.sniff.fields import ANSWER_NAMES, ID_NAMES, fields_of, pick, texts
from cultureqa.benchmarks.sniff.metadata import find_extras
from cultureqa.benchmarks.sniff.options import Options, find_options
from cultureqa.benchmarks.sniff.question import find_question, ref
from cultureqa.benchmarks.sniff.sample import Sample
from cultureqa.io import SourceError


@dataclass
class Proposal:
    """What ``benchmark add`` writes into the config, and what it wants the user to read."""

    source: dict[str, Any]
    columns: dict[str, Any]
    slices: list[list[str]] = field(default_factory=list)
    rows: dict[str, Any] | None = None
    languages: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def propose(sample: Sample, language: str = "en") -> Proposal:
    """The config a user would write for ``sample``; raises SourceError for what it cannot tell."""
    fields = fields_of(sample.frame)
    origin = sample.path
    answer = pick(fields, ANSWER_NAMES, set(sample.captures))
    if answer is None:
        raise SourceError(
            origin,
            f"cannot tell which field holds the answer (fields: {sorted(fields)}); "
            "write conf/benchmark/<name>.yaml by hand (README: Add a benchmark by config)",
        )
    options = find_options(fields, fields[answer], {answer, *sample.captures}, origin)
    question = find_question(fields, {answer, *options.used, *sample.captures}, origin, language)
    answers = find_format(fields[answer], options.rows, answer, origin)
    taken = {answer, *options.used, *question.used}
    columns: dict[str, Any] = {"id": _id(fields, taken, question.used[0])}
    columns["question"] = question.expr
    label_notes = _options(columns, options)
    _answer(columns, answer, answers)
    roles = {"question": question.expr, "options": _one(options.config)}
    taken |= {columns["id"]} if columns["id"] else set()
    distinct = {c: len({got[c] for _, got in sample.files}) for c in sample.captures}
    extras = find_extras(fields, roles, taken, question.metadata, distinct, len(sample.files))
    columns["metadata"] = extras.metadata
    if extras.types:
        columns["metadata_types"] = extras.types
    notes = [*sample.notes, *question.notes, *label_notes, *answers.notes, *extras.notes]
    if columns["id"] is None:
        notes.append("no unique id column: ids are synthesized from the row")
    return Proposal(
        source=_source(sample),
        columns=columns,
        slices=extras.slices,
        rows={"keep": extras.keep} if extras.keep else None,
        languages=extras.languages,
        notes=notes,
    )


def _options(columns: dict[str, Any], options: Options) -> list[str]:
    """Options, their counts where rows differ, and the label mode; returns the label notes."""
    columns["options"] = options.config
    counts = options.counts()
    if counts:
        columns["option_counts"] = counts
    labels, notes = options.labels()
    if labels:
        columns["option_labels"] = labels
    return notes


def _answer(columns: dict[str, Any], answer: str, answers: Answers) -> None:
    """The answer field and format; 1-based golds become a 0-based index by template."""
    columns["answer"] = answer
    columns["answer_format"] = answers.format
    if answers.format == "one_based":
        columns["answer"] = f"{{{{ ({ref(answer)} | int) - 1 }}}}"
        columns["answer_format"] = "index"
    if answers.several:
        columns["answer_sep"] = ","


def _id(fields: dict[str, pd.Series], exclude: set[str], question: str) -> str | None:
    """A known id name whose values are unique; blank only on rows with no question either."""
    name = pick(fields, ID_NAMES, exclude)
    if name is None:
        return None
    shown = texts(fields[name])
    blank = fields[name].index.difference(shown.index)
    separators = texts(fields[question]).index.intersection(blank).empty
    return name if shown.is_unique and separators else None


def _one(config: Any) -> str:
    if isinstance(config, dict):
        return str(config["from"])
    return config if isinstance(config, str) else ""


def _source(sample: Sample) -> dict[str, Any]:
    if sample.split is not None:
        return {"kind": "hf", "path": sample.path, "hf_split": sample.split}
    return {"kind": "file", "path": sample.path}
