"""Tests for cultureqa.cases.indicator_loaders on tiny files in the official layouts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cultureqa.cases.indicator_loaders import (
    TIDY_COLUMNS,
    freedom_status_rows,
    latest_available,
    load_freedom_house,
    load_freedom_status,
    load_hdr_composite,
    load_worldbank_economies,
    load_worldbank_income,
    load_worldbank_indicator,
)
from cultureqa.core.io import SourceError

WB_CSV = (
    '"Data Source","World Development Indicators",\n'
    "\n"
    '"Last Updated Date","2025-01-28",\n'
    "\n"
    '"Country Name","Country Code","Indicator Name","Indicator Code","2020","2021","2022","2023",\n'
    '"Aruba","ABW","GDP per capita, PPP","NY.GDP.PCAP.PP.CD","1","2","3","",\n'
    '"Afghanistan","AFG","GDP per capita, PPP","NY.GDP.PCAP.PP.CD","10","","","",\n'
    '"World","WLD","GDP per capita, PPP","NY.GDP.PCAP.PP.CD","5","6","7","8",\n'
    '"Eritrea","ERI","GDP per capita, PPP","NY.GDP.PCAP.PP.CD","","","","",\n'
)

CLASS_CSV = (
    "Economy,Code,Region,Income group,Lending category\n"
    "Afghanistan,AFG,South Asia,Low income,IDA\n"
    "Algeria,DZA,Middle East & North Africa,Upper middle income,IBRD\n"
    "Bolivia,BOL,Latin America & Caribbean,Lower-middle income,IBRD\n"
    "Germany,DEU,Europe & Central Asia,High income,\n"
    "Venezuela,VEN,Latin America & Caribbean,,\n"
    ",,,,\n"
    "World,WLD,,,\n"
)

HDR_CSV = (
    "iso3,country,hdicode,region,mys_2020,mys_2021,mys_2022,eys_2022\n"
    "AFG,Afghanistan,Low,SA,2.9,2.9,2.5,10.7\n"
    "CIV,C\xf4te d'Ivoire,Low,SSA,4.1,4.2,,11.0\n"
    "PRK,Korea (Democratic People's Rep. of),,EAP,,,,\n"
)

FH_CSV = (
    "Freedom in the World 2013-2024 raw data,,,,,,\n"
    "Country/Territory,Region,C/T,Edition,Status,PR rating,CL rating\n"
    "Ecuador,Americas,c,2023,F,2,3\n"
    "Ecuador,Americas,c,2024,PF,3,3\n"
    "Thailand,Asia,c,2023,NF,6,5\n"
    "Thailand,Asia,c,2024,PF,5,4\n"
    "The Gambia,Africa,c,2024,PF,4,4\n"
    "Hong Kong,Asia,t,2024,PF,5,4\n"
    "Côte d'Ivoire,Africa,c,2022,PF,4,4\n"
)


def _write(tmp_path: Path, name: str, text: str, encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding=encoding)
    return path


def test_worldbank_indicator_skips_metadata_and_backfills(tmp_path: Path) -> None:
    path = _write(tmp_path, "API_NY.GDP.PCAP.PP.CD_DS2_en_csv_v2_1.csv", WB_CSV)
    tidy = load_worldbank_indicator(path).set_index("iso3")
    assert tuple(tidy.reset_index().columns) == TIDY_COLUMNS
    assert tidy.loc["ABW", ["value", "year"]].tolist() == [3.0, 2022]
    assert tidy.loc["AFG", ["value", "year"]].tolist() == [10.0, 2020]
    assert tidy.loc["WLD", ["value", "year"]].tolist() == [8.0, 2023]
    assert "ERI" not in tidy.index  # no value in any year: nothing to back-fill from
    assert tidy.loc["ABW", "source"] == "World Bank WDI NY.GDP.PCAP.PP.CD"


def test_worldbank_indicator_target_year_caps_the_backfill(tmp_path: Path) -> None:
    path = _write(tmp_path, "wb.csv", WB_CSV)
    tidy = load_worldbank_indicator(path, target_year=2021, source="WDI").set_index("iso3")
    assert tidy.loc["WLD", ["value", "year", "source"]].tolist() == [6.0, 2021, "WDI"]


def test_worldbank_indicator_bad_cell_names_row_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "wb.csv", WB_CSV.replace('"2","3"', '"2","n/a"'))
    with pytest.raises(SourceError, match=r"row 1, column '2022'.*not a number: 'n/a'"):
        load_worldbank_indicator(path)


def test_worldbank_indicator_without_header_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "wb.csv", "a,b\n1,2\n")
    with pytest.raises(SourceError, match="Country Name"):
        load_worldbank_indicator(path)


def test_worldbank_income_normalises_groups(tmp_path: Path) -> None:
    path = _write(tmp_path, "CLASS.csv", CLASS_CSV)
    tidy = load_worldbank_income(path, fiscal_year=2025).set_index("iso3")
    assert tidy["value"].to_dict() == {
        "AFG": "Low income",
        "DZA": "Upper middle income",
        "BOL": "Lower middle income",
        "DEU": "High income",
    }
    assert set(tidy["year"]) == {2025}
    assert tidy.loc["AFG", "source"].endswith("FY2025")


def test_worldbank_income_unknown_group_is_a_row_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "CLASS.csv", CLASS_CSV.replace("High income", "Rich"))
    with pytest.raises(SourceError, match=r"row 4, column 'Income group'"):
        load_worldbank_income(path, fiscal_year=2025)


def test_hdr_reads_latin1_and_backfills(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "HDR23-24_Composite_indices_complete_time_series.csv", HDR_CSV, "cp1252"
    )
    tidy = load_hdr_composite(path, prefix="mys").set_index("iso3")
    assert tidy.loc["AFG", ["value", "year"]].tolist() == [2.5, 2022]
    assert tidy.loc["CIV", ["value", "year"]].tolist() == [4.2, 2021]
    assert "PRK" not in tidy.index


def test_hdr_missing_prefix_and_bad_number(tmp_path: Path) -> None:
    path = _write(tmp_path, "hdr.csv", HDR_CSV)
    with pytest.raises(SourceError, match="no 'gnipc_<year>' columns"):
        load_hdr_composite(path, prefix="gnipc")
    bad = _write(tmp_path, "bad.csv", HDR_CSV.replace("2.9,2.5", "2.9,x"))
    with pytest.raises(SourceError, match=r"row 1, column 'mys_2022'"):
        load_hdr_composite(bad)


def test_freedom_house_latest_edition_and_names(tmp_path: Path) -> None:
    path = _write(tmp_path, "All_data_FIW_2013-2024.csv", FH_CSV)
    tidy = load_freedom_house(path).set_index("iso3")
    assert tidy.loc["ECU", ["value", "year"]].tolist() == ["Partly Free", 2024]
    assert tidy.loc["THA", "value"] == "Partly Free"
    assert tidy.loc["GMB", "value"] == "Partly Free"
    assert tidy.loc["CIV", "year"] == 2022  # back-filled from an older edition
    assert "HKG" not in tidy.index  # territories are not countries
    capped = load_freedom_house(path, target_edition=2023).set_index("iso3")
    assert capped.loc["ECU", "value"] == "Free"


def test_freedom_house_errors_name_the_row(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "fh.csv", FH_CSV.replace("Thailand,Asia,c,2023,NF", "Thailand,Asia,c,2023,XX")
    )
    with pytest.raises(SourceError, match=r"row 3, column 'Status'"):
        load_freedom_house(path)
    unknown = _write(tmp_path, "fh2.csv", FH_CSV.replace("The Gambia", "Gambiaa Land"))
    with pytest.raises(SourceError, match=r"row 5, column 'Country/Territory'"):
        load_freedom_house(unknown)


def test_missing_file_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="file not found"):
        load_hdr_composite(tmp_path / "nope.csv")


def test_latest_available_picks_latest_non_missing() -> None:
    long = pd.DataFrame(
        {"iso3": ["A", "A", "A", "B"], "year": [2020, 2021, 2022, 2019], "value": [1, 2, None, 5]}
    )
    latest = latest_available(long).set_index("iso3")
    assert latest.loc["A", ["value", "year"]].tolist() == [2.0, 2021]
    assert latest.loc["B", "year"] == 2019


def test_worldbank_economies_leave_out_aggregates(tmp_path: Path) -> None:
    text = (
        '"Country Code","Region","IncomeGroup","SpecialNotes","TableName",\n'
        '"ABW","Latin America & Caribbean","High income","","Aruba",\n'
        '"AFE","","","26 countries","Africa Eastern and Southern",\n'
        '"DEU","Europe & Central Asia","High income","","Germany",\n'
    )
    assert load_worldbank_economies(_write(tmp_path, "meta.csv", text)) == {"ABW", "DEU"}
    bad = _write(tmp_path, "bad.csv", text.replace('"DEU"', '"De"'))
    with pytest.raises(SourceError, match="row 3, column 'Country Code'"):
        load_worldbank_economies(bad)


def test_freedom_status_table_round_trip(tmp_path: Path) -> None:
    sheet = pd.read_csv(_write(tmp_path, "fh.csv", FH_CSV), skiprows=1, dtype=str)
    rows = freedom_status_rows(tmp_path / "fh.csv", sheet)
    assert "HKG" not in set(rows["iso3"])  # territories stay out
    assert rows.columns.tolist() == ["iso3", "country", "edition", "status"]
    derived = tmp_path / "status.csv"
    rows.to_csv(derived, index=False)
    tidy = load_freedom_status(derived, edition=2024, source="FH 2024").set_index("iso3")
    assert tidy.loc["ECU", ["value", "year"]].tolist() == ["Partly Free", 2024]
    assert "CIV" not in tidy.index  # no back-fill from the 2022 edition
    with pytest.raises(SourceError, match="no rows of edition 2026"):
        load_freedom_status(derived, edition=2026, source="x")
    derived.write_text(derived.read_text().replace("Partly Free", "Half Free", 1))
    with pytest.raises(SourceError, match=r"row 2, column 'status'.*Half Free"):
        load_freedom_status(derived, edition=2024, source="x")
