"""National province table: the universe comparison and intersection claims range over.

A clue such as "the most populous province outside Java" is a claim about Indonesia, so it must
be checked against every province, not the eleven the benchmark happens to cover (issue 11).
``data/knowledge/national/provinces.csv`` holds all 38 provinces with population (SP2020),
area, regency and city counts, main island, land neighbours and foreign land borders; one source
and year per column lives in ``sources.yaml``. Cells we could not check are empty, never
guessed: a claim needing one of them is not offered.

The table loads as a :class:`~cultureqa.knowledge.provinces.KnowledgeBase` of the 34 provinces
of 2020 (the map the 2020 census and Statistik Indonesia 2021 report), so the claim code works
unchanged; the four provinces created in 2022 are kept in the file with no figures.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

import yaml

from cultureqa.knowledge.provinces import (
    KnowledgeBase,
    KnowledgeBaseError,
    Province,
    Statistic,
    default_knowledge_dir,
)

CLAIM_MAP = "2020"
"""Map year of the provinces claims range over (the census year of every figure)."""
COLUMNS = (
    "province", "name_id", "map", "island", "neighbours", "border_countries",
    "population_2020", "area_km2", "regencies", "cities", "admin_regencies", "admin_cities",
    "notes",
)  # fmt: skip
_STATISTICS = {
    "population_2020": ("population", True),
    "area_km2": ("area_km2", False),
    "regencies": ("regencies_count", True),
    "cities": ("cities_count", True),
}
ADMINISTRATIVE = {"regencies": "admin_regencies", "cities": "admin_cities"}
"""Of the counted regencies and cities, those without autonomy (Jakarta's, Law 29/2007): a
reader may not count them, so claims on these counts must hold either way (issue 34)."""


def default_national_path() -> Path:
    """``data/knowledge/national/provinces.csv`` beside the province directory."""
    return default_knowledge_dir().parent / "national" / "provinces.csv"


def _sources(path: Path) -> Mapping[str, Statistic]:
    """Per column, its source and year (value unused)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise KnowledgeBaseError(f"{path}: cannot read: {exc}") from exc
    out = {}
    for column in (*_STATISTICS, *ADMINISTRATIVE.values()):
        entry = data.get(column) if isinstance(data, dict) else None
        if not isinstance(entry, dict) or not entry.get("source") or not entry.get("year"):
            raise KnowledgeBaseError(f"{path}: key '{column}': needs 'source' and 'year'")
        out[column] = Statistic(0.0, int(entry["year"]), str(entry["source"]))
    return out


def _short(source: str) -> str:
    """The citation a clue shows: "BPS, Statistik Indonesia 2021", without the remarks."""
    return re.sub(r"\s*[(;].*$", "", source).strip()


def _number(text: str, integer: bool, where: str) -> float:
    try:
        return float(int(text)) if integer else float(text)
    except ValueError as exc:
        kind = "an integer" if integer else "a number"
        raise KnowledgeBaseError(f"{where}: expected {kind}, got {text!r}") from exc


def _row(row: Mapping[str, str], sources: Mapping[str, Statistic], where: str) -> Province:
    stats = {}
    for column, (name, integer) in _STATISTICS.items():
        text = (row.get(column) or "").strip()
        if text:
            source = sources[column]
            value = _number(text, integer, f"{where}, column '{column}'")
            stats[name] = Statistic(value, source.year, _short(source.source))
    for column, admin in ADMINISTRATIVE.items():
        count, text = stats.get(_STATISTICS[column][0]), (row.get(admin) or "").strip()
        if count is not None and text:
            value = count.value - _number(text, True, f"{where}, column '{admin}'")
            stats[f"autonomous_{_STATISTICS[column][0]}"] = Statistic(
                value, count.year, f"{count.source}; {_short(sources[admin].source)}"
            )

    def split(column: str) -> tuple[str, ...]:
        return tuple(v.strip() for v in (row.get(column) or "").split(";") if v.strip())

    return Province(
        name=row["province"].strip(),
        name_id=row["name_id"].strip(),
        aliases=(),
        capital="",
        cities=(),
        city_aliases=(),
        regencies=(),
        island=row["island"].strip(),
        neighbours=split("neighbours"),
        border_countries=split("border_countries"),
        coast=(),
        ethnic_groups=(),
        cultural_items=MappingProxyType({}),
        geography=(),
        events=(),
        statistics=MappingProxyType(stats),
        sources=tuple(s.source for s in sources.values()),
        notes=(row.get("notes") or "").strip(),
    )


@lru_cache(maxsize=4)
def load_national(path: Path | None = None, map_year: str = CLAIM_MAP) -> KnowledgeBase:
    """The provinces of ``map_year`` from the national table, every row validated.

    Raises:
        KnowledgeBaseError: A missing column, a non-numeric figure (named by file, row and
            column), an unknown neighbour, or a province listed twice.
    """
    path = Path(path or default_national_path())
    sources = _sources(path.with_name("sources.yaml"))
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            if missing := [c for c in COLUMNS if c not in (reader.fieldnames or [])]:
                raise KnowledgeBaseError(f"{path}: missing columns {missing}")
            rows = [(i + 2, r) for i, r in enumerate(reader)]
    except OSError as exc:
        raise KnowledgeBaseError(f"{path}: cannot read: {exc}") from exc
    provinces = [_row(r, sources, f"{path}, row {n}") for n, r in rows]
    names = [p.name for p in provinces]
    if len(set(names)) != len(names):
        raise KnowledgeBaseError(f"{path}: a province is listed twice")
    for (n, _), province in zip(rows, provinces, strict=True):
        if unknown := [x for x in province.neighbours if x not in names]:
            raise KnowledgeBaseError(f"{path}, row {n}, column 'neighbours': unknown {unknown}")
    chosen = tuple(p for (_, r), p in zip(rows, provinces, strict=True) if r["map"] == map_year)
    return KnowledgeBase(chosen, path.parent)
