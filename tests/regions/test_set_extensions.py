"""What the Indonesian set needed from the engine, proved on the invented lands.

* commonsense as a named clue type, when a fact kind is mapped to it (a dish one is served);
* ``label_<lang>`` columns of the facts table: a value proved once, worded per language;
* ``universe: {column, values}``: regions named (their terms scrubbed) but outside the claims;
* the highest (lowest) of a scope, "higher than R's", where the set words it;
* a facts row naming no region of the set fails with file, row and column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cultureqa.core.io import SourceError
from cultureqa.regions.config import RegionSet, RegionSetError
from cultureqa.regions.generation.clues import Clues
from cultureqa.regions.generation.conditions import decide
from cultureqa.regions.generation.tables import load_knowledge
from tests.regions.invented import with_named_facts, write_invented

SOURCE = "curated:invented cookbook,1,2020"
DISHES = [
    f'DRA,dish,fish stew,"fish stew, simmered for a day","sup ikan, yaitu sup sehari",{SOURCE}',
    f'QUI,dish,fish stew,"fish stew, simmered for a day","sup ikan, yaitu sup sehari",{SOURCE}',
    f'LUM,dish,salt bread,"salt bread, baked in ash","roti garam, yaitu roti abu",{SOURCE}',
]


def _with_dishes(root: Path) -> dict[str, Any]:
    raw = with_named_facts(root, write_invented(root))
    facts = root / "data/facts.csv"
    header, *rows = facts.read_text(encoding="utf-8").splitlines()
    extra = DISHES
    head = "iso3,fact,value,label_en,label_id,source,source_version,year"
    body = [",".join([*r.split(",", 3)[:3], "", "", r.split(",", 3)[3]]) for r in rows]
    facts.write_text("\n".join([head, *body, *extra]) + "\n", encoding="utf-8")
    assert header.startswith("iso3,fact,value,source")
    raw["facts"]["kinds"] = {
        **raw["facts"]["kinds"],
        "dish": {
            "clue_type": "commonsense",
            "phrase": {"en": "where you are served {value}", "id": "tempat disuguhi {value}"},
        },
    }
    raw["clue_types"] = [*raw["clue_types"], "commonsense"]
    for lang in ("en", "id"):
        raw["templates"][lang]["commonsense"] = raw["templates"][lang]["geographical"]
    return raw


def test_a_commonsense_clue_rests_on_its_own_fact_worded_per_language(tmp_path: Path) -> None:
    rs = RegionSet.from_params(_with_dishes(tmp_path), tmp_path)
    kb = load_knowledge(rs, tmp_path, "en")
    book = Clues(rs, kb).build(kb.universe)
    (clue,) = [c for c in book.get("LUM", "commonsense") if len(c.conditions) == 1]
    assert clue.text["en"] == "the land where you are served salt bread, baked in ash"
    assert clue.text["id"] == "negeri tempat disuguhi roti garam, yaitu roti abu"
    assert clue.evidence["cells"][0]["target"]["source"] == "curated:invented cookbook 1"
    # a dish two lands share is no clue alone: every commonsense clue of theirs needs more
    for rid in ("DRA", "QUI"):
        assert all(len(c.conditions) > 1 for c in book.get(rid, "commonsense"))


def test_commonsense_without_a_fact_kind_must_be_declared(tmp_path: Path) -> None:
    raw = with_named_facts(tmp_path, write_invented(tmp_path))
    raw["clue_types"] = [*raw["clue_types"], "commonsense"]
    with pytest.raises(
        RegionSetError, match=r"no category or fact kind supports \['commonsense'\]"
    ):
        RegionSet.from_params(raw, tmp_path)


def test_the_universe_leaves_named_regions_out_of_every_claim(tmp_path: Path) -> None:
    raw = write_invented(tmp_path)
    regions = tmp_path / "data/regions.csv"
    lines = regions.read_text(encoding="utf-8").splitlines()
    lines = [lines[0] + ",map"] + [
        f"{x},{'old' if x.startswith('OST') else 'new'}" for x in lines[1:]
    ]
    regions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    raw["universe"] = {"column": "map", "values": ["new"]}
    rs = RegionSet.from_params(raw, tmp_path)
    kb = load_knowledge(rs, tmp_path, "en")
    assert "OST" in kb.regions and kb.universe == ("DRA", "LUM", "QUI", "VEL")
    # Ostrabia (1500 mm) is outside: Veloria (1200 mm) is now the wettest of the Northern Zone
    cond = [{"kind": "category", "category": "zone", "value": "Northern Zone"},
            {"kind": "range", "indicator": "rain", "low": 1000, "high": None}]  # fmt: skip
    assert decide(cond, kb, frozenset()).holders == ("VEL",)
    raw["universe"] = {"column": "map", "values": ["none"]}
    with pytest.raises(SourceError, match=r"regions\.csv, column 'map': no region has map"):
        load_knowledge(RegionSet.from_params(raw, tmp_path), tmp_path, "en")


def test_the_highest_of_a_scope_is_a_clue_only_where_the_set_words_it(tmp_path: Path) -> None:
    raw = write_invented(tmp_path)
    rs = RegionSet.from_params(raw, tmp_path)
    kb = load_knowledge(rs, tmp_path, "en")
    book = Clues(rs, kb).build(kb.universe)
    assert not any(
        c["kind"] == "between" and None in (c["low_region"], c["high_region"])
        for clues in book.clues.values() for clue in clues for c in clue.conditions
    )  # fmt: skip
    for lang, words in (("en", "{indicator} in {year} was higher than {low}'s"),
                        ("id", "{indicator} pada {year} di atas {low}")):  # fmt: skip
        raw["templates"][lang]["comparison_above"] = words
    rs = RegionSet.from_params(raw, tmp_path)
    book = Clues(rs, kb).build(kb.universe)
    # Ostrabia's 1500 mm against Veloria's 1200 (20 % apart, the rule is 5 %): the wettest
    (clue,) = [
        c for c in book.get("OST", "comparison")
        if len(c.conditions) == 2 and c.conditions[-1].get("indicator") == "rain"
        and c.conditions[-1].get("high_region", "") is None
    ]  # fmt: skip
    assert clue.text["en"] == (
        "the land in the Northern Zone whose yearly rainfall (mm) in 2020 was higher than Veloria's"
    )
    assert clue.evidence["holders"] == ["OST"] and clue.evidence["gap_share"] == pytest.approx(0.2)
    # no template for the lowest: Quintar (800 mm, the driest of the zone) gets no such clue
    assert not any(
        c["kind"] == "between" and c["low_region"] is None
        for clue in book.get("QUI", "comparison") for c in clue.conditions
    )  # fmt: skip


def test_a_fact_about_no_region_of_the_set_names_file_row_and_column(tmp_path: Path) -> None:
    raw = _with_dishes(tmp_path)
    facts = tmp_path / "data/facts.csv"
    facts.write_text(
        facts.read_text(encoding="utf-8")
        + "ATL,dish,salt bread,,,curated:invented cookbook,1,2020\n",
        encoding="utf-8",
    )
    row = len(facts.read_text(encoding="utf-8").splitlines())
    with pytest.raises(SourceError, match=rf"facts\.csv, row {row}, column 'iso3': 'ATL' is not"):
        load_knowledge(RegionSet.from_params(raw, tmp_path), tmp_path, "en")
