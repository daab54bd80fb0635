"""Propose a benchmark config from a sample: source, columns, row filter, languages, slices.

The order matters: the answer is found by name, the options by form (with the answer as evidence
for delimited strings), the question among the text fields left (with its cue), the answer format
against each row's own options, each item's language from a path capture or column whose values
are all languages, and metadata from whatever no role took.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cultureqa.authoring.sniff.answers import Answers, find_format
from cultureqa.authoring.sniff.fields import (
    ANSWER_NAMES,
    OPTION_NAMES,
    fields_of,
    is_answer_like,
    leaf,
    pick,
)
from cultureqa.authoring.sniff.ids import find_id, is_id_name
from cultureqa.authoring.sniff.instruction import find_embedded, find_instruction
from cultureqa.authoring.sniff.languages import (
    ItemLanguage,
    find_item_language,
    one_language_note,
)
from cultureqa.authoring.sniff.metadata import find_extras
from cultureqa.authoring.sniff.options import Options, find_options
from cultureqa.authoring.sniff.pairwise import find_pairwise
from cultureqa.authoring.sniff.question import find_question, ref
from cultureqa.authoring.sniff.sample import Sample
from cultureqa.benchmarks.scripts import guess_language, script_name, text_script
from cultureqa.core.io import SourceError


@dataclass
class Proposal:
    """What ``benchmark add`` writes into the config, and what it wants the user to read."""

    source: dict[str, Any]
    columns: dict[str, Any]
    slices: list[list[str]] = field(default_factory=list)
    rows: dict[str, Any] | None = None
    languages: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    item_language: ItemLanguage | None = None
    """Where each item's language comes from (``columns.language``); None: one language."""
    language: str = "en"
    """The one language of every item when none carry their own: ``--language``, else the one
    the questions' script names, else English, said in a note."""


DEFAULT_LANGUAGE = "en"


def propose(sample: Sample, language: str | None = None) -> Proposal:
    """The config a user would write for ``sample``; raises SourceError for what it cannot tell.

    ``language`` (``--language``) tags every item only when no capture or column gives items
    their own; None: not given (``en`` then).
    """
    fallback = language or DEFAULT_LANGUAGE
    partial: list[str] = []
    fields = fields_of(sample.frame, partial=partial)
    origin = sample.path
    answer = _answer_field(fields, set(sample.captures))
    if answer is None:
        raise SourceError(
            origin,
            f"cannot tell which field holds the answer (fields: {sorted(fields)}); "
            "write conf/benchmark/<name>.yaml by hand (docs/benchmark-configs.md)",
        )
    pair = find_pairwise(fields, answer, set(sample.captures))
    if pair is not None:  # a right ending beside wrong ones: the endings are the options
        options, question = pair.options, pair.question
        answers = Answers("index", notes=[pair.note])
    else:
        options = find_options(fields, fields[answer], {answer, *sample.captures}, origin)
        used = {answer, *options.used, *sample.captures}
        question = find_question(fields, used, origin, fallback)
        answers = find_format(fields[answer], options.rows, answer, origin)
    taken = {answer, *options.used, *question.used}
    columns: dict[str, Any] = {"id": find_id(fields, taken, question.used[0])}
    givers, gold_notes = _gold_givers(fields, answer, taken | set(sample.captures))
    columns["question"] = question.expr
    instruction = find_instruction(fields[question.expr]) if question.expr in fields else None
    embedded = None
    if instruction is not None:
        columns["question"] = instruction.template(ref(question.expr))
    elif question.expr in fields:
        embedded = find_embedded(fields[question.expr])
        if embedded is not None:
            columns["question"] = embedded.template(ref(question.expr))
    asked = pd.DataFrame({u: fields[u].map(str) for u in question.used}).agg(" ".join, axis=1)
    golds = fields[answer] if answers.format == "text" else None
    label_notes = _options(columns, options, golds, asked)
    _answer(columns, answer, answers)
    if pair is not None:
        columns["answer"] = "{{ 0 }}"  # the right ending, first before the shuffle
    roles = {"question": question.expr, "options": _one(options.config)}
    taken |= {columns["id"]} if columns["id"] else set()
    captured = {c: sorted({got[c] for _, got in sample.files}) for c in sample.captures}
    found = find_item_language(fields, captured, taken, asked)
    if found.language is not None:
        columns["language"] = found.language.config()
        taken.add(found.language.expr)
        roles["language"] = found.language.expr
    distinct = {c: len(v) for c, v in captured.items()}
    extras = find_extras(
        fields, roles, taken | givers, question.metadata, distinct, len(sample.files)
    )
    columns["metadata"] = extras.metadata
    if extras.types:
        columns["metadata_types"] = extras.types
    notes = [*sample.notes, *question.notes, *label_notes, *answers.notes, *gold_notes]
    notes += extras.notes
    if found.language is None and language is None:
        fallback, said = _script_language(asked, origin)
        notes.append(said)
    else:
        notes += _language_notes(found.language, language, extras.languages)
    notes += found.notes
    if found.language is None:
        notes += filter(None, [one_language_note(asked, fallback)])
    if found.language is not None:
        extras.languages = {}
        if len(found.language.codes) > 1:
            extras.slices.append(["language"])
    if instruction is not None:
        notes.extend(instruction.notes(question.expr))
    if embedded is not None:
        notes.extend(embedded.notes(question.expr))
    if partial:
        shown = ", ".join(f"'{p}'" for p in partial[:5]) + (", …" if len(partial) > 5 else "")
        notes.append(f"{shown}: in only some sampled rows, so not proposed (a field every row "
                     "has can be; add the others by hand with a template that allows their "
                     "absence)")  # fmt: skip
    if columns["id"] is None:
        notes.append("no unique id column: ids are synthesized from the row")
    elif not is_id_name(columns["id"]):
        notes.append(f"id: '{columns['id']}', codes unique on every sampled row (no field is "
                     "named as an id)")  # fmt: skip
    return Proposal(
        source=_source(sample),
        columns=columns,
        slices=extras.slices,
        rows={"keep": extras.keep} if extras.keep else None,
        languages=extras.languages,
        notes=notes,
        item_language=found.language,
        language=fallback,
    )


