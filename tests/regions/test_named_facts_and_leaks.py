"""Named-fact clues and the leak-term table (docs/twohop-engine.md §2–§4), on the invented set.

The facts and leak tables have the columns of ``data/knowledge/countries/{facts,leak_terms}.csv``;
every clue is decided again here from the raw CSV with plain ``csv``, and a term of every leak kind
is planted in the scenario: each is scrubbed and recorded with its source, or (its kind without a
replacement) the item is removed with the term named and the removal counted in the card.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.core.io import SourceError
from cultureqa.regions.config import RegionSet
from cultureqa.regions.generation.clues import CLUE_LEAK_REASON
from cultureqa.regions.judges.checks import CheckConfig
from cultureqa.regions.pipeline import card_markdown, run_build
from tests.regions.invented import (
    LEAK_KINDS,
    NAMES,
    PLANTED,
    plant_every_kind,
    with_named_facts,
    write_invented,
)

OPTIONS = [f"option_{x}" for x in "ABCDEF"]


@pytest.fixture
def named(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    raw = with_named_facts(tmp_path, write_invented(tmp_path))
    plant_every_kind(tmp_path)
    return raw, tmp_path


def _facts(root: Path) -> dict[tuple[str, str], set[str]]:
    with (root / "data/facts.csv").open(encoding="utf-8") as f:
        out: dict[tuple[str, str], set[str]] = {}
        for r in csv.DictReader(f):
            out.setdefault((r["iso3"], r["fact"]), set()).add(r["value"])
    return out


def _holds(cond: dict[str, Any], rid: str, root: Path) -> bool:
    zones = pd.read_csv(root / "data/zones.csv").set_index("code")
    if cond["category"] in zones.columns:
        return bool(zones.loc[rid, cond["category"]] == cond["value"])
    return cond["value"] in _facts(root).get((rid, cond["category"]), set())


def test_named_fact_clues_are_unique_by_an_independent_reading(named) -> None:
    raw, root = named
    result = run_build(RegionSet.from_params(raw, root), root, 13, CheckConfig())
    data = result.dataset
    assert {"entity", "temporal"} <= set(data["clue_type"])
    for item in data[data["clue_type"].isin(["entity", "temporal"])].to_dict("records"):
        evidence = json.loads(item["clue_evidence"])
        holders = [r for r in NAMES if all(_holds(c, r, root) for c in evidence["conditions"])]
        assert holders == [item["region"]], (item["item_id"], item["clue"])
        # each named fact cites its source, version and year, and the file row holding it
        lines = (root / "data/facts.csv").read_text(encoding="utf-8").splitlines()
        for cell in evidence["cells"]:
            if cell["category"] in {"official_language", "currency", "independence_year"}:
                target = cell["target"]
                assert target["source"].startswith("curated:invented")
                assert lines[target["row"] - 1].startswith(f"{item['region']},{cell['category']},")
    entity = data[(data["clue_type"] == "entity") & (data["language"] == "en")]
    assert entity["clue"].str.contains("official language|currency").all()


def test_a_neighbour_is_written_as_its_name(named) -> None:
    raw, root = named
    raw["clue_types"] = ["geographical"]
    data = run_build(RegionSet.from_params(raw, root), root, 13, CheckConfig()).dataset
    clues = " ".join(data.loc[data["language"] == "en", "clue"])
    assert "bordering " in clues and "bordering LUM" not in clues and "bordering DRA" not in clues


def test_every_leak_kind_is_scrubbed_and_recorded_with_its_source(named) -> None:
    raw, root = named
    result = run_build(RegionSet.from_params(raw, root), root, 13, CheckConfig())
    vel = result.dataset[(result.dataset["region"] == "VEL") & (result.dataset["language"] == "en")]
    assert len(vel) > 0
    for item in vel.to_dict("records"):
        text = "\n".join(str(item[c]) for c in ("background_none", "question", *OPTIONS))
        assert not [t for t in PLANTED.values() if t in text], item["item_id"]
        lost = json.loads(item["replaced"])
        assert {t["kind"] for t in lost} >= set(LEAK_KINDS)
        tharn = next(t for t in lost if t["term"] == "Tharn")
        assert tharn["source"].startswith("curated:invented ethnography 2 (data/leak_terms.csv:")
        assert tharn["replacement"] == "local people"
    counted = result.metrics["items_with_terms_scrubbed_by_kind"]
    assert all(counted[k] >= len(vel) for k in LEAK_KINDS)
    assert "by kind: alias" in card_markdown(result.metrics)


@pytest.mark.parametrize("kind", LEAK_KINDS)
def test_a_leak_kind_without_replacement_removes_its_items_named(named, kind: str) -> None:
    raw, root = named
    raw["replacements"] = {
        lang: {k: v for k, v in words.items() if k != kind}
        for lang, words in raw["replacements"].items()
    }
    result = run_build(RegionSet.from_params(raw, root), root, 13, CheckConfig())
    kept = result.dataset
    assert not ((kept["region"] == "VEL") & (kept["language"] == "en")).any()
    gone = result.removed[
        (result.removed["region"] == "VEL") & (result.removed["language"] == "en")
    ]
    leaks = gone[gone["reason"] == "own-region leak"]
    assert len(leaks) > 0 and leaks["detail"].str.contains(f"({kind})", regex=False).all()
    assert any(
        c["removed_by_reason"].get("own-region leak", 0) > 0
        for c in result.metrics["by_clue_type"].values()
    )


def test_a_clue_may_state_its_currency_but_the_scenario_may_not(named) -> None:
    raw, root = named
    result = run_build(RegionSet.from_params(raw, root), root, 13, CheckConfig())
    stated = result.dataset[result.dataset["clue"].str.contains("velon")]
    assert len(stated) > 0, "an entity clue rests on Veloria's currency"
    assert not stated["background_none"].str.contains("velon").any()
    raw["clue_may_name"] = []
    strict = run_build(RegionSet.from_params(raw, root), root, 13, CheckConfig())
    assert not strict.dataset["clue"].str.contains("velon").any()
    # the candidate naming the currency is refused where it is made, with its reason
    refused = strict.refused[strict.refused["target"] == "VEL"]
    assert (refused["reason"] == CLUE_LEAK_REASON).any()
    gone = strict.removed[strict.removed["item_id"].isin(stated["item_id"])]
    assert set(gone["reason"]) <= {"no verified entity clue", "no verified intersection clue"}


def test_a_leak_table_row_for_an_unknown_region_names_file_row_and_column(named) -> None:
    raw, root = named
    path = root / "data/leak_terms.csv"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "XXX,Nowhere,city,und,x,1\n", "utf-8")
    row = len(text.splitlines()) + 1
    with pytest.raises(SourceError) as info:
        run_build(RegionSet.from_params(raw, root), root, 13, CheckConfig())
    message = str(info.value)
    assert "leak_terms.csv" in message and "XXX" in message and f"row {row}," in message
    assert "iso3" in message
