"""Map fields: one source row's declared fields (id, question, language, metadata) as values.

Nothing is guessed: a path that does not exist, an empty required value or a metadata value outside
its declared type is a :class:`~cultureqa.benchmarks.load.counts.RowError` naming the row and
field, with a reason code the row policy counts.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import pandas as pd

from cultureqa.benchmarks.fields import FieldError, field_roots, resolve
from cultureqa.benchmarks.load.counts import Where
from cultureqa.benchmarks.sources import ROW_COLUMNS
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.io import SourceError

Normalizer = Callable[[str], str | None]
_BOOL_TEXT = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}


@dataclass(frozen=True)
class Mapping:
    """The question and options fields of one language (translations live in sibling columns)."""

    question: str
    options: str | list[str]

    @classmethod
    def of(cls, spec: BenchmarkSpec, language: str) -> Mapping:
        """The language's overrides, or the benchmark's columns."""
        over = spec.languages[language]
        return cls(over.question or spec.columns.question, over.options or spec.columns.options)

    def option_exprs(self) -> list[str]:
        """Each options field (one list column, or one column per option)."""
        return [self.options] if isinstance(self.options, str) else list(self.options)

    def own_columns(self, columns: set[str]) -> set[str]:
        """Source columns of this language's own text (absent: the source lacks the language)."""
        exprs = [self.question, *self.option_exprs()]
        return set().union(*(field_roots(e, columns) for e in exprs))


def needed_columns(spec: BenchmarkSpec, mapping: Mapping, columns: set[str]) -> set[str]:
    """Source columns the mapping of one language reads."""
    cols = spec.columns
    exprs = [mapping.question, cols.answer, *mapping.option_exprs()]
    exprs += [cols.metadata_fields.get(m, m) for m in cols.metadata]
    exprs += [e for e in (cols.id, cols.language) if e]
    return set().union(*(field_roots(e, columns) for e in exprs))


def check_columns(spec: BenchmarkSpec, mapping: Mapping, frame: pd.DataFrame, origin: str) -> None:
    """Name every missing column before the first row (a wrong mapping fails in one line)."""
    columns = set(map(str, frame.columns))
    try:
        missing = sorted(needed_columns(spec, mapping, columns) - columns)
    except FieldError as exc:  # a template that does not parse: the config's error, one line
        raise SourceError(origin, str(exc)) from None
    if missing:
        shown = [c for c in frame.columns if c not in ROW_COLUMNS]
        raise SourceError(origin, f"missing column(s) {missing}; found {shown}")


def get(row: dict[str, Any], expr: str, where: Where, reason: str = "field") -> Any:
    """A field's value on the row; a missing path or failed template is a row error."""
    try:
        return resolve(row, expr)
    except FieldError as exc:
        raise where.error(str(exc), expr, reason) from exc


def is_blank(value: Any) -> bool:
    """None, NaN or only whitespace."""
    return option_text(value) == ""


def option_text(value: Any) -> str:
    """A cell as stripped text ("" for a missing value)."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return str(value).strip()


def text(value: Any, where: Where, column: str, reason: str = "empty_value") -> str:
    """A required text value."""
    if value is None or (isinstance(value, float) and pd.isna(value)) or str(value).strip() == "":
        raise where.error("empty value", column, reason)
    return str(value).strip()


def is_blank_row(row: dict[str, Any], captured: Collection[str] = ()) -> bool:
    """A row with no value in any column (a separator line, or one of commas) is not an item.

    What the row's path captures (``captured``: ``{lang}``) is the file's, not the row's: a
    separator line of a per-language file is blank too.
    """
    values = [v for k, v in row.items() if k not in ROW_COLUMNS and k not in captured]
    return all(option_text(v) == "" for v in values if not isinstance(v, list | dict))


def item_id(spec: BenchmarkSpec, row: dict[str, Any], where: Where, pos: int) -> str:
    """The declared id, or ``<benchmark>-<n>`` from the row's position over all source files."""
    if spec.columns.id is None:
        return f"{spec.name}-{int(row.get('_n', pos)):06d}"
    return text(get(row, spec.columns.id, where), where, spec.columns.id, "empty_id")