def _script_language(asked: pd.Series, origin: str) -> tuple[str, str]:
    """Every item's language when no ``--language`` is given and no field carries one.

    The script of the questions names it when one language is written in it (Thai, Hangul,
    kana, Han alone); Latin is English's, said so; another shared script (Cyrillic, Arabic,
    Devanagari) is refused: add cannot tell Russian from Ukrainian, and English is surely wrong.
    """
    texts = list(asked.map(str))
    guessed = guess_language(texts)
    if guessed is not None:
        code, script = guessed
        said = (f"language: every item is '{code}' (no --language given; the questions are "
                f"written in {script}, which names it; pass --language to say otherwise); no "
                "path capture or column holds language codes or names")  # fmt: skip
        return code, said
    scripts = pd.Series([s for s in map(text_script, texts) if s]).value_counts()
    main = str(scripts.index[0]) if len(scripts) else "Latn"
    if main != "Latn":
        raise SourceError(origin, f"the questions are written in {script_name(main)}, which "
                          "several languages share, and no --language was given: pass "
                          "--language with the items' language (any BCP 47 code)")  # fmt: skip
    return DEFAULT_LANGUAGE, (f"language: every item is '{DEFAULT_LANGUAGE}' (no --language "
                              "given; the questions are in Latin script, which does not name "
                              "a language: pass --language with any BCP 47 code, e.g. et, ht, "
                              "qu, if they are not English); no path capture or column holds "
                              "language codes or names")  # fmt: skip


def _language_notes(
    found: ItemLanguage | None, given: str | None, translations: dict[str, dict[str, str]]
) -> list[str]:
    """Which language each item gets and why; a ``--language`` the items contradict, in a line."""
    if found is None:
        return [f"language: every item is '{given}' (--language {given}); no path capture or "
                "column holds language codes or names"]  # fmt: skip
    codes = ", ".join(found.codes)
    rather = f" (not --language {given} for all)" if given in found.codes else ""
    notes = [f"language: each item its own, from {found.shown()}: columns.language, languages "
             f"{codes}{rather}"]  # fmt: skip
    if given and given not in found.codes:
        notes.append(f"--language {given} conflicts with the languages the items carry ({codes}, "
                     f"from {found.kind} '{found.expr}'): each item is tagged with its own, "
                     f"none with {given}")  # fmt: skip
    if translations:
        shown = ", ".join(sorted(v["question"] for v in translations.values()))
        notes.append(f"{shown}: translations beside the question not proposed, since each item "
                     "has one language; declare them by hand without columns.language")  # fmt: skip
    return notes


def _options(
    columns: dict[str, Any], options: Options, golds: pd.Series | None, asked: pd.Series
) -> list[str]:
    """Options, their counts where rows differ, and the label mode; returns the label notes."""
    columns["options"] = options.config
    counts = options.counts()
    if counts:
        columns["option_counts"] = counts
    shown = None if golds is None else [str(g) if g is not None else "" for g in golds]
    labels, notes = options.labels(shown, [str(q) for q in asked])
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
    if answers.letters:
        pairs = ", ".join(f"{k!r}: {v!r}" for k, v in answers.letters.items())
        columns["answer"] = f"{{{{ {{{pairs}}}.get({ref(answer)}, {ref(answer)}) }}}}"
    if answers.several:
        columns["answer_sep"] = ","


