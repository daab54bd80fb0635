"""Tests for cultureqa.cases.weird: hand-computed scores, thresholds, the committed table."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cultureqa.cases.geography import CONTINENTS, continent_of
from cultureqa.cases.weird import (
    DIMENSIONS,
    FREEDOM_LEVELS,
    INCOME_LEVELS,
    WeirdThresholds,
    annotate_weird,
    compute_thresholds,
    country_table,
    load_indicator_table,
    quantile_class,
    un_members,
    update_indicator,
    weird_for,
    weird_score_sixths,
)
from cultureqa.io import SourceError


def _table(rows: list[tuple[str, int, float, float, str, str]]) -> pd.DataFrame:
    """Synthetic countries: (iso3, western, mys, gdp, income group, freedom status)."""
    frame = pd.DataFrame(
        rows,
        columns=["iso3", "western", "mys_value", "gdp_ppp_value", "income_group", "freedom_status"],
    )
    return frame.assign(country=frame["iso3"], continent="Asia", civilization="x")


SYNTHETIC = _table(
    [
        ("AAA", 1, 13.0, 80_000.0, "High income", "Free"),
        ("BBB", 0, 2.0, 1_000.0, "Low income", "Not Free"),
        ("CCC", 0, 8.0, 12_000.0, "Upper middle income", "Partly Free"),
        ("DDD", 1, 9.0, 30_000.0, "High income", "Partly Free"),
        ("EEE", 0, 5.0, 4_000.0, "Lower middle income", "Free"),
        ("FFF", 0, 11.0, 20_000.0, "Upper middle income", "Not Free"),
    ]
)
# Hand computation. mys sorted 2,5,8,9,11,13: linear quantiles at 1/3 and 2/3 fall at sorted
# positions 5/3 and 10/3 → 5 + (8-5)*2/3 = 7 and 9 + (11-9)*1/3 = 29/3.
# gdp sorted 1k,4k,12k,20k,30k,80k: positions 1.25, 2.5, 3.75 → 6k, 16k, 27.5k.
EXPECTED = {  # iso3: (W, E, I, R, D, score)
    "AAA": (1, 2, 3, 3, 2, 5.0),
    "BBB": (0, 0, 0, 0, 0, 0.0),
    "CCC": (0, 1, 1, 2, 1, 0 + 1 / 2 + 1 / 3 + 2 / 3 + 1 / 2),
    "DDD": (1, 1, 3, 3, 1, 1 + 1 / 2 + 1 + 1 + 1 / 2),
    "EEE": (0, 0, 0, 1, 2, 0 + 0 + 0 + 1 / 3 + 1),
    "FFF": (0, 2, 2, 2, 0, 0 + 1 + 2 / 3 + 2 / 3 + 0),
}


def test_thresholds_from_synthetic_sample() -> None:
    thresholds = compute_thresholds(SYNTHETIC)
    assert thresholds.education_tertiles == pytest.approx((7.0, 29 / 3))
    assert thresholds.income_quartiles == pytest.approx((6_000.0, 16_000.0, 27_500.0))
    assert (thresholds.education_sample, thresholds.income_sample) == (6, 6)


def test_hand_computed_scores_and_bins() -> None:
    annotated = annotate_weird(SYNTHETIC).set_index("iso3")
    for code, (*dims, score) in EXPECTED.items():
        row = annotated.loc[code]
        assert [int(row[d]) for d in DIMENSIONS] == dims, code
        assert row["weird_score"] == pytest.approx(score), code
        assert row["weird_bin"] == math.floor(score + 1e-9), code
    assert annotated.loc["CCC", "weird_bin"] == 2  # 1/3 + 2/3 must not round down to 1.999…


def test_score_is_exact_in_sixths() -> None:
    assert weird_score_sixths(1, 2, 3, 3, 2) == 30
    assert weird_score_sixths(0, 0, 1, 2, 0) == 6  # 1/3 + 2/3 is exactly one point
    assert weird_score_sixths(0, 0, 0, 0, 0) == 0


def test_value_on_a_cut_falls_in_the_lower_class_like_qcut() -> None:
    values = pd.Series([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    cuts = tuple(float(q) for q in np.quantile(values, [1 / 3, 2 / 3]))
    ours = quantile_class(values, cuts)
    assert quantile_class(pd.Series([cuts[0]]), cuts).iloc[0] == 0
    qcut = pd.qcut(values, 3, labels=False)
    assert ours.astype(int).tolist() == qcut.astype(int).tolist()


def test_ties_share_a_class() -> None:
    values = pd.Series([1.0, 2.0, 2.0, 2.0, 2.0, 3.0])
    classes = quantile_class(values, (2.0, 2.0))
    assert classes.tolist() == [0, 0, 0, 0, 0, 2]


def test_thresholds_are_written_with_the_annotation() -> None:
    annotated = annotate_weird(SYNTHETIC)
    for column in ("e_cut_1", "e_cut_2", "i_cut_1", "i_cut_2", "i_cut_3"):
        assert annotated[column].nunique() == 1
    assert annotated["i_cut_3"].iloc[0] == pytest.approx(27_500.0)


def test_given_thresholds_override_the_sample() -> None:
    fixed = WeirdThresholds((100.0, 200.0), (1e9, 2e9, 3e9), 1, 1)
    annotated = annotate_weird(SYNTHETIC, fixed)
    assert set(annotated["E"]) == {0} and set(annotated["I"]) == {0}


def test_missing_dimension_is_an_error_naming_the_country() -> None:
    broken = SYNTHETIC.copy()
    broken.loc[1, "freedom_status"] = ""
    with pytest.raises(ValueError, match="BBB"):
        annotate_weird(broken)
    kept = annotate_weird(broken, drop_incomplete=True)
    assert "BBB" not in set(kept["iso3"]) and len(kept) == 5


def test_update_indicator_backfills_countries_missing_from_a_release() -> None:
    table = SYNTHETIC.assign(mys_year=2021, mys_source="old")
    fresh = pd.DataFrame({"iso3": ["AAA"], "value": [13.5], "year": [2022], "source": ["new"]})
    updated = update_indicator(table, "mys", fresh).set_index("iso3")
    assert updated.loc["AAA", ["mys_value", "mys_year", "mys_source"]].tolist() == [
        13.5,
        2022,
        "new",
    ]
    assert updated.loc["BBB", ["mys_value", "mys_year", "mys_source"]].tolist() == [
        2.0,
        2021,
        "old",
    ]


def test_weird_for_resolves_names_and_fails_loudly() -> None:
    table = _table(
        [
            ("USA", 1, 13.6, 74_000.0, "High income", "Free"),
            ("CHN", 0, 8.1, 22_000.0, "Upper middle income", "Not Free"),
            ("BRA", 0, 8.3, 19_000.0, "Upper middle income", "Free"),
            ("NER", 0, 1.3, 1_700.0, "Low income", "Partly Free"),
        ]
    )
    annotation = annotate_weird(table)
    rows = weird_for(["United States of America", "China"], annotation)
    assert rows["iso3"].tolist() == ["USA", "CHN"]
    with pytest.raises(KeyError, match="Japan"):
        weird_for(["Japan"], annotation)


# --- the committed table ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def committed() -> pd.DataFrame:
    return load_indicator_table()


def test_committed_table_has_enough_countries(committed: pd.DataFrame) -> None:
    assert len(committed) == 193
    assert committed["iso3"].is_unique


def test_every_committed_level_has_year_and_source(committed: pd.DataFrame) -> None:
    table = country_table(committed)
    for dim in DIMENSIONS:
        has_level = table[dim].notna()
        sources = table.loc[has_level, f"{dim}_source"]
        assert sources.str.len().gt(16).all(), dim  # text plus " (year)"
        assert sources.str.contains(r"\((?:19|20)\d\d\)$").all(), dim
    assert committed["income_group"].isin(list(INCOME_LEVELS)).all()
    assert committed["freedom_status"].isin(list(FREEDOM_LEVELS)).all()


UNANNOTATED = {"MCO": "E", "PRK": "E", "VEN": "E, I"}
"""UN members with a level nobody could state with confidence (no bin; see the datasheet)."""


def test_every_committed_country_has_all_dimensions(committed: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="MCO"):
        annotate_weird(committed)
    annotated = annotate_weird(committed, drop_incomplete=True)
    assert len(annotated) == len(committed) - len(UNANNOTATED)
    assert annotated[list(DIMENSIONS)].notna().all().all()
    assert annotated["weird_score"].between(0, 5).all()
    assert (annotated["weird_bin"] == np.floor(annotated["weird_score"] + 1e-9)).all()
    assert set(annotated["weird_bin"]) == {0, 1, 2, 3, 4, 5}


def test_country_table_lists_all_193_un_members(committed: pd.DataFrame) -> None:
    table = country_table(committed).set_index("iso3")
    assert len(un_members()) == 193 and set(table.index) == set(un_members())
    assert table["un_member"].all()
    missing = table[table["weird_bin"].isna()]
    assert missing["missing"].to_dict() == UNANNOTATED
    assert missing["bin_bounds"].to_dict() == {"MCO": "4–5", "PRK": "0–1", "VEN": "0–2"}
    hand = {"CUB": "2", "YEM": "0", "ERI": "0", "SSD": "0", "LIE": "5"}
    assert {c: str(table.loc[c, "weird_bin"]) for c in hand} == hand
    assert (table.loc[["CUB", "LIE"], "E_basis"] == "hand").all()
    assert (table.loc[["USA", "IND"], "E_basis"] == "value").all()


def test_committed_country_table_is_current(committed: pd.DataFrame, tmp_path: Path) -> None:
    """weird_levels.csv is regenerated by ``python -m cultureqa.cases.weird``; stale = failure."""
    from cultureqa.io import write_csv

    path = Path(__file__).parents[2] / "data/knowledge/countries/weird_levels.csv"
    write_csv(tmp_path / "fresh.csv", country_table(committed))
    assert (tmp_path / "fresh.csv").read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


def test_hand_levels_are_checked(tmp_path: Path) -> None:
    source = Path(__file__).parents[2] / "data/knowledge/countries/indicators.csv"
    original = pd.read_csv(source, dtype=str, keep_default_na=False)
    usa = int(original.index[original["iso3"] == "USA"][0])
    cases = (
        ({"e_level": "2", "hand_note": "x"}, "although mys_value exists"),
        ({"mys_value": "", "e_level": "3", "hand_note": "x"}, "must be an integer 0–2"),
        ({"mys_value": "", "e_level": "2"}, "without a hand_note"),
    )
    for change, message in cases:
        broken = original.copy()
        for column, value in change.items():
            broken.loc[usa, column] = value
        path = tmp_path / "indicators.csv"
        broken.to_csv(path, index=False)
        with pytest.raises(SourceError, match=f"row {usa + 1}, column 'e_level'.*") as err:
            load_indicator_table(path)
        assert message in str(err.value)


def test_hand_levels_stay_out_of_the_cuts(committed: pd.DataFrame) -> None:
    hand = committed["e_level"].notna() | committed["i_level"].notna()
    assert hand.sum() == 8 - 1  # Venezuela has no hand level
    with_hand = compute_thresholds(committed)
    without = compute_thresholds(committed[~hand])
    assert with_hand.as_columns() == without.as_columns()
    assert with_hand.education_sample == committed["mys_value"].notna().sum()


def test_cut_sample_adds_the_sources_other_economies(
    tmp_path: Path, committed: pd.DataFrame
) -> None:
    path = tmp_path / "gdp_sample.csv"
    extra = ["HKG,70000", "MAC,80000", "PRI,50000", "USA,1"]  # USA: the table value wins
    path.write_text("iso3,value\n" + "\n".join(extra) + "\n", encoding="utf-8")
    base = compute_thresholds(committed)
    wider = compute_thresholds(committed, {"gdp_ppp": path})
    assert wider.income_sample == base.income_sample + 3
    assert wider.income_quartiles[2] > base.income_quartiles[2]
    assert wider.education_tertiles == base.education_tertiles
    assert "gdp_sample.csv" in wider.income_sample_source
    assert base.income_sample_source.startswith("indicator table")
    path.write_text("iso3,value\nHKG,lots\n", encoding="utf-8")
    with pytest.raises(SourceError, match="row 1, column 'value'"):
        compute_thresholds(committed, {"gdp_ppp": path})


def test_committed_continents_come_from_the_map(committed: pd.DataFrame) -> None:
    assert set(committed["continent"]) == set(CONTINENTS)
    for code, continent in committed[["iso3", "continent"]].itertuples(index=False):
        assert continent_of(code) == continent


def test_committed_western_flag_matches_civilization(committed: pd.DataFrame) -> None:
    western = committed["civilization"].eq("Western").astype(int)
    assert (committed["western"] == western).all()
    assert committed.set_index("iso3").loc[["USA", "DEU", "AUS"], "western"].eq(1).all()
    assert committed.set_index("iso3").loc[["RUS", "JPN", "BRA"], "western"].eq(0).all()


def test_table_loader_reports_row_and_column(tmp_path: Path, committed: pd.DataFrame) -> None:
    broken = pd.read_csv(
        Path(__file__).parents[2] / "data/knowledge/countries/indicators.csv", dtype=str
    )
    broken.loc[2, "income_group"] = "Middle income"
    path = tmp_path / "indicators.csv"
    broken.to_csv(path, index=False)
    with pytest.raises(SourceError, match=r"row 3, column 'income_group'") as err:
        load_indicator_table(path)
    assert err.value.row == 3