def row_language(spec: BenchmarkSpec, row: dict[str, Any], where: Where) -> str:
    """The item's language from ``columns.language`` (a path capture, column or template).

    The value is mapped through ``columns.language_values`` when declared; the result must be a
    declared language, so a file named ``sundanese.tsv`` is never evaluated as Indonesian.
    """
    expr = spec.columns.language
    assert expr is not None
    raw = text(get(row, expr, where, "language"), where, expr, "unknown_language")
    code = spec.columns.language_values.get(raw, raw)
    if code not in spec.languages:
        mapped = f" (mapped from {raw!r})" if code != raw else ""
        raise where.error(
            f"language {code!r}{mapped} is not a declared language {sorted(spec.languages)}; "
            "declare it under languages: (with its settings) or map it in "
            "columns.language: {from: …, values: {…}}",
            expr,
            "unknown_language",
        )
    return code


def metadata(
    spec: BenchmarkSpec,
    row: dict[str, Any],
    where: Where,
    region_normalizer: Normalizer | None,
) -> dict[str, Any]:
    """Every declared metadata value, typed as declared; the region through the gazetteer."""
    cols = spec.columns
    found: dict[str, Any] = {}
    for name in cols.metadata:
        expr = cols.metadata_fields.get(name, name)
        value = get(row, expr, where, "metadata")
        declared = cols.metadata_types.get(name)
        value = _typed(value, declared, where, expr) if declared else _meta_value(value)
        # a region or topic repeats on every row: one shared string, not a million copies
        found[name] = sys.intern(value) if isinstance(value, str) and len(value) <= 40 else value
    region_col = spec.location.region_column
    if spec.normalize_region and region_col and region_normalizer is not None:
        canonical = region_normalizer(str(row[region_col]))
        if canonical is None:
            raise where.error(f"unknown region '{row[region_col]}'", region_col, "unknown_region")
        found[region_col] = canonical
    return found


def as_int(value: str) -> int | None:
    """An integer written as digits (or "3.0"); None for anything else."""
    stripped = value.strip()
    if stripped.lstrip("-").isdigit():
        return int(stripped)
    if re.fullmatch(r"-?\d+\.0+", stripped):
        return int(float(stripped))
    return None


def _typed(value: Any, declared: str | tuple[str, ...], where: Where, column: str) -> Any:
    """A metadata value checked against its declared type or allowed values."""
    if isinstance(declared, tuple):
        found = text(value, where, column, "metadata_type")
        if found not in declared:
            raise where.error(
                f"{found!r} is not one of the declared values {list(declared)}",
                column,
                "metadata_type",
            )
        return found
    if declared == "bool":
        return _as_bool(value, where, column)
    found = text(value, where, column, "metadata_type")
    if declared == "int":
        number = as_int(found)
        if number is None:
            raise where.error(f"expected an integer, got {found!r}", column, "metadata_type")
        return number
    if declared == "float":
        return _as_float(found, where, column)
    return found


def _as_float(value: str, where: Where, column: str) -> float:
    """A finite number: NaN and infinity are not values a slice or a mean can use."""
    try:
        number = float(value)
    except ValueError as exc:
        raise where.error(f"expected a number, got {value!r}", column, "metadata_type") from exc
    if not math.isfinite(number):
        raise where.error(
            f"expected a finite number, got {value!r}; leave the row out (rows.invalid: drop) or "
            "fix the cell",
            column,
            "metadata_type",
        )
    return number


def _as_bool(value: Any, where: Where, column: str) -> bool:
    if isinstance(value, bool):
        return value
    parsed = _BOOL_TEXT.get(str(value).strip().lower()) if value is not None else None
    if parsed is None:
        raise where.error(f"expected True/False, got {value!r}", column, "metadata_type")
    return parsed


def _meta_value(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value
