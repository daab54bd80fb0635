"""Propose metadata, slices, translations and a split filter from the fields nothing else uses.

Metadata are short scalar fields (long free text such as a citation is not), named as prompt
placeholders can use them; slices are the metadata whose values repeat (at most 50 of them). A
field that looks like a model's output (``model_prediction``, ``gpt4_response``) is never
proposed: slicing a benchmark by what a model answered would measure the model by itself. A
``split`` column becomes ``rows.keep`` (the test rows), and ``<question>_en`` beside the question a
language of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cultureqa.authoring.sniff.fields import MODEL_OUTPUT, leaf, texts
from cultureqa.authoring.sniff.ids import is_id_name
from cultureqa.benchmarks.spec import FIXED_FIELDS

SPLIT_NAMES = ("split", "subset", "partition", "fold")
NOT_METADATA = ("source", "url", "link", "reference", "references", "citation", "explanation",
                "rationale", "note", "notes", "comment", "comments")  # fmt: skip
"""Provenance and commentary: worth keeping in the source, not a dimension to slice by."""
MAX_TEXT = 40
"""Longest median value length of a metadata field (longer is free text)."""
MAX_SLICE_VALUES = 50
_LANG_SUFFIX = re.compile(r"^(?P<base>.+?)[_-](?P<lang>[a-z]{2})$")
_CODE = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])\S+$")


@dataclass
class Extras:
    """Everything the config declares beside question, options and answer."""

    metadata: list[str | dict[str, str]] = field(default_factory=list)
    types: dict[str, str] = field(default_factory=dict)
    slices: list[list[str]] = field(default_factory=list)
    keep: dict[str, str] | None = None
    languages: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    shown: dict[str, pd.Series] = field(default_factory=dict)
    """Each proposed metadata field's values as text, to tell a copy from a namesake."""


def find_extras(
    fields: dict[str, pd.Series],
    roles: dict[str, str],
    taken: set[str],
    named: dict[str, str],
    captures: dict[str, int],
    files: int = 1,
) -> Extras:
    """Extras from the fields left.

    Args:
        fields: every field of the sample.
        roles: the question and options fields (for their translations).
        taken: fields a role reads (never metadata).
        named: metadata decided already (COPA's relation).
        captures: names the path captures (always metadata), with their number of distinct
            values over all files (not only the files sniffed), for the slice rule.
        files: how many files the source has.
    """
    extras = Extras()
    if roles.get("language") in fields:  # the item language: a copy of it is no metadata
        extras.shown[f"the item language ('{roles['language']}')"] = texts(
            fields[roles["language"]]
        )
    taken = taken | set(named.values())
    taken |= {k.split(".")[0] for k in taken} | {k for k in fields if _parent_of(k, taken)}
    _translations(fields, roles, taken, extras)
    for name, expr in named.items():
        extras.metadata.append({name: expr})
        _maybe_slice(name, fields[expr], extras)
    for expr, values in fields.items():
        if expr in taken or any(t.startswith(expr + ".") for t in taken):
            continue
        if MODEL_OUTPUT.search(expr) and expr not in captures:
            extras.notes.append(f"'{expr}' looks like a model's output: not proposed as metadata")
            continue
        if leaf(expr) in SPLIT_NAMES and _split_keep(expr, values, extras):
            continue
        if _row_index(expr, values):
            extras.notes.append(f"'{expr}': a column without a header holding row numbers (a "
                                "saved table's index): not proposed as metadata")  # fmt: skip
            continue
        if _file_numbers(expr, values):
            extras.notes.append(f"'{expr}': numbers named as an id that repeat over the sampled "
                                "rows (each file numbering its own rows): neither the id nor "
                                "metadata")  # fmt: skip
            continue
        if expr in captures:
            _add(expr, values, extras, (captures[expr], files))
        elif leaf(expr) not in NOT_METADATA and _is_metadata(values):
            _add(expr, values, extras)
    return extras


def _parent_of(name: str, taken: set[str]) -> bool:
    return any(name.startswith(t + ".") for t in taken)


def _translations(
    fields: dict[str, pd.Series], roles: dict[str, str], taken: set[str], extras: Extras
) -> None:
    """``context_en`` beside ``context``: the question (and options) in another language."""
    for name in fields:
        match = _LANG_SUFFIX.match(name)
        if match is None or match["base"] != roles.get("question"):
            continue
        lang = match["lang"]
        extras.languages[lang] = {"question": name}
        taken.add(name)
        options = f"{roles.get('options')}{name[len(match['base']) :]}"
        if options in fields:
            extras.languages[lang]["options"] = options
            taken.add(options)


