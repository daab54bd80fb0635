"""Tests for cultureqa.cases.geography: one continent map, aliases, loud failures."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cultureqa.cases.geography import (
    CONTINENTS,
    UnknownCountryError,
    continent_of,
    country_name,
    iso3_of,
    known_iso3,
    normalize_name,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("country", ["United States", "USA", "United States of America", "Canada"])
def test_only_us_and_canada_are_north_america(country: str) -> None:
    assert continent_of(country) == "North America"
    north = [code for code in known_iso3() if continent_of(code) == "North America"]
    assert north == ["CAN", "USA"]


@pytest.mark.parametrize(
    "country",
    ["Mexico", "Brazil", "Jamaica", "Guatemala", "Cuba", "Haiti", "Trinidad and Tobago", "Chile"],
)
def test_rest_of_the_americas_is_latin_america(country: str) -> None:
    assert continent_of(country) == "Latin America"


@pytest.mark.parametrize(
    ("alias", "iso3"),
    [
        ("UK", "GBR"),
        ("United Kingdom", "GBR"),
        ("England", "GBR"),
        ("Türkiye", "TUR"),
        ("Turkey", "TUR"),
        ("Côte d'Ivoire", "CIV"),
        ("Cote d'Ivoire", "CIV"),
        ("Ivory Coast", "CIV"),
        ("South Korea", "KOR"),
        ("Korea, Rep.", "KOR"),
        ("Korea (Republic of)", "KOR"),
        ("Korea, Dem. People's Rep.", "PRK"),
        ("Russian Federation", "RUS"),
        ("Viet Nam", "VNM"),
        ("Gambia, The", "GMB"),
        ("St. Lucia", "LCA"),
        ("Congo (Kinshasa)", "COD"),
        ("Congo, Rep.", "COG"),
        ("Iran (Islamic Republic of)", "IRN"),
        ("  united states  ", "USA"),
        ("usa", "USA"),
        ("chn", "CHN"),
    ],
)
def test_aliases_and_codes_resolve(alias: str, iso3: str) -> None:
    assert iso3_of(alias) == iso3


def test_border_cases_follow_m49() -> None:
    assert continent_of("Russia") == "Europe"
    assert continent_of("Türkiye") == "Asia"
    assert continent_of("Cyprus") == "Asia"
    assert continent_of("Egypt") == "Africa"
    assert continent_of("Papua New Guinea") == "Oceania"


def test_unknown_country_raises_with_suggestion() -> None:
    with pytest.raises(UnknownCountryError, match="Atlantis"):
        continent_of("Atlantis")
    with pytest.raises(UnknownCountryError, match="did you mean 'brazil'"):
        iso3_of("Brazl")
    assert issubclass(UnknownCountryError, ValueError)


def test_normalize_name_folds_spelling_variants() -> None:
    assert normalize_name("São Tomé & Príncipe") == normalize_name("Sao Tome and Principe")
    assert normalize_name("The Bahamas") == normalize_name("Bahamas, The") == "bahamas"


def test_map_covers_all_un_members_once() -> None:
    codes = known_iso3()
    assert len(codes) == len(set(codes))
    assert len(codes) >= 193
    assert {continent_of(code) for code in codes} == set(CONTINENTS)
    assert country_name("CIV") == "Côte d'Ivoire"


def test_map_covers_every_country_in_the_indicator_table() -> None:
    table = pd.read_csv(
        ROOT / "data/knowledge/countries/civilizations.csv", dtype=str, keep_default_na=False
    )
    for code, name, continent in table[["iso3", "country", "continent"]].itertuples(index=False):
        assert iso3_of(name) == code
        assert continent_of(code) == continent, code
