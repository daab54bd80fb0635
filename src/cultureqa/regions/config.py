"""A region set as configuration (docs/region-sets.md §2): parsed once, every key named on error.

The two-hop method needs to know, per set, which regions exist and what gives each away (names,
demonyms, capitals, leak terms), over which universe a clue must be unique, which tables prove
it, and in which words a clue is written. None of that is code: a new set is a YAML file under
``conf/region_set/`` and the files it points at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GENERATED_TYPES = ("comparison", "intersection", "geographical")
"""Clue types the generic engine proves from tables; the others need a generator (not offline)."""
READERS = ("long", "wide_years", "excel", "membership")


class RegionSetError(ValueError):
    """A region-set config is incomplete or inconsistent; the message names set and key."""


def _need(section: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in section or section[key] is None:
        raise RegionSetError(f"region set {where}: missing key '{key}'")
    return section[key]


@dataclass(frozen=True)
class TableSpec:
    """Where one table lives and how to read it (one of :data:`READERS`)."""

    id: str
    file: Path
    reader: str
    id_column: str
    value_column: str = ""
    year: int | None = None
    sheet: str | None = None
    skiprows: int = 0
    column_pattern: str = "{year}"
    """``wide_years``: the value column's name from the year (``gnipc_{year}`` for the HDR)."""
    filter: Mapping[str, Any] = field(default_factory=dict)
    values: tuple[str, ...] = ()
    """``membership``: the groups kept (all when empty)."""

    @classmethod
    def parse(cls, raw: Mapping[str, Any], root: Path, where: str) -> TableSpec:
        """One table entry; an unknown reader or a reader's missing key fails here."""
        tid = str(_need(raw, "id", where))
        here = f"{where}.{tid}"
        reader = str(_need(raw, "reader", here))
        if reader not in READERS:
            raise RegionSetError(f"region set {here}: reader '{reader}' is not one of {READERS}")
        year = raw.get("year")
        if reader == "wide_years" and year is None:
            raise RegionSetError(f"region set {here}: reader wide_years needs 'year'")
        return cls(
            id=tid,
            file=root / str(_need(raw, "file", here)),
            reader=reader,
            id_column=str(_need(raw, "id_column", here)),
            value_column=str(raw.get("value_column") or ""),
            year=None if year is None else int(year),
            sheet=raw.get("sheet"),
            skiprows=int(raw.get("skiprows") or 0),
            column_pattern=str(raw.get("column_pattern") or "{year}"),
            filter=dict(raw.get("filter") or {}),
            values=tuple(str(v) for v in raw.get("values") or ()),
        )


@dataclass(frozen=True)
class Indicator:
    """A numeric table: what comparison and intersection clues are computed from."""

    table: TableSpec
    label: Mapping[str, str]
    unit: str
    thresholds: tuple[float, ...]
    min_gap_share: float
    decimals: int


@dataclass(frozen=True)
class Category:
    """A categorical table (one value per region, or memberships): geographical facts, scopes."""

    table: TableSpec
    phrase: Mapping[str, str]
    """Per language, the condition's words with ``{value}`` (``in {value}``)."""
    geographical: bool


@dataclass(frozen=True)
class RegionColumns:
    """The regions table: id, a name column per language, the leak-term columns."""

    file: Path
    id: str
    names: Mapping[str, str]
    aliases: str
    demonyms: str
    capitals: str
    leak_terms: str


@dataclass(frozen=True)
class RegionSet:
    """Everything the generic two-hop build needs to know about one set of regions."""

    name: str
    noun: Mapping[str, str]
    languages: tuple[str, ...]
    regions: RegionColumns
    indicators: tuple[Indicator, ...]
    categories: tuple[Category, ...]
    groups: tuple[str, ...]
    """Categories whose value scopes comparisons and intersections ("in region R")."""
    clue_types: tuple[str, ...]
    not_generated: Mapping[str, str]
    templates: Mapping[str, Mapping[str, str]]
    replacements: Mapping[str, Mapping[str, str]]
    min_condition_holders: int
    source: Mapping[str, Any]

    def category(self, cid: str) -> Category:
        """The category named ``cid`` (every group is one)."""
        for c in self.categories:
            if c.table.id == cid:
                return c
        raise RegionSetError(f"region set {self.name}: no category '{cid}'")

    @classmethod
    def from_params(cls, raw: Mapping[str, Any], root: Path) -> RegionSet:
        """Parse ``region_sets.<name>``; unprovable clue types must be declared not generated."""
        name = str(_need(raw, "name", "?"))
        languages = tuple(str(x) for x in _need(raw, "languages", name))
        regions = dict(_need(raw, "regions", name))
        names = dict(_need(regions, "names", f"{name}.regions"))
        if missing := [lang for lang in languages if lang not in names]:
            raise RegionSetError(f"region set {name}.regions.names: no column for {missing}")
        columns = RegionColumns(
            file=root / str(_need(regions, "file", f"{name}.regions")),
            id=str(_need(regions, "id", f"{name}.regions")),
            names=names,
            **{k: str(regions.get(k) or "") for k in ("aliases", "demonyms", "capitals")},
            leak_terms=str(regions.get("leak_terms") or ""),
        )
        indicators = tuple(
            Indicator(
                TableSpec.parse(i, root, f"{name}.indicators"),
                dict(_need(i, "label", f"{name}.indicators")),
                str(i.get("unit") or ""),
                tuple(float(t) for t in _need(i, "thresholds", f"{name}.indicators")),
                float(_need(i, "min_gap_share", f"{name}.indicators")),
                int(i.get("decimals") or 0),
            )
            for i in raw.get("indicators") or ()
        )
        categories = tuple(
            Category(
                TableSpec.parse(c, root, f"{name}.categories"),
                dict(_need(c, "phrase", f"{name}.categories")),
                bool(c.get("geographical", False)),
            )
            for c in raw.get("categories") or ()
        )
        clue_types = tuple(str(x) for x in _need(raw, "clue_types", name))
        not_generated = {str(k): str(v) for k, v in dict(raw.get("not_generated") or {}).items()}
        if bad := [c for c in clue_types if c not in GENERATED_TYPES]:
            raise RegionSetError(
                f"region set {name}.clue_types: {bad} cannot be proved from tables offline "
                f"(generated: {GENERATED_TYPES}); declare them under not_generated with the reason"
            )
        templates = {str(k): dict(v) for k, v in dict(_need(raw, "templates", name)).items()}
        for lang in languages:
            for ctype in clue_types:
                if ctype not in templates.get(lang, {}):
                    raise RegionSetError(f"region set {name}.templates.{lang}: no '{ctype}'")
        out = cls(
            name=name,
            noun=dict(_need(raw, "noun", name)),
            languages=languages,
            regions=columns,
            indicators=indicators,
            categories=categories,
            groups=tuple(str(g) for g in _need(raw, "groups", name)),
            clue_types=clue_types,
            not_generated=not_generated,
            templates=templates,
            replacements={
                str(k): dict(v) for k, v in dict(_need(raw, "replacements", name)).items()
            },
            min_condition_holders=int(raw.get("min_condition_holders") or 3),
            source=dict(_need(raw, "source", name)),
        )
        for group in out.groups:
            out.category(group)  # every scope category must exist
        return out
