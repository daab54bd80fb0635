"""GX suites of the cross-cultural dataset: the sample passes, doctored copies fail readably.

Every run also asserts that no expectation crashed: GX reports a crash as a plain failure, so a
broken check would otherwise pass a "must fail" test for the wrong reason.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

import cultureqa.validation.cases_expectations  # noqa: F401 - registers custom types
from cultureqa.cases.country_levels import LevelSettings, build_levels
from cultureqa.cases.ingest import annotate_cases, load_cases, load_sample_items, split_unannotated
from cultureqa.cases.shuffle import shuffle_items
from cultureqa.cases.topics import load_topic_rules
from cultureqa.core.io import SourceError
from cultureqa.validation import SuiteReport, run_suite
from cultureqa.validation.cases_expectations import (
    answer_problem,
    incomplete_keys,
    type_map_problem,
)

ROOT = Path(__file__).resolve().parents[2]
ANNOTATED_SUITE = ROOT / "expectations" / "cases_annotated.json"
ITEMS_SUITE = ROOT / "expectations" / "cases_items.json"


@functools.cache
def _countries() -> pd.DataFrame:
    """The ``cases_weird`` country table, built from the committed official files."""
    group = OmegaConf.load(ROOT / "conf" / "cases" / "default.yaml")
    settings = LevelSettings.from_config(OmegaConf.to_container(group.weird), ROOT)  # type: ignore[arg-type]
    return build_levels(settings)[0]


def _annotated(table: pd.DataFrame | None = None) -> pd.DataFrame:
    cases = load_cases(ROOT / "data/sources/cases/case_bank.csv")
    rules = load_topic_rules(ROOT / "conf/cases/topic_rules.yaml")
    return annotate_cases(cases, rules, table if table is not None else _countries())


@pytest.fixture(scope="module")
def annotated() -> pd.DataFrame:
    return split_unannotated(_annotated())[0]


@pytest.fixture(scope="module")
def items(annotated: pd.DataFrame) -> pd.DataFrame:
    typed = load_sample_items(ROOT / "data/sources/cases/items_sample.jsonl", annotated["case_id"])
    return shuffle_items(typed.merge(annotated, on="case_id"), seed=60)


def _run(suite: Path, frame: pd.DataFrame) -> SuiteReport:
    report = run_suite(suite, frame)
    assert report.crashes == [], report.message()
    return report


def _failed(report: SuiteReport) -> dict[str, str]:
    return {f["expectation"]: f["detail"] for f in report.failures}


def test_sample_passes_both_suites(annotated: pd.DataFrame, items: pd.DataFrame) -> None:
    for suite, frame in ((ANNOTATED_SUITE, annotated), (ITEMS_SUITE, items)):
        report = _run(suite, frame)
        assert report.success, report.message()
        assert report.evaluated > 15


def _edit_map(frame: pd.DataFrame, change: Callable[[dict[str, str]], dict[str, str]]) -> None:
    frame.loc[0, "letter_types"] = json.dumps(change(json.loads(frame.loc[0, "letter_types"])))


def _duplicate_type(types: dict[str, str]) -> dict[str, str]:
    letters = [k for k, v in types.items() if v != "F"]
    return types | {letters[0]: types[letters[1]]}


def _drop_f(types: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in types.items() if v != "F"}


@pytest.mark.parametrize(
    ("change", "expectations", "phrase"),
    [
        (_duplicate_type, {"expect_letter_type_maps_to_be_complete"}, "2 times"),
        (
            _drop_f,
            {"expect_letter_type_maps_to_be_complete", "expect_answer_to_map_to_correct_type"},
            "type F missing",
        ),
    ],
    ids=["duplicated-type", "missing-F"],
)
def test_broken_type_maps_fail_naming_the_case(
    items: pd.DataFrame,
    change: Callable[[dict[str, str]], dict[str, str]],
    expectations: set[str],
    phrase: str,
) -> None:
    doctored = items.copy()
    _edit_map(doctored, change)
    report = _run(ITEMS_SUITE, doctored)
    failed = _failed(report)
    assert set(failed) == expectations
    case_id = doctored.loc[0, "case_id"]
    assert case_id in report.message() and phrase in report.message()


def test_skewed_positions_fail(items: pd.DataFrame) -> None:
    rows = []
    for row in items.to_dict("records"):  # every answer moved to A, options and map with it
        gold, types = row["answer"], json.loads(row["letter_types"])
        row["option_A"], row[f"option_{gold}"] = row[f"option_{gold}"], row["option_A"]
        types["A"], types[gold] = types[gold], types["A"]
        rows.append(row | {"answer": "A", "letter_types": json.dumps(types)})
    failed = _failed(_run(ITEMS_SUITE, pd.DataFrame(rows)))
    assert set(failed) == {"expect_column_value_shares_to_be_uniform"}
    detail = failed["expect_column_value_shares_to_be_uniform"]
    assert "balanced would be ≈ 17% each; largest gap 0.83 (A), 99% bound" in detail
    assert "> tolerance 0.05: fails" in detail
    assert "chi-square" in detail and "not decisive" in detail


def test_country_without_indicators_fails_naming_it() -> None:
    table = _countries()
    annotated = _annotated(table[table["iso3"] != "JPN"])  # "keep" policy: Japan stays, no bin
    report = _run(ANNOTATED_SUITE, annotated)
    detail = _failed(report)["expect_keys_to_have_complete_values"]
    assert "Japan" in detail and "W, E, I, R, D" in detail


def test_wrong_continent_and_bin_fail(annotated: pd.DataFrame) -> None:
    doctored = annotated.copy()
    australia = doctored.index[doctored["country"] == "Australia"][0]
    doctored.loc[australia, "continent"] = "Asia"  # a planted wrong label, put back
    doctored.loc[0, "weird_bin"] = (int(doctored.loc[0, "weird_bin"]) + 1) % 6  # still in 0–5
    failed = _failed(_run(ANNOTATED_SUITE, doctored))
    assert {"expect_continent_to_match_country", "expect_column_pair_bin_to_be_floor_of_score"} <= (
        set(failed)
    )


def test_problem_helpers_explain_themselves() -> None:
    ok = json.dumps(dict(zip("ABCDEF", "FABCDE", strict=True)))
    assert type_map_problem(ok, list("ABCDEF"), list("ABCDEF")) == ""
    assert answer_problem("A", ok, "F") == ""
    assert answer_problem("B", ok, "F") == "answer B maps to type A, not F"
    assert type_map_problem("[1]", list("AB"), list("AB")) == "not a JSON object"
    frame = pd.DataFrame({"country": ["X", "Y", "X"], "W": [1, None, None], "E": [1, 2, None]})
    assert incomplete_keys(frame, "country", ["W", "E"]) == {"Y": "W", "X": "W, E"}


def test_annotation_names_the_row_of_an_unknown_country() -> None:
    cases = load_cases(ROOT / "data/sources/cases/case_bank.csv").head(3)
    cases.loc[2, "country"] = "Atlantis"
    rules = load_topic_rules(ROOT / "conf/cases/topic_rules.yaml")
    countries = _countries()
    with pytest.raises(SourceError, match=r"cases.csv, row 3, column 'country'.*Atlantis"):
        annotate_cases(cases, rules, countries, path="cases.csv")