def _split_keep(name: str, values: pd.Series, extras: Extras) -> bool:
    shown = set(texts(values))
    if "test" not in shown or len(shown) < 2:
        return False
    extras.keep = {name: "test"}
    kept = int((texts(values) == "test").sum())
    extras.notes.append(f"'{name}' holds splits {sorted(shown)}: rows.keep keeps the test rows "
                        f"({kept} of {len(values)} sampled)")  # fmt: skip
    return True


_UNNAMED = re.compile(r"^Unnamed: \d+$")
"""How pandas names a column whose header cell is blank."""


def _row_index(name: str, values: pd.Series) -> bool:
    """CMMLU's ``Unnamed: 0`` (0, 1, 2, … in each file): an index written out with the table."""
    if not _UNNAMED.match(name):
        return False
    shown = texts(values)
    return bool(len(shown)) and bool(shown.str.fullmatch(r"\d+").all())


def _file_numbers(name: str, values: pd.Series) -> bool:
    """SEA-HELM's ``id`` (0…399 in each language's file): not unique, so no id over the set."""
    shown = texts(values)
    return (is_id_name(name) and bool(len(shown)) and not shown.is_unique
            and bool(shown.str.fullmatch(r"\d+").all()))  # fmt: skip


def _is_metadata(values: pd.Series) -> bool:
    if not values.map(lambda v: pd.api.types.is_scalar(v) and not isinstance(v, bytes)).all():
        return False
    shown = texts(values)
    if shown.empty or shown.nunique() < 2:
        return False
    length = shown.str.len().median()
    if length > MAX_TEXT or (length > MAX_TEXT / 2 and shown.nunique() > len(shown) / 2):
        return False  # free text: long, or longish and mostly distinct
    return not (shown.is_unique and shown.map(lambda v: bool(_CODE.match(v))).all())


def _add(
    expr: str, values: pd.Series, extras: Extras, over_files: tuple[int, int] | None = None
) -> None:
    """Propose ``expr`` as metadata, unless it copies a field proposed already.

    SEA-HELM repeats ``subject`` in ``metadata`` and in its prompt record, and tags each row's
    language in ``metadata.language``: a copy is named in a note; a namesake with other values
    gets its path as its name (``prompts_0_subject``).
    """
    shown = texts(values)
    copy = next((n for n, v in extras.shown.items() if v.equals(shown)), None)
    if copy is not None:
        extras.notes.append(f"'{expr}' repeats {copy} on every sampled row: not proposed "
                            "again")  # fmt: skip
        return
    name = meta_name(expr)
    names = {m if isinstance(m, str) else next(iter(m)) for m in extras.metadata}
    if name in names or name == "language":
        name = meta_name(expr.replace(".", "_"))
    extras.shown[f"'{expr}'"] = shown
    extras.metadata.append(name if name == expr else {name: expr})
    kind = _scalar_type(values)
    if kind is not None:
        extras.types[name] = kind
    _maybe_slice(name, values, extras, over_files)


def _maybe_slice(
    name: str, values: pd.Series, extras: Extras, over_files: tuple[int, int] | None = None
) -> None:
    """A slice when values repeat and there are 2 to 50 of them.

    ``over_files``: a capture's distinct values and the number of files, counted over every
    file of the pattern rather than the files sniffed.
    """
    shown = texts(values)
    if MODEL_OUTPUT.search(name) or is_id_name(name):
        return  # a model's answers, or ids of source questions (kept, but no dimension)
    count, repeats = shown.nunique(), shown.nunique() < len(shown)
    if over_files is not None:
        count, repeats = over_files[0], repeats or over_files[0] < over_files[1]
    if 1 < count <= MAX_SLICE_VALUES and repeats:
        extras.slices.append([name])
    elif count > MAX_SLICE_VALUES and over_files is not None:
        extras.notes.append(f"'{name}' takes {count} values over the files: not a slice")


def _scalar_type(values: pd.Series) -> str | None:
    shown = texts(values)
    if len(shown) < len(values) or shown.empty:
        return None
    if shown.str.fullmatch(r"-?\d+").all() and not values.map(_is_float).any():
        return "int"
    if shown.str.lower().isin(["true", "false"]).all():
        return "bool"
    return None


def _is_float(value: Any) -> bool:
    return isinstance(value, float)


def meta_name(expr: str) -> str:
    """A metadata name prompts can use: ``Provinsi Asal`` → ``provinsi_asal``."""
    base = expr.rsplit(".", 1)[-1]
    if base.isidentifier() and base not in FIXED_FIELDS and expr == base:
        return base
    name = re.sub(r"\W+", "_", base.strip(), flags=re.UNICODE).strip("_").lower() or "field"
    if not name.isidentifier():
        name = f"m_{name}"
    return f"{name}_meta" if name in FIXED_FIELDS else name
