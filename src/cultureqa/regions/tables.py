"""Read a region set's tables keeping, for every value, the file and row it came from.

A clue is only as good as the evidence a reader can check, so each :class:`Cell` carries its file
and the row a person opening that file would see: the 1-based line of a CSV (header and any
preamble counted), the 1-based row of a spreadsheet sheet. Readers are declared per table
(``long``, ``wide_years``, ``excel``, ``membership``), never per region set.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cultureqa.io import SourceError
from cultureqa.regions.config import RegionColumns, RegionSet, TableSpec

TERM_SEP = ";"
REPLACE_SEP = "="


@dataclass(frozen=True)
class Cell:
    """One value of one region with its provenance."""

    region: str
    value: float | str
    file: str
    row: int


@dataclass(frozen=True)
class Term:
    """A word that gives a region away, the kind of term, and what replaces it."""

    text: str
    kind: str
    replacement: str | None


@dataclass(frozen=True)
class Region:
    """One region: its names per language and every term that would leak it."""

    id: str
    names: Mapping[str, str]
    terms: tuple[Term, ...]
    row: int


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _read(spec: TableSpec) -> tuple[pd.DataFrame, int]:
    """The frame and the file row of its first data row (header and preamble counted)."""
    if not spec.file.exists():
        raise SourceError(spec.file, f"table '{spec.id}' not found")
    if spec.reader in ("excel", "membership") or spec.file.suffix == ".xlsx":
        frame = pd.read_excel(spec.file, sheet_name=spec.sheet or 0, dtype=str)
        return frame, 2
    frame = pd.read_csv(
        spec.file, skiprows=spec.skiprows, dtype=str, keep_default_na=False, encoding="utf-8-sig"
    )
    return frame, spec.skiprows + 2


def _column(frame: pd.DataFrame, spec: TableSpec, column: str) -> pd.Series:
    if column not in frame.columns:
        raise SourceError(spec.file, f"table '{spec.id}' has no column '{column}'", column=column)
    return frame[column].fillna("").astype(str).str.strip()


def load_table(spec: TableSpec, root: Path, numeric: bool) -> dict[str, list[Cell]]:
    """Region id → its cells (one, or one per membership); blank cells are absent, not zero."""
    frame, first = _read(spec)
    ids = _column(frame, spec, spec.id_column)
    keep = pd.Series(True, index=frame.index)
    for column, wanted in spec.filter.items():
        keep &= _column(frame, spec, str(column)) == str(wanted)
    value_column = spec.value_column
    if spec.reader == "wide_years":
        value_column = spec.column_pattern.format(year=spec.year)
    values = _column(frame, spec, value_column)
    out: dict[str, list[Cell]] = {}
    rel = _relative(spec.file, root)
    for index in frame.index[keep]:
        raw = values[index]
        if not raw or (spec.values and raw not in spec.values):
            continue
        row = int(index) + first
        value: float | str = raw
        if numeric:
            try:
                value = float(raw.replace(",", ""))
            except ValueError:
                raise SourceError(
                    spec.file, f"'{raw}' is not a number", row, value_column
                ) from None
            if not math.isfinite(value):
                raise SourceError(spec.file, f"'{raw}' is not a finite number", row, value_column)
        cell = Cell(ids[index], value, rel, row)
        if spec.reader != "membership" and ids[index] in out:
            raise SourceError(
                spec.file, f"region '{ids[index]}' appears twice", row, spec.id_column
            )
        out.setdefault(ids[index], []).append(cell)
    return out


def _terms(raw: str, kind: str, default: str | None) -> list[Term]:
    out = []
    for part in (p.strip() for p in raw.split(TERM_SEP)):
        if not part:
            continue
        text, _, replacement = part.partition(REPLACE_SEP)
        out.append(Term(text.strip(), kind, replacement.strip() or default))
    return out


def load_regions(
    columns: RegionColumns, root: Path, replacements: Mapping[str, str]
) -> list[Region]:
    """The regions table; a duplicate id or a blank name is an error naming file and row."""
    frame = pd.read_csv(columns.file, dtype=str, keep_default_na=False)
    need = [columns.id, *columns.names.values()]
    need += [
        c for c in (columns.aliases, columns.demonyms, columns.capitals, columns.leak_terms) if c
    ]
    for column in need:
        if column not in frame.columns:
            raise SourceError(
                columns.file, f"regions table has no column '{column}'", column=column
            )
    regions: list[Region] = []
    seen: set[str] = set()
    for index, record in frame.iterrows():
        row = int(str(index)) + 2
        rid = record[columns.id].strip()
        if not rid or rid in seen:
            raise SourceError(columns.file, f"blank or repeated id '{rid}'", row, columns.id)
        seen.add(rid)
        names = {lang: record[col].strip() for lang, col in columns.names.items()}
        if blank := [lang for lang, n in names.items() if not n]:
            raise SourceError(columns.file, f"no name in {blank}", row, columns.names[blank[0]])
        terms = [Term(n, "name", replacements.get("name")) for n in dict.fromkeys(names.values())]
        for kind, column in (
            ("alias", columns.aliases), ("demonym", columns.demonyms),
            ("capital", columns.capitals), ("leak_term", columns.leak_terms),
        ):  # fmt: skip
            if column:
                terms += _terms(record[column], kind, replacements.get(kind))
        regions.append(Region(rid, names, tuple(terms), row))
    return regions


@dataclass(frozen=True)
class Knowledge:
    """A region set's regions and tables, loaded once."""

    regions: Mapping[str, Region]
    indicators: Mapping[str, dict[str, Cell]]
    categories: Mapping[str, dict[str, list[Cell]]]

    @property
    def universe(self) -> tuple[str, ...]:
        """Every region id: the set a clue must single out one of."""
        return tuple(sorted(self.regions))

    def name(self, rid: str, language: str) -> str:
        """The region's name in ``language``."""
        return self.regions[rid].names[language]


def load_knowledge(region_set: RegionSet, root: Path, language: str) -> Knowledge:
    """Regions (terms with ``language``'s replacements) and every declared table."""
    regions = load_regions(region_set.regions, root, region_set.replacements.get(language, {}))
    indicators = {}
    for ind in region_set.indicators:
        table = load_table(ind.table, root, numeric=True)
        indicators[ind.table.id] = {rid: cells[0] for rid, cells in table.items()}
    categories = {
        c.table.id: load_table(c.table, root, numeric=False) for c in region_set.categories
    }
    return Knowledge({r.id: r for r in regions}, indicators, categories)
