"""The shared GX suite (docs/twohop-engine.md §1 step 9): one file for every region set.

A clean build of the invented set passes; three planted breaks (a leak-table term put back in an
option, the gold moved to one letter, a pair's Indonesian side dropped) each fail their own
expectation, naming the items.
"""

from __future__ import annotations

from pathlib import Path

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