def _answer_field(fields: dict[str, pd.Series], exclude: set[str]) -> str | None:
    """The gold field: a top-level column before any nested one, each level by how sure its name is.

    Top level: a known answer name, then a compound of one (``answer_majority``), then an
    abbreviation (``Ans``, ``corr``); only then a known name inside a record. The labels of an
    options record (CommonsenseQA's ``choices.label``: "A".."E" on every row) are never the gold.
    """
    usable = {f: v for f, v in fields.items() if f not in exclude and not _option_labels(f)}
    top = {f: v for f, v in usable.items() if "." not in f}
    found = pick(top, ANSWER_NAMES, set())
    if found is not None:
        return found
    compound = next((f for f in top if is_answer_like(f)), None)
    if compound is not None:
        return compound
    short = [f for f in top if len(leaf(f)) >= 3]
    found = next((f for f in short if any(n.startswith(leaf(f)) for n in ANSWER_NAMES)), None)
    return found if found is not None else pick(usable, ANSWER_NAMES, set())


def _option_labels(name: str) -> bool:
    """A field inside a record named as options (``choices.label``): the options' own labels."""
    parts = name.split(".")
    return len(parts) > 1 and parts[-2].lower() in OPTION_NAMES


GOLD_AGREEMENT = 0.8
"""A field equal to the gold on this share of the sampled rows gives the answer away..."""
CHANCE_ALPHA = 0.01
"""...when that agreement is also beyond chance at this level (one-sided exact binomial test
against the agreement two independent columns with these value shares would have): a constant
"A" beside golds that are all "A" tells nothing the skew does not."""


def _gold_givers(
    fields: dict[str, pd.Series], answer: str, taken: set[str]
) -> tuple[set[str], list[str]]:
    """Fields that must not become metadata, since they name or repeat the gold, with notes.

    A second gold column (``answer_creator`` beside ``answer_majority``) or an annotator's vote
    equal to the gold on most rows would let a prompt placeholder or a slice give the answer away;
    each is left out and named, with how often it differs from the proposed gold.
    """
    gold = _shown(fields[answer])
    givers: set[str] = set()
    notes: list[str] = []
    for name, values in fields.items():
        if name in taken or name == answer:
            continue
        named = is_answer_like(name) and not _option_labels(name)
        if not named and not bool(values.map(_scalar).all()):
            continue
        shown = _shown(values)
        present = (shown != "") & (gold != "")
        same = int((shown == gold)[present].sum())
        if named:
            givers.add(name)
            notes.append(f"'{name}' also names a gold ({int(present.sum()) - same} of "
                         f"{len(gold)} sampled rows differ from '{answer}'): not proposed as "
                         f"metadata, which would give the answer away; to score against it, "
                         f"set columns.answer: {name}")  # fmt: skip
        elif _repeats_gold(same, shown[present], gold[present]):
            givers.add(name)
    repeats = sorted(g for g in givers if not is_answer_like(g))
    if repeats:
        listed = ", ".join(f"'{g}'" for g in repeats[:5]) + (", …" if len(repeats) > 5 else "")
        notes.append(f"{listed}: equal to the gold on at least {GOLD_AGREEMENT:.0%} of the "
                     f"sampled rows, beyond chance (p < {CHANCE_ALPHA}; an annotator's vote, a "
                     "copy of the answer): not proposed as metadata, which would give the answer "
                     "away")  # fmt: skip
    return givers, notes


def _repeats_gold(same: int, field: pd.Series, gold: pd.Series) -> bool:
    """Whether a field agrees with the gold on most rows, and more often than chance would."""
    rows = len(field)
    if not rows or same / rows < GOLD_AGREEMENT:
        return False
    from scipy.stats import binomtest

    shares = field.value_counts(normalize=True)
    chance = float((shares * gold.value_counts(normalize=True)).fillna(0).sum())
    if chance >= 1:
        return False
    return bool(binomtest(same, rows, chance, alternative="greater").pvalue < CHANCE_ALPHA)


def _shown(values: pd.Series) -> pd.Series:
    return values.map(lambda v: "" if v is None else str(v).strip())


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float)


def _one(config: Any) -> str:
    if isinstance(config, dict):
        return str(config["from"])
    return config if isinstance(config, str) else ""


def _source(sample: Sample) -> dict[str, Any]:
    if sample.split is not None:
        return {"kind": "hf", "path": sample.path, "hf_split": sample.split}
    if sample.names is not None:
        names = list(sample.names)
        return {"kind": "file", "path": sample.path, "header": "none", "columns": names}
    return {"kind": "file", "path": sample.path}
