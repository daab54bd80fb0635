"""Issue 37 item 1: Indonesia's provinces are a region set that the ID-MoCQA build reads."""

from __future__ import annotations

from pathlib import Path

from cultureqa.compose import compose_params
from cultureqa.mocqa_build.pipeline import MocqaSettings

ROOT = Path(__file__).resolve().parents[2]
FROM_SET = {
    "languages": "languages", "clue_types": "clue_types", "min_gap_share": "min_gap_share",
}  # fmt: skip


def test_the_mocqa_build_reads_its_settings_from_the_indonesia_region_set() -> None:
    params = compose_params(ROOT / "conf")
    mocqa, indonesia = params["mocqa"], params["region_sets"]["indonesia"]
    for key, set_key in FROM_SET.items():
        assert mocqa[key] == indonesia[set_key], key
    assert mocqa["knowledge_dir"] == indonesia["regions"]["knowledge_dir"]
    assert mocqa["national_knowledge"] == indonesia["universe"]["file"]
    assert mocqa["clue_facts"] == indonesia["mocqa"]["clue_facts"]
    assert mocqa["templates"] == indonesia["mocqa"]["templates"]
    assert mocqa["benchmark"] == indonesia["source"]["benchmark"]


def test_changing_the_region_set_changes_the_build() -> None:
    params = compose_params(
        ROOT / "conf",
        ["region_sets.indonesia.min_gap_share=0.05", "region_sets.indonesia.languages=[en]"],
    )
    settings = MocqaSettings.from_params(params, ROOT)
    assert settings.min_gap_share == 0.05 and settings.languages == ("en",)
