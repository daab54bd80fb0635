"""Load and validate case-repository exports (DESIGN.md §6, cross-cultural benchmark).

A case export is the one hand-off from the people who write cases to the pipeline, so every
defect is reported with file, row and column before anything downstream runs: a wrong domain or a
duplicated id would otherwise surface much later as a silently wrong slice in the analysis.
Continent labels are kept verbatim here; annotation derives the continent from the country.
Pre-constructed items (the offline default for construction) are loaded here too, through the
same validation as generated ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from cultureqa.cases.construct import (
    TYPED_COLUMNS,
    ItemRejected,
    TypedItem,
    loads_strict,
    validate_item,
)
from cultureqa.cases.geography import UnknownCountryError, continent_of, iso3_of
from cultureqa.cases.topics import TopicRules, annotate_topics
from cultureqa.cases.weird import DIMENSIONS
from cultureqa.core.io import SourceError, read_table

CASE_COLUMNS: tuple[str, ...] = (
    "case_id",
    "narrative",
    "commentary",
    "differences",
    "domain",
    "continent",
    "country",
    "topic_tags",
    "source",
)
"""Columns of a case export, in export order."""

REQUIRED_TEXT: tuple[str, ...] = ("case_id", "narrative", "commentary", "domain", "country")
"""Columns that must be non-empty: without them a case cannot be constructed or sliced."""

DOMAINS: tuple[str, ...] = (
    "architecture",
    "law",
    "language and writing",
    "daily life",
    "customs",
    "religion",
    "education",
    "economy",
    "institutions",
    "other",
)
"""The ten case domains; the macro accuracy averages over exactly these."""


def load_cases(path: str | Path) -> pd.DataFrame:
    """Read a case export and validate its schema row by row.

    Args:
        path: CSV, JSONL or Parquet file with the columns in :data:`CASE_COLUMNS`.

    Returns:
        One row per case, all columns as ``str``, text stripped, ``domain`` lower-cased, in
        file order. Extra columns are kept (exports may carry ids of their own).

    Raises:
        SourceError: naming file, row (1 = first data row) and column of the first defect.
    """
    frame = read_table(path)
    _check_columns(path, frame)
    frame = _as_text(frame)
    for row, record in enumerate(frame.to_dict("records"), start=1):
        _check_row(path, row, record)
    _check_unique_ids(path, frame)
    return frame


def _check_columns(path: str | Path, frame: pd.DataFrame) -> None:
    missing = [c for c in CASE_COLUMNS if c not in frame.columns]
    if missing:
        raise SourceError(
            path, f"missing column(s) {missing}; a case export has {list(CASE_COLUMNS)}"
        )


def _as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Stringify and strip; JSONL and Parquet exports may carry numbers or nulls."""
    out = frame.copy()
    for column in CASE_COLUMNS:
        out[column] = out[column].map(_clean).astype("str")
    out["domain"] = out["domain"].str.lower().str.replace(r"\s+", " ", regex=True)
    return out


def _clean(value: object) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return str(value).strip()


def _check_row(path: str | Path, row: int, record: dict[str, object]) -> None:
    for column in REQUIRED_TEXT:
        if not record[column]:
            raise SourceError(path, "empty value", row=row, column=column)
    domain = record["domain"]
    if domain not in DOMAINS:
        raise SourceError(
            path, f"unknown domain '{domain}' (expected one of {list(DOMAINS)})", row, "domain"
        )


def _check_unique_ids(path: str | Path, frame: pd.DataFrame) -> None:
    duplicated = frame["case_id"].duplicated()
    if duplicated.any():
        row = int(duplicated.to_numpy().nonzero()[0][0]) + 1
        case_id = frame["case_id"].iloc[row - 1]
        first = int((frame["case_id"] == case_id).to_numpy().nonzero()[0][0]) + 1
        raise SourceError(
            path, f"duplicate case_id '{case_id}' (first seen in row {first})", row, "case_id"
        )


def load_sample_items(path: str | Path, case_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """Read pre-constructed items (JSONL), validated exactly like generated ones.

    Args:
        path: one ``{"case_id", "question", "options": {"A": …, …, "F": …}}`` per line.
        case_ids: when given, the cases that need items, in output order; a missing one is an
            error and items for other cases are dropped.

    Raises:
        SourceError: naming the line (row) and what is wrong with it.
    """
    records = {item.case_id: item for item in _read_sample(Path(path))}
    wanted = list(case_ids) if case_ids is not None else list(records)
    missing = [c for c in wanted if c not in records]
    if missing:
        raise SourceError(path, f"no pre-constructed item for case(s) {missing[:10]}")
    rows = [records[c].to_record("sample", "", 0) for c in wanted]
    return pd.DataFrame(rows, columns=list(TYPED_COLUMNS))


def _read_sample(path: Path) -> Sequence[TypedItem]:
    if not path.exists():
        raise SourceError(path, "file not found")
    items: list[TypedItem] = []
    seen: dict[str, int] = {}
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            payload = loads_strict(line)
            case_id = str(payload.get("case_id") or "").strip() if isinstance(payload, dict) else ""
            if not case_id:
                raise ItemRejected("missing 'case_id'")
            if case_id in seen:
                raise ItemRejected(f"duplicate case_id '{case_id}' (first in row {seen[case_id]})")
            items.append(validate_item(case_id, payload))
        except json.JSONDecodeError as exc:
            raise SourceError(path, f"invalid JSON: {exc.msg}", row=row) from exc
        except ItemRejected as exc:
            raise SourceError(path, str(exc), row=row) from exc
        seen[case_id] = row
    return items


WEIRD_COLUMNS: tuple[str, ...] = (*DIMENSIONS, "weird_score", "weird_bin")
"""Per-case WEIRD columns added by :func:`annotate_cases` (nullable: see its docstring)."""


def annotate_cases(
    cases: pd.DataFrame,
    rules: TopicRules,
    countries: pd.DataFrame,
    path: str | Path = "<cases>",
) -> pd.DataFrame:
    """Continent from the country, normalized topics, and the country's WEIRD levels.

    The typed continent is kept as ``continent_raw`` and never used again: case authors get it
    wrong, the country does not. A country missing from ``countries`` (the ``cases_weird``
    country table, :func:`cultureqa.cases.country_levels.read_levels`) gets missing WEIRD
    values instead of an error, so the caller decides between excluding the case and letting
    validation fail.

    Raises:
        SourceError: naming the row of a country the geography map does not know.
    """
    codes = []
    for row, country in enumerate(cases["country"], start=1):
        try:
            codes.append(iso3_of(str(country)))
        except UnknownCountryError as exc:
            raise SourceError(path, str(exc), row=row, column="country") from exc
    out = annotate_topics(cases, rules).assign(
        continent_raw=cases["continent"],
        continent=[continent_of(c) for c in codes],
        iso3=codes,
    )
    cuts = [c for c in countries.columns if c.startswith(("e_cut_", "i_cut_"))]
    marks = ["hand_annotated"] if "hand_annotated" in countries.columns else []
    weird = countries[["iso3", *WEIRD_COLUMNS, *marks, *cuts]].astype(
        {d: "Int64" for d in DIMENSIONS}
    )
    merged = out.merge(weird.astype({"weird_bin": "Int64"}), on="iso3", how="left")
    return merged.reset_index(drop=True)


def split_unannotated(annotated: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(cases with all five WEIRD dimensions, cases whose country lacks one)."""
    incomplete = annotated[list(DIMENSIONS)].isna().any(axis=1)
    kept = annotated.loc[~incomplete].reset_index(drop=True)
    return kept, annotated.loc[incomplete].reset_index(drop=True)
