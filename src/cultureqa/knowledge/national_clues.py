"""National claims of clue facts: where in Indonesia a cultural item, place or event belongs.

An entity, geographical, temporal or commonsense clue says "the province that …": it is true only
if nothing else in Indonesia fits. Checking it against the eleven benchmark provinces is not
enough (papeda is Maluku's too, Sekaten Yogyakarta's, the Barito mostly Central Kalimantan's;
issue 22). ``data/knowledge/national/clue_facts.csv`` gives, per fact of the province files, the
set of provinces (of the 38) where it belongs, with a source and year per row. A fact is offered
only if that set, read on the 2020 map the benchmark uses, is exactly its province; an empty set
means unknown and a missing row means unchecked: both are refused, never assumed unique.

Sets are written on today's 38-province map. A fact that lies in a province created in 2022
(the Baliem Valley is in Highland Papua today) still belongs to Papua on the 2020 map, but the
clue must then say which map it means ("before the 2022 split"): :attr:`NationalClaim.
before_2022_split` tells the generator to add that note. Land borders with other countries are
read from the national province table itself (``border_countries``).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from cultureqa.knowledge.national import default_national_path, load_national
from cultureqa.knowledge.provinces import KnowledgeBase, KnowledgeBaseError

SPLIT_2022: Mapping[str, str] = {
    "South Papua": "Papua",
    "Central Papua": "Papua",
    "Highland Papua": "Papua",
    "Southwest Papua": "West Papua",
}
"""Provinces created in 2022 → the 2020 province whose territory they came from."""

COLUMNS = ("province", "fact_key", "provinces", "source", "year", "notes")
NO_ENTRY = "no national entry"
UNKNOWN = "national set unknown"
SHARED = "belongs to several provinces nationally"
KB_SHARED = "not unique in the knowledge base"
REASONS = (KB_SHARED, SHARED, UNKNOWN, NO_ENTRY)
"""Why a named fact is refused, in the order the card lists them."""


@dataclass(frozen=True)
class NationalClaim:
    """Where one clue fact belongs in Indonesia, with its source."""

    province: str
    fact_key: str
    provinces: tuple[str, ...]
    """Members on the 38-province map; empty when unknown."""
    source: str
    year: int | None
    notes: str = ""

    @property
    def on_2020_map(self) -> tuple[str, ...]:
        """The set on the 2020 map (2022 provinces read as the province they came from)."""
        return tuple(sorted({SPLIT_2022.get(p, p) for p in self.provinces}))

    @property
    def before_2022_split(self) -> bool:
        """Whether today's map puts the fact in a 2022 province (the clue must name the map)."""
        return any(p in SPLIT_2022 for p in self.provinces)

    def as_evidence(self) -> dict[str, Any]:
        """The record stored with an item (``clue_evidence["national"]``)."""
        return {
            "provinces": list(self.provinces),
            "provinces_2020_map": list(self.on_2020_map),
            "before_2022_split": self.before_2022_split,
            "source": self.source,
            "year": self.year,
        }


@dataclass(frozen=True)
class Verdict:
    """Whether a fact may become a clue for its province, and if not, why."""

    reason: str
    """Empty when the fact is unique nationally; otherwise one of :data:`REASONS`."""
    claim: NationalClaim | None

    @property
    def unique(self) -> bool:
        """True when the fact belongs to its province alone (on the 2020 map)."""
        return not self.reason


class ClueFactTable:
    """The national claims of every clue fact, plus border facts from the province table."""

    def __init__(self, claims: Iterable[NationalClaim], national: KnowledgeBase) -> None:
        self.claims = {(c.province, c.fact_key): c for c in claims}
        self.national = national

    def verdict(self, province: str, fact_key: str) -> Verdict:
        """The national verdict on ``fact_key`` as a clue for ``province``."""
        claim = self.claims.get((province, fact_key))
        country = fact_key.split(":", 2)[2] if fact_key.startswith("geographical:border:") else ""
        if claim is None and country and any(country in p.border_countries for p in self.national):
            return self._border(province, country)  # a foreign land border: the table decides
        if claim is None:
            return Verdict(NO_ENTRY, None)
        if not claim.provinces:
            return Verdict(UNKNOWN, claim)
        return Verdict("" if claim.on_2020_map == (province,) else SHARED, claim)

    def _border(self, province: str, country: str) -> Verdict:
        owners = tuple(p.name for p in self.national if country in p.border_countries)
        source = "data/knowledge/national/provinces.csv (border_countries)"
        claim = NationalClaim(province, f"geographical:border:{country}", owners, source, 2020)
        if not owners:
            return Verdict(UNKNOWN, claim)
        return Verdict("" if claim.on_2020_map == (province,) else SHARED, claim)


def default_clue_facts_path() -> Path:
    """``data/knowledge/national/clue_facts.csv``."""
    return default_national_path().with_name("clue_facts.csv")


def _all_names(national_path: Path) -> set[str]:
    """Every province of the national table (the 38), whatever its map."""
    with national_path.open(encoding="utf-8", newline="") as handle:
        return {row["province"].strip() for row in csv.DictReader(handle)}


def _claim(row: Mapping[str, str], names: set[str], where: str) -> NationalClaim:
    """One validated row; errors name the file, row and column."""
    province, key = row["province"].strip(), row["fact_key"].strip()
    members = tuple(p.strip() for p in (row.get("provinces") or "").split(";") if p.strip())
    if unknown := [p for p in (province, *members) if p not in names]:
        raise KnowledgeBaseError(f"{where}, column 'provinces': unknown province {unknown}")
    year_text = (row.get("year") or "").strip()
    source = (row.get("source") or "").strip()
    if members and (not source or not year_text.isdigit()):
        raise KnowledgeBaseError(f"{where}: a known set needs 'source' and a 4-digit 'year'")
    if not members and not (row.get("notes") or "").strip():
        raise KnowledgeBaseError(f"{where}, column 'notes': say why the set is unknown")
    year = int(year_text) if year_text else None
    claim = NationalClaim(province, key, members, source, year, (row.get("notes") or "").strip())
    if members and province not in claim.on_2020_map:
        raise KnowledgeBaseError(f"{where}, column 'provinces': does not include {province}")
    return claim


@lru_cache(maxsize=4)
def load_clue_facts(path: Path | None = None, national_path: Path | None = None) -> ClueFactTable:
    """The clue-fact table, every row validated against the national province table.

    Raises:
        KnowledgeBaseError: A missing column, an unknown province, a known set without source
            or year, an unknown set without a note, a set that omits its own province, or a
            fact listed twice (each named by file and row).
    """
    path = Path(path or default_clue_facts_path())
    national_path = Path(national_path or path.with_name("provinces.csv"))
    names = _all_names(national_path)
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            if missing := [c for c in COLUMNS if c not in (reader.fieldnames or [])]:
                raise KnowledgeBaseError(f"{path}: missing columns {missing}")
            claims = [_claim(r, names, f"{path}, row {i + 2}") for i, r in enumerate(reader)]
    except OSError as exc:
        raise KnowledgeBaseError(f"{path}: cannot read: {exc}") from exc
    keys = [(c.province, c.fact_key) for c in claims]
    if len(set(keys)) != len(keys):
        twice = sorted({k for k in keys if keys.count(k) > 1})
        raise KnowledgeBaseError(f"{path}: facts listed twice: {twice}")
    return ClueFactTable(claims, load_national(national_path))
