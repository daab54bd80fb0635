"""Turn any source table into :class:`McqItem` records through a spec's field mapping.

Errors name file, row (1-based data row of that file) and column, because a researcher fixing a
5,000-row CSV needs to know exactly where to look. Nothing is guessed: an answer that is not a
letter, an option list with a duplicate or an empty entry, or a metadata value outside its declared
type is an error. The one repair, stripping "A. " labels, happens only when every option of the
item carries the consecutive labels A, B, C…, and is counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.benchmarks.fields import FieldError, field_roots, options_from, resolve
from cultureqa.benchmarks.sources import ROW_COLUMNS, load_frame
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.io import SourceError
from cultureqa.records import LETTERS, McqItem

_LABEL = re.compile(r"^\s*\(?([A-Ja-j])[.)]\s+")
_LETTER_ANSWER = re.compile(r"^\s*(?:\(([A-Za-z])\)|([A-Za-z])[.)]?)\s*$")
_BOOL_TEXT = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}


@dataclass
class LoadCounts:
    """Repairs and removals while loading, reported by ``validate`` (never silent)."""

    labels_stripped: int = 0
    filtered_out: int = 0
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, what: str, item_id: str) -> None:
        """Remember up to five example ids per kind of change."""
        shown = self.examples.setdefault(what, [])
        if len(shown) < 5:
            shown.append(item_id)


def load_source_frame(spec: BenchmarkSpec, root: Path | None = None) -> tuple[pd.DataFrame, str]:
    """Read the benchmark's source rows; returns the frame and a label naming where it came from."""
    return load_frame(spec, root)


def load_items(
    spec: BenchmarkSpec,
    frame: pd.DataFrame,
    language: str,
    origin: str,
    region_normalizer: Callable[[str], str | None] | None = None,
    counts: LoadCounts | None = None,
) -> list[McqItem]:
    """Map rows to items in ``language``; raises :class:`SourceError` on the first bad cell."""
    counts = counts if counts is not None else LoadCounts()
    mapping = _Mapping.of(spec, language)
    _check_columns(spec, mapping, frame, origin)
    items: list[McqItem] = []
    seen: dict[str, str] = {}
    for pos, row in enumerate(frame.to_dict(orient="records"), start=1):
        where = _Where(str(row.get("_file", origin)), int(row.get("_row", pos)))
        item_id = _item_id(spec, row, where, pos)
        if item_id in seen:
            raise where.error(
                f"duplicate id '{item_id}' (first at {seen[item_id]})", spec.columns.id
            )
        seen[item_id] = f"{where.file} row {where.row}"
        if spec.filter_true and not _as_bool(row[spec.filter_true], where, spec.filter_true):
            counts.filtered_out += 1
            continue
        options = _options(row, spec, mapping, where, counts, item_id)
        answer = _answer_index(row, options, spec, where, ",".join(_option_exprs(mapping.options)))
        metadata = _metadata(spec, row, where, region_normalizer)
        question = _text(_get(row, mapping.question, where), where, mapping.question)
        items.append(McqItem(item_id, question, options, answer, language, metadata))
    return items


@dataclass(frozen=True)
class _Mapping:
    question: str
    options: str | list[str]

    @classmethod
    def of(cls, spec: BenchmarkSpec, language: str) -> _Mapping:
        over = spec.languages[language]
        return cls(over.question or spec.columns.question, over.options or spec.columns.options)


@dataclass(frozen=True)
class _Where:
    file: str
    row: int

    def error(self, message: str, column: str | None) -> SourceError:
        return SourceError(self.file, message, row=self.row, column=column)


def _check_columns(
    spec: BenchmarkSpec, mapping: _Mapping, frame: pd.DataFrame, origin: str
) -> None:
    """Name every missing column before the first row (a wrong mapping fails in one line)."""
    cols = spec.columns
    columns = set(map(str, frame.columns))
    exprs = [mapping.question, cols.answer, *_option_exprs(mapping.options)]
    exprs += [cols.metadata_fields.get(m, m) for m in cols.metadata]
    exprs += [e for e in (cols.id, spec.filter_true) if e]
    needed = set().union(*(field_roots(e, columns) for e in exprs))
    missing = sorted(needed - columns)
    if missing:
        shown = [c for c in frame.columns if c not in ROW_COLUMNS]
        raise SourceError(origin, f"missing column(s) {missing}; found {shown}")


def _option_exprs(options: str | list[str]) -> list[str]:
    return [options] if isinstance(options, str) else list(options)


def _get(row: dict[str, Any], expr: str, where: _Where) -> Any:
    try:
        return resolve(row, expr)
    except FieldError as exc:
        raise where.error(str(exc), expr) from exc


def _item_id(spec: BenchmarkSpec, row: dict[str, Any], where: _Where, pos: int) -> str:
    """The declared id, or ``<benchmark>-<n>`` from the row's position over all source files."""
    if spec.columns.id is None:
        return f"{spec.name}-{int(row.get('_n', pos)):06d}"
    return _text(_get(row, spec.columns.id, where), where, spec.columns.id)


def _text(value: Any, where: _Where, column: str) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)) or str(value).strip() == "":
        raise where.error("empty value", column)
    return str(value).strip()


