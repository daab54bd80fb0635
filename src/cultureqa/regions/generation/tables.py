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

from cultureqa.core.io import SourceError
from cultureqa.regions.config import MULTI_READERS, RegionColumns, RegionSet, TableSpec

TERM_SEP = ";"
LABEL_PREFIX = "label_"
"""A facts table's optional ``label_<lang>`` columns: the value's words in that language."""
REPLACE_SEP = "="


@dataclass(frozen=True)
class Cell:
    """One value of one region with its provenance."""

    region: str
    value: float | str
    file: str
    row: int
    source: str = ""
    """Named facts: the package or file the row cites, with its pinned version."""
    year: str = ""
    """Named facts: the year the fact holds for ('' when timeless)."""
    labels: tuple[tuple[str, str], ...] = ()
    """Named facts: (language, words) from the table's ``label_<lang>`` columns, how the value
    reads in that language (a lake's name in the local language, an event's sentence); the value
    is what is proved, the label what a clue shows."""


@dataclass(frozen=True)
class Term:
    """A word that gives a region away, the kind of term, and what replaces it.

    ``lang`` is the BCP 47 tag of the language the term is a name in (``und`` otherwise) and
    ``source`` where the term comes from (the regions table, or the leak table's source and
    version), so each item can say which terms it lost and on whose authority.
    """

    text: str
    kind: str
    replacement: str | None
    lang: str = "und"
    source: str = ""
    plural: str | None = None
    """What replaces the term's plural ("several euros" → "several units of the local
    currency"): ``replacements.<lang>.<kind>_plural``; without one a plural is left and leaks."""
    compound: str | None = None
    """What replaces the term as the first part of a hyphenated compound ("a 1,000-yen note",
    "English-speaking"): ``replacements.<lang>.<kind>_compound``; without one it stays, a leak."""
    described: bool = False
    """The replacement is the term's own description from the leak table (``sauna`` → ``steam
    bath``), not its kind's generic words: it reads where the term stood, so the set's scrub
    limit (how many terms a scenario may lose to generic words) does not count it."""


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
    if spec.reader == "facts":
        for column in ("fact", "value", "source", "source_version", "year"):
            if column not in frame.columns:
                raise SourceError(spec.file, f"facts table has no column '{column}'", column=column)
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
        source, year = "", ""
        labels: tuple[tuple[str, str], ...] = ()
        if spec.reader == "facts":
            source = " ".join(
                p for p in (frame.at[index, "source"], frame.at[index, "source_version"]) if p
            )
            year = str(frame.at[index, "year"]).strip()
            labels = tuple(
                (str(c).removeprefix(LABEL_PREFIX), str(frame.at[index, c]).strip())
                for c in frame.columns
                if str(c).startswith(LABEL_PREFIX) and str(frame.at[index, c]).strip()
            )
        cell = Cell(ids[index], value, rel, row, str(source).strip(), year, labels)
        if spec.reader not in MULTI_READERS and ids[index] in out:
            raise SourceError(
                spec.file, f"region '{ids[index]}' appears twice", row, spec.id_column
            )
        out.setdefault(ids[index], []).append(cell)
    return out


def _terms(raw: str, kind: str, default: str | None, source: str) -> list[Term]:
    out = []
    for part in (p.strip() for p in raw.split(TERM_SEP)):
        if not part:
            continue
        text, _, replacement = part.partition(REPLACE_SEP)
        out.append(Term(text.strip(), kind, replacement.strip() or default, source=source))
    return out


LEAK_COLUMNS = ("term", "kind", "lang", "source", "source_version")
"""The leak table's columns besides the region id (docs/twohop-engine.md §4)."""


