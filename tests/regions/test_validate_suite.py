"""The shared GX suite (docs/twohop-engine.md §1 step 9): one file for every region set.

A clean build of the invented set passes; three planted breaks (a leak-table term put back in an
option, the gold moved to one letter, a pair's Indonesian side dropped) each fail their own
expectation, naming the items.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from cultureqa.regions.config import RegionSet
from cultureqa.regions.judges.checks import CheckConfig
from cultureqa.regions.pipeline import run_build
from cultureqa.regions.validate import SUITE, validate_dataset
from tests.regions.invented import with_named_facts, write_invented

ROOT = Path(__file__).resolve().parents[2]


def test_the_suite_passes_a_clean_set_and_names_each_planted_break(tmp_path: Path) -> None:
    raw = with_named_facts(tmp_path, write_invented(tmp_path))
    rs = RegionSet.from_params(raw, tmp_path)
    data = run_build(rs, tmp_path, 13, CheckConfig()).dataset
    (tmp_path / "expectations").mkdir()
    (tmp_path / SUITE).write_text((ROOT / SUITE).read_text(encoding="utf-8"), "utf-8")
    clean = validate_dataset(data, rs, tmp_path)
    assert clean.success, clean.message()

    broken = data.copy()
    vel = broken.index[(broken["region"] == "VEL") & (broken["language"] == "en")][0]
    broken.loc[vel, "option_B"] = "Because the Tharn keep it so"  # a people of Veloria
    broken["answer"] = "A"
    en_pairs = broken.index[broken["language"] == "id"]
    broken = broken.drop(index=en_pairs[:1])
    report = validate_dataset(broken, rs, tmp_path)
    assert not report.success and not report.crashes
    failed = {f["expectation"]: f["detail"] for f in report.failures}
    assert "expect_items_to_not_name_their_region" in failed
    assert str(broken.loc[vel, "item_id"]) in failed["expect_items_to_not_name_their_region"]
    assert "Tharn (people)" in failed["expect_items_to_not_name_their_region"]
    assert "expect_column_value_shares_to_be_uniform" in failed
    assert "expect_pairs_to_exist_in_every_language" in failed


def test_the_statement_format_part_passes_a_clean_build_and_names_each_planted_break(
    tmp_path: Path,
) -> None:
    """The same suite reads a ``statement`` dataset (the ID-MoCQA contract's columns).

    One break per expectation that reads it, each on its own row; every one fails by name.
    """
    from tests.regions.test_statement_format import build, statement_set

    data = build(tmp_path).dataset
    rs = statement_set(tmp_path)
    (tmp_path / "expectations").mkdir(exist_ok=True)
    (tmp_path / SUITE).write_text((ROOT / SUITE).read_text(encoding="utf-8"), "utf-8")
    clean = validate_dataset(data, rs, tmp_path)
    assert clean.success, clean.message()
    assert clean.evaluated > 40  # the case part (six option columns) is not run

    broken = data.copy()
    en = broken.index[broken["language"] == "en"]
    vel = en[broken.loc[en, "region"] == "VEL"][0]
    rows = iter(r for r in en if r != vel)
    options = list(broken.at[vel, "options"])
    broken.at[vel, "options"] = [options[0], options[1], "as in Castelmar"]  # its capital
    broken.at[next(rows), "region"] = "ATLANTIS"
    broken.at[next(rows), "n_words"] = 3
    broken.at[next(rows), "question"] = "Menurut Badan Pusat Statistik, which option is right?"
    row = next(rows)
    broken.at[row, "question"] = f"{broken.at[row, 'question']} {broken.at[row, 'options'][0]}"
    row = next(rows)
    broken.at[row, "options"] = list(broken.at[row, "options"])[:2]
    broken.at[next(rows), "clue_evidence"] = "not json"
    broken = pd.concat([broken, broken.iloc[[-1]].assign(item_id="a copy")], ignore_index=True)
    broken = broken.drop(index=broken.index[broken["language"] == "id"][:1])
    broken["answer"] = broken["answer"].where(broken.index % 7 != 0, "D")
    report = validate_dataset(broken, rs, tmp_path)
    assert not report.crashes, report.message()
    failed = {(f["expectation"], f["column"]) for f in report.failures}
    expected = {
        ("expect_items_to_not_name_their_region", ""),
        ("expect_column_values_to_be_in_set", "region"),
        ("expect_column_values_to_be_in_set", "answer"),
        ("expect_column_values_to_be_between", "n_words"),
        ("expect_column_values_to_not_match_regex", "question"),
        ("expect_questions_to_not_copy_options", "question, options"),
        ("expect_column_values_to_be_distinct_lists_of_n", "options"),
        ("expect_column_values_to_match_regex", "clue_evidence"),
        ("expect_compound_columns_to_be_unique", "source_id, clue_type, language"),
        ("expect_pairs_to_exist_in_every_language", ""),
    }
    assert expected <= failed, report.message()
    shares = validate_dataset(data.assign(answer="A"), rs, tmp_path)
    assert {f["expectation"] for f in shares.failures} == {
        "expect_column_value_shares_to_be_uniform"
    }
