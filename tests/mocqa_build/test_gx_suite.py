"""The GX suite passes on the built dataset and fails readably on doctored copies."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cultureqa.validation.suites import SuiteReport

SUITE = Path(__file__).resolve().parents[2] / "expectations" / "mocqa_dataset.json"


def _run(frame: pd.DataFrame) -> SuiteReport:
    import cultureqa.validation.mocqa_expectations  # noqa: F401 - registers the custom types
    from cultureqa.validation import run_suite

    report = run_suite(SUITE, frame.reset_index(drop=True))
    assert report.crashes == [], report.message()  # a crashing check must never pass as "failed"
    return report


def _failed(report: SuiteReport) -> dict[str, str]:
    return {f["expectation"]: f["detail"] for f in report.failures}


@pytest.fixture(scope="module")
def dataset(template_build) -> pd.DataFrame:
    return template_build[1]["finalize"].frame


def test_suite_passes_on_the_built_dataset(dataset: pd.DataFrame) -> None:
    report = _run(dataset)
    assert report.success, report.message()
    assert report.evaluated >= 50


def test_leaked_province_name_fails(dataset: pd.DataFrame) -> None:
    doctored = dataset.copy()
    row = doctored.index[(doctored["province"] == "Bali") & (doctored["language"] == "en")][0]
    doctored.loc[row, "question"] = "At weddings in Bali, " + doctored.loc[row, "question"]
    report = _run(doctored)
    failed = _failed(report)
    assert set(failed) == {
        "expect_questions_to_not_leak_province",
        "expect_questions_to_not_name_own_province",
    }, report.message()
    assert "in Bali" in failed["expect_questions_to_not_leak_province"]
    assert "expect_questions_to_not_leak_province(" in report.message()


def test_a_citation_inside_a_question_fails(dataset: pd.DataFrame) -> None:
    doctored = dataset.copy()
    row = doctored.index[doctored["clue_type"] == "comparison"][0]
    doctored.loc[row, "question"] = doctored.loc[row, "question"].replace(
        ".", " (BPS, Statistik Indonesia 2021, 2020).", 1
    )
    failed = _failed(_run(doctored))
    assert set(failed) == {"expect_column_values_to_not_match_regex"}, failed


def test_a_count_claim_that_needs_jakartas_administrative_cities_fails(
    dataset: pd.DataFrame,
) -> None:
    """Issue 34: "more than 5 million, fewer than 2 cities" is NTT only if Jakarta's five
    administrative cities count; the stored claim fails the national recomputation."""
    from cultureqa.knowledge.national import load_national
    from cultureqa.mocqa_build import claims
    from cultureqa.mocqa_shared.schema import dumps_evidence

    found = claims.intersection_claims(load_national(), "East Nusa Tenggara", 0.02)
    refused = next(e for e in found if e["refusal"] == claims.ADMIN_REASON)
    claim = {**refused, "unique": True, "refusal": ""}  # as an older build stored it
    claim.pop("autonomous_intersection")
    doctored = dataset.copy()
    mask = (doctored["province"] == "East Nusa Tenggara") & (
        doctored["clue_type"] == "intersection"
    )
    row = doctored.index[mask][0]
    doctored.loc[row, "clue_evidence"] = dumps_evidence(claim)
    failed = _failed(_run(doctored))
    assert set(failed) == {"expect_claims_to_hold_nationally"}, failed


def test_missing_translation_fails(dataset: pd.DataFrame) -> None:
    victim = dataset[dataset["language"] == "id"].iloc[0]
    doctored = dataset[dataset["item_id"] != victim["item_id"]]
    failed = _failed(_run(doctored))
    assert "expect_pairs_to_exist_in_every_language" in failed
    detail = failed["expect_pairs_to_exist_in_every_language"]
    assert (
        victim["source_id"] in detail
        and '"missing": ["id"]' in detail
        and f"1 of {dataset['pair_id'].nunique()} pairs" in detail
    )


def test_skewed_gold_positions_fail(dataset: pd.DataFrame) -> None:
    doctored = dataset.copy()
    doctored.loc[doctored.index[: len(doctored) // 2], "answer"] = "A"
    failed = _failed(_run(doctored))
    assert set(failed) == {"expect_column_value_shares_to_be_uniform"}
    detail = failed["expect_column_value_shares_to_be_uniform"]
    assert "balanced would be ≈ 33% each; largest gap" in detail and "chi-square" in detail


def test_copied_option_and_broken_options_fail(dataset: pd.DataFrame) -> None:
    doctored = dataset.copy()
    first, second = doctored.index[0], doctored.index[1]
    options = list(doctored.loc[first, "options"])
    doctored.loc[first, "question"] = f"{doctored.loc[first, 'question']} Hint: {options[0]}."
    doctored.at[second, "options"] = ["same", "same", "other"]
    failed = _failed(_run(doctored))
    assert {
        "expect_questions_to_not_copy_options",
        "expect_column_values_to_be_distinct_lists_of_n",
    } <= set(failed)


@pytest.mark.parametrize(
    ("province", "language", "planted", "named"),
    [
        ("Aceh", "en", "Think of the province home to Rumoh Aceh. ", "Aceh (province Aceh)"),
        ("North Sumatra", "en", "At a Batak wedding, ", "Batak (people Batak)"),
        ("South Sulawesi", "id", "Coto Makassar disajikan. ", "Makassar (capital Makassar)"),
        ("Central Java", "id", "Lumpia Semarang dijual. ", "Semarang (capital Semarang)"),
        # issue 34: a historic polity of the province, also one of its regencies
        ("South Sulawesi", "en", "A fort of the Gowa kingdom. ", "Gowa (polity Gowa (sultanate))"),
        ("South Sulawesi", "id", "Dahulu Kerajaan Bone berjaya. ", "Bone (polity Bone (kingdom))"),
        ("East Java", "en", "Think of Majapahit. ", "Majapahit (polity Majapahit (empire))"),
    ],
)
def test_own_province_names_fail_without_an_allowlist_exemption(
    dataset: pd.DataFrame, province: str, language: str, planted: str, named: str
) -> None:
    doctored = dataset.copy()
    mask = (doctored["province"] == province) & (doctored["language"] == language)
    row = doctored.index[mask][0]
    doctored.loc[row, "question"] = planted + doctored.loc[row, "question"]
    failed = _failed(_run(doctored))
    assert "expect_questions_to_not_name_own_province" in failed
    assert named in failed["expect_questions_to_not_name_own_province"]


def test_a_shared_culture_clue_fails_the_national_uniqueness_expectation(
    dataset: pd.DataFrame,
) -> None:
    """Issue 22: one entity clue whose fact is Maluku's too (papeda) breaks the suite."""
    import json

    doctored = dataset.copy()
    mask = (doctored["province"] == "Papua") & (doctored["clue_type"] == "commonsense")
    row = doctored.index[mask][0]
    evidence = json.loads(doctored.loc[row, "clue_evidence"])
    evidence["fact_key"] = "commonsense:dishes:Papeda"  # a sago porridge of Maluku too
    doctored.loc[row, "clue_evidence"] = json.dumps(evidence)
    failed = _failed(_run(doctored))
    assert set(failed) == {"expect_clues_to_be_unique_nationally"}
    detail = failed["expect_clues_to_be_unique_nationally"]
    assert "Papeda" in detail and "belongs to several provinces nationally" in detail
    assert "Maluku" in detail


def test_a_clue_fact_without_a_national_entry_fails(dataset: pd.DataFrame) -> None:
    import json

    doctored = dataset.copy()
    row = doctored.index[doctored["clue_type"] == "entity"][0]
    evidence = json.loads(doctored.loc[row, "clue_evidence"])
    evidence["fact_key"] = "entity:dances:A Dance Nobody Checked"
    doctored.loc[row, "clue_evidence"] = json.dumps(evidence)
    failed = _failed(_run(doctored))
    assert "no national entry" in failed["expect_clues_to_be_unique_nationally"]


def test_the_suite_margin_is_the_configured_one() -> None:
    """The GX claim check and the build refuse the same thin margins (one value, two places)."""
    import json

    import yaml

    # composed: conf/mocqa reads the margin from the Indonesian region set by interpolation
    conf = yaml.safe_load((SUITE.parents[1] / "params.yaml").read_text())["mocqa"]
    spec = json.loads(SUITE.read_text(encoding="utf-8"))
    kwargs = next(
        e["kwargs"] for e in spec["expectations"] if e["type"] == "expect_claims_to_hold_nationally"
    )
    assert kwargs["min_gap_share"] == conf["min_gap_share"]