def load_leak_table(
    columns: RegionColumns, root: Path, replacements: Mapping[str, str], known: set[str]
) -> dict[str, list[Term]]:
    """Region id → its terms from the leak table; a term may point at several regions.

    Every term's replacement is its kind's (``replacements.<lang>.<kind>``); a kind without one
    keeps the term in place, and the leak check then removes the item with the term named. A
    table with a ``replacement`` column may give a term its own description (``sauna`` → ``steam
    bath``), which wins over its kind's words; its plural is the description's English plural
    and it has no compound form (one left in the text is a leak the check removes).
    """
    if columns.leak_table is None:
        return {}
    path = columns.leak_table
    if not path.exists():
        raise SourceError(path, "leak table not found")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    for column in (columns.leak_id_column, *LEAK_COLUMNS):
        if column not in frame.columns:
            raise SourceError(path, f"leak table has no column '{column}'", column=column)
    rel = _relative(path, root)
    frames = frozenset(columns.frame_terms)
    out: dict[str, list[Term]] = {}
    # plain dicts, not ``iterrows``: a Series per row cost seconds on thousands of rows
    for position, record in enumerate(frame.to_dict("records")):
        row = position + 2
        rid, text = record[columns.leak_id_column].strip(), record["term"].strip()
        if rid not in known:
            raise SourceError(
                path, f"'{rid}' is not a region of the set", row, columns.leak_id_column
            )
        if not text:
            raise SourceError(path, "blank term", row, "term")
        kind = record["kind"].strip()
        version = record["source_version"].strip()
        source = f"{record['source'].strip()} {version}".strip() + f" ({rel}:{row})"
        lang = record["lang"].strip() or "und"
        if text in frames:  # the source's frame: kept, never a leak (scrub.FRAME)
            out.setdefault(rid, []).append(Term(text, "frame", None, lang, f"{source} [{kind}]"))
            continue
        if own := " ".join(str(record.get("replacement", "")).split()):
            plural = own if own.endswith("s") else f"{own}s"  # "dzongs" → "fortress-monasteries"
            if own.endswith("y") and not own.endswith(("ay", "ey", "oy", "uy")):
                plural = f"{own[:-1]}ies"
            out.setdefault(rid, []).append(Term(text, kind, own, lang, source, plural, None, True))
            continue
        forms = (replacements.get(f"{kind}_plural"), replacements.get(f"{kind}_compound"))
        out.setdefault(rid, []).append(
            Term(text, kind, replacements.get(kind), lang, source, *forms)
        )
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
    rel = _relative(columns.file, root)
    ids = {str(v).strip() for v in frame[columns.id]}
    extra = load_leak_table(columns, root, replacements, ids)
    regions: list[Region] = []
    seen: set[str] = set()
    for position, record in enumerate(frame.to_dict("records")):
        row = position + 2
        rid = record[columns.id].strip()
        if not rid or rid in seen:
            raise SourceError(columns.file, f"blank or repeated id '{rid}'", row, columns.id)
        seen.add(rid)
        names = {lang: record[col].strip() for lang, col in columns.names.items()}
        if blank := [lang for lang, n in names.items() if not n]:
            raise SourceError(columns.file, f"no name in {blank}", row, columns.names[blank[0]])
        here = f"{rel}:{row}"
        terms = [
            Term(n, "name", replacements.get("name"), source=here)
            for n in dict.fromkeys(names.values())
        ]
        for kind, column in (
            ("alias", columns.aliases), ("demonym", columns.demonyms),
            ("capital", columns.capitals), ("leak_term", columns.leak_terms),
        ):  # fmt: skip
            if column:
                terms += _terms(record[column], kind, replacements.get(kind), here)
        seen_text = {t.text.casefold() for t in terms}
        for term in extra.get(rid, []):
            if term.text.casefold() not in seen_text:  # the regions table's own entry wins
                seen_text.add(term.text.casefold())
                terms.append(term)
        regions.append(Region(rid, names, tuple(terms), row))
    return regions


@dataclass(frozen=True)
class Knowledge:
    """A region set's regions and tables, loaded once."""

    regions: Mapping[str, Region]
    indicators: Mapping[str, dict[str, Cell]]
    categories: Mapping[str, dict[str, list[Cell]]]
    members: frozenset[str] | None = None
    """The set's declared universe (``universe: {column, values}``); every region when None."""

    @property
    def universe(self) -> tuple[str, ...]:
        """The region ids a clue must single out one of (every region unless declared)."""
        return tuple(sorted(self.regions if self.members is None else self.members))

    def label(self, category: str, value: str, language: str) -> str:
        """How a category value reads in ``language`` (its ``label_<lang>``, else the value)."""
        for cells in self.categories[category].values():
            for cell in cells:
                if cell.value == value:
                    return dict(cell.labels).get(language, value)
        return value

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
    by_id = {r.id: r for r in regions}
    for cat in region_set.categories:  # a named fact about no region of the set is an error
        table = categories[cat.table.id]
        if cat.table.reader == "facts" and (unknown := set(table) - set(by_id)):
            cell = min((c for rid in unknown for c in table[rid]), key=lambda c: c.row)
            raise SourceError(
                cat.table.file, f"'{cell.region}' is not a region of the set", cell.row,
                cat.table.id_column,
            )  # fmt: skip
    return Knowledge(by_id, indicators, categories, _members(region_set, by_id))


def _members(region_set: RegionSet, regions: Mapping[str, Region]) -> frozenset[str] | None:
    """The declared universe: regions whose ``universe.column`` holds one of its values."""
    if region_set.universe is None:
        return None
    column, values = region_set.universe
    path = region_set.regions.file
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if column not in frame.columns:
        raise SourceError(path, f"regions table has no universe column '{column}'", column=column)
    ids = frame[region_set.regions.id].str.strip()
    members = frozenset(ids[frame[column].str.strip().isin(values)])
    if not members:
        raise SourceError(path, f"no region has {column} in {list(values)}", column=column)
    return members & frozenset(regions)