def _options(
    row: dict[str, Any],
    spec: BenchmarkSpec,
    mapping: _Mapping,
    where: _Where,
    counts: LoadCounts,
    item_id: str,
) -> tuple[str, ...]:
    if isinstance(mapping.options, list):
        column = ",".join(mapping.options)
        raw = [_get(row, c, where) for c in mapping.options]
    else:
        column = mapping.options
        try:
            raw = options_from(
                _get(row, column, where), spec.columns.options_transform, spec.columns.options_sep
            )
        except FieldError as exc:
            raise where.error(str(exc), column) from exc
    if len(raw) < 2:
        raise where.error(f"need at least 2 options, got {len(raw)}", column)
    if len(raw) > len(LETTERS):
        raise where.error(f"at most {len(LETTERS)} options, got {len(raw)}", column)
    texts = [_option_text(o) for o in raw]
    empty = [LETTERS[i] for i, t in enumerate(texts) if not t]
    if empty:
        raise where.error(f"option(s) {empty} are empty", column)
    stripped = strip_labels(texts)
    if stripped is not None:
        texts = stripped
        counts.labels_stripped += 1
        counts.note("labels_stripped", item_id)
    _no_duplicates(texts, where, column)
    return tuple(texts)


def _option_text(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return str(value).strip()


def strip_labels(options: list[str]) -> list[str] | None:
    """Options without "A. "/"(B) " labels, or None when not every option carries A, B, C… in order.

    "G. A. Siwabessy" alone is a person's initials, not a label, so it is left as written.
    """
    matches = [_LABEL.match(o) for o in options]
    if not all(matches):
        return None
    letters = "".join(m.group(1).upper() for m in matches if m is not None)
    if letters != LETTERS[: len(options)]:
        return None
    out = [o[m.end() :].strip() for o, m in zip(options, matches, strict=True) if m is not None]
    return out if all(out) else None


def _no_duplicates(options: list[str], where: _Where, column: str) -> None:
    first: dict[str, str] = {}
    for letter, text in zip(LETTERS, options, strict=False):
        key = " ".join(text.split()).casefold()
        if key in first:
            raise where.error(
                f"options {first[key]} and {letter} are the same ({text[:40]!r})", column
            )
        first[key] = letter


def parse_letter(text: str) -> str | None:
    """Read a letter answer: B, b, (B), B. or B) give "B"; anything else ("Banana") gives None."""
    match = _LETTER_ANSWER.match(text)
    if match is None:
        return None
    return (match.group(1) or match.group(2)).upper()


def _answer_index(
    row: dict[str, Any], options: tuple[str, ...], spec: BenchmarkSpec, where: _Where, among: str
) -> int:
    column = spec.columns.answer
    text = _text(_get(row, column, where), where, column)
    fmt = spec.columns.answer_format
    if fmt == "letter":
        letter = parse_letter(text)
        if letter is None:
            raise where.error(f"answer {text!r} is not a letter (A, (B), c. …)", column)
        index = LETTERS.find(letter)
    elif fmt == "index":
        number = _as_int(text)
        if number is None:
            raise where.error(f"answer {text!r} is not a 0-based option index", column)
        index = number
    else:
        index = options.index(text) if text in options else -1
        if index < 0:
            raise where.error(f"answer {text!r} is not the text of any option", column)
    if not 0 <= index < len(options):
        raise where.error(
            f"answer {text!r} is not among the {len(options)} options of '{among}'",
            column,
        )
    return index


def _as_int(text: str) -> int | None:
    stripped = text.strip()
    if stripped.lstrip("-").isdigit():
        return int(stripped)
    if re.fullmatch(r"-?\d+\.0+", stripped):
        return int(float(stripped))
    return None


def _metadata(
    spec: BenchmarkSpec,
    row: dict[str, Any],
    where: _Where,
    region_normalizer: Callable[[str], str | None] | None,
) -> dict[str, Any]:
    cols = spec.columns
    metadata: dict[str, Any] = {}
    for name in cols.metadata:
        expr = cols.metadata_fields.get(name, name)
        value = _get(row, expr, where)
        declared = cols.metadata_types.get(name)
        metadata[name] = _typed(value, declared, where, expr) if declared else _meta_value(value)
    region_col = spec.location.region_column
    if spec.normalize_region and region_col and region_normalizer is not None:
        canonical = region_normalizer(str(row[region_col]))
        if canonical is None:
            raise where.error(f"unknown region '{row[region_col]}'", region_col)
        metadata[region_col] = canonical
    return metadata


def _typed(value: Any, declared: str | tuple[str, ...], where: _Where, column: str) -> Any:
    """A metadata value checked against its declared type or allowed values."""
    if isinstance(declared, tuple):
        text = _text(value, where, column)
        if text not in declared:
            raise where.error(
                f"{text!r} is not one of the declared values {list(declared)}", column
            )
        return text
    if declared == "bool":
        return _as_bool(value, where, column)
    text = _text(value, where, column)
    if declared == "int":
        number = _as_int(text)
        if number is None:
            raise where.error(f"expected an integer, got {text!r}", column)
        return number
    if declared == "float":
        try:
            return float(text)
        except ValueError as exc:
            raise where.error(f"expected a number, got {text!r}", column) from exc
    return text


def _as_bool(value: Any, where: _Where, column: str) -> bool:
    if isinstance(value, bool):
        return value
    parsed = _BOOL_TEXT.get(str(value).strip().lower()) if value is not None else None
    if parsed is None:
        raise where.error(f"expected True/False, got {value!r}", column)
    return parsed


def _meta_value(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value


def items_frame(items: list[McqItem]) -> pd.DataFrame:
    """One row per item and language: the shape dataset invariants are checked on."""
    rows = [
        {
            "item_id": i.id,
            "language": i.language,
            "question": i.question,
            "options": json.dumps(list(i.options), ensure_ascii=False),
            "n_options": len(i.options),
            "answer": i.answer_letter,
            **i.metadata,
        }
        for i in items
    ]
    return pd.DataFrame(rows)
