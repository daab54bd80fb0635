"""National claims of clue facts (issue 22): every clue unique in all of Indonesia, or refused."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from cultureqa.knowledge import load_knowledge_base
from cultureqa.knowledge.national import default_national_path, load_national
from cultureqa.knowledge.national_clues import (
    NO_ENTRY,
    SHARED,
    UNKNOWN,
    default_clue_facts_path,
    load_clue_facts,
)
from cultureqa.knowledge.provinces import KnowledgeBaseError
from cultureqa.mocqa_build import claims
from cultureqa.mocqa_build.clues import ClueGenerator
from cultureqa.mocqa_build.facts import NAMED_FACTS
from cultureqa.mocqa_build.templates import load_templates

ROOT = Path(__file__).resolve().parents[2]


def _book():  # type: ignore[no-untyped-def]
    return load_templates(ROOT / "data" / "knowledge" / "clue_templates.yaml")


def _planted(tmp_path: Path, edit: dict[str, str | None]) -> Path:
    """A copy of the national folder whose clue table has rows replaced (value) or dropped."""
    folder = tmp_path / "national"
    shutil.copytree(default_national_path().parent, folder)
    path = folder / "clue_facts.csv"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    out = []
    for row in rows:
        key = f"{row['province']}|{row['fact_key']}"
        if key in edit and edit[key] is None:
            continue
        if key in edit:
            row = {**row, "provinces": str(edit[key])}
        out.append(row)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(out)
    return path


def test_every_named_fact_of_the_province_files_has_one_national_row() -> None:
    table = load_clue_facts()
    book, kb = _book(), load_knowledge_base()
    keys = []
    for province in kb:
        for make in NAMED_FACTS.values():
            facts = [f for f in make(kb, province, book) if f.evidence["kind"] != "border_country"]
            keys += [(province.name, f.key) for f in facts]
    assert len(keys) == len(set(keys))  # no two facts of a province share a key
    assert set(keys) == set(table.claims), set(keys) ^ set(table.claims)


def test_every_known_set_has_a_source_and_year_and_every_unknown_a_reason() -> None:
    with default_clue_facts_path().open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["provinces"]:
                assert row["source"] and len(row["year"]) == 4, row
            else:
                assert row["notes"] and not row["source"], row


def test_the_issues_shared_culture_examples_are_refused_with_their_reason() -> None:
    table = load_clue_facts()
    shared = [
        ("Papua", "commonsense:dishes:Papeda"),
        ("Papua", "entity:dances:Sajojo"),
        ("Papua", "entity:textiles:Noken"),
        ("Central Java", "entity:weapons:Tombak"),
        ("Central Java", "commonsense:ceremonies:Sekaten"),
        ("South Kalimantan", "geographical:river:Barito River"),
        ("West Java", "temporal:2000"),
        ("East Nusa Tenggara", "temporal:1958"),
    ]
    for province, key in shared:
        assert table.verdict(province, key).reason == SHARED, (province, key)
    assert table.verdict("Aceh", "commonsense:ceremonies:Kenduri Maulod").reason == UNKNOWN
    assert table.verdict("Aceh", "entity:dances:Saman").unique


def test_a_planted_two_province_clue_and_a_missing_entry_are_refused(tmp_path: Path) -> None:
    """A fact made true in two provinces, and one with no row, never become clues."""
    path = _planted(
        tmp_path,
        {"Aceh|entity:dances:Saman": "Aceh;North Sumatra", "Aceh|entity:dances:Seudati": None},
    )
    table = load_clue_facts(path)
    kb = load_knowledge_base()
    generator = ClueGenerator(kb, _book(), load_national(), table)
    offered = {f.key for f in generator.candidates("Aceh", "entity")}
    assert not {"entity:dances:Saman", "entity:dances:Seudati"} & offered
    refused = {r.fact_key: r.reason for r in generator.refused()}
    assert refused["entity:dances:Saman"] == SHARED
    assert refused["entity:dances:Seudati"] == NO_ENTRY
    with_default = ClueGenerator(kb, _book(), load_national())
    assert "entity:dances:Saman" in {f.key for f in with_default.candidates("Aceh", "entity")}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"Aceh|entity:dances:Saman": "Aceh;Atlantis"}, r"row \d+, column 'provinces': unknown"),
        ({"Aceh|entity:dances:Saman": "North Sumatra"}, r"does not include Aceh"),
    ],
)
def test_a_malformed_row_names_file_row_and_column(
    tmp_path: Path, edit: dict[str, str | None], message: str
) -> None:
    with pytest.raises(KnowledgeBaseError, match=message):
        load_clue_facts(_planted(tmp_path, edit))


def test_facts_in_a_2022_province_say_which_map_the_clue_means() -> None:
    """The Baliem Valley is Highland Papua's today: the clue must say "before the 2022 split"."""
    table = load_clue_facts()
    verdict = table.verdict("Papua", "geographical:valley:Baliem Valley")
    assert verdict.unique and verdict.claim is not None and verdict.claim.before_2022_split
    assert not table.verdict("Papua", "geographical:lake:Lake Sentani").claim.before_2022_split  # type: ignore[union-attr]
    generator = ClueGenerator(load_knowledge_base(), _book(), load_national(), table)
    grasberg = "entity:landmarks:Grasberg mine"
    texts = []
    for rotation in range(40):
        clue, _ = generator.clue_for("Papua", "entity", rotation, {})
        if clue is not None and clue.fact_key == grasberg:
            texts = list(clue.text.values())
            break
    assert texts, "the Grasberg clue should be offered"
    assert "before the 2022 split" in texts[0] and "sebelum pemekaran 2022" in texts[1]
    assert "34" not in " ".join(texts)


def test_a_comparison_decided_by_a_hair_is_refused_with_its_reason() -> None:
    """NTT's population is 0.10% above NTB's: true, but not a clue a reader can check."""
    national = load_national()
    exact = claims.comparison_evidence(national, "population", "max1", claims.OUTSIDE)
    margin = claims.comparison_evidence(national, "population", "max1", claims.OUTSIDE, 0.02)
    assert exact["holder"] == "East Nusa Tenggara" and exact["unique"]
    assert exact["gap_share"] < 0.002
    assert not margin["unique"] and margin["refusal"].startswith("deciding gap under 2.00%")
    assert not claims.verify_evidence(national, exact, "East Nusa Tenggara", 0.02)
    assert claims.verify_evidence(national, exact, "East Nusa Tenggara", 0.0)
    # counts are exact by law: no margin applies to them
    counts = claims.comparison_evidence(national, "regencies_count", "max1", "Sumatra", 0.5)
    assert counts["holder"] is not None and counts["unique"]


def test_an_intersection_with_a_province_near_its_threshold_is_refused() -> None:
    national = load_national()
    found = claims.intersection_claims(national, "East Java", 0.02)
    thin = [e for e in found if e["refusal"]]
    assert thin and all(e["near_threshold"] for e in thin)  # East Java: 40.67 million vs 40
    assert any("East Java" in e["near_threshold"] for e in thin)
    assert all(not e["refusal"] for e in claims.intersection_claims(national, "East Java"))


def test_the_filled_areas_and_the_jakarta_rule() -> None:
    national = load_national()
    areas = {p.name: p.statistics.get("area_km2") for p in national}
    for name in ("Southeast Sulawesi", "Gorontalo", "West Sulawesi", "Maluku", "North Maluku"):
        assert areas[name] is not None, name
    assert areas["North Sulawesi"] is None and areas["West Papua"] is None  # two values in print
    jakarta = national["Jakarta"].statistics
    # Jakarta's administrative regency and five administrative cities count, as BPS counts them
    assert (jakarta["regencies_count"].value, jakarta["cities_count"].value) == (1, 5)


def test_the_rules_judge_rechecks_named_facts_nationally() -> None:
    from cultureqa.mocqa_build.judge_rules import clue_accuracy

    kb, national, table = load_knowledge_base(), load_national(), load_clue_facts()
    papeda = {"kind": "dishes", "name": "Papeda", "fact_key": "commonsense:dishes:Papeda"}
    saman = {"kind": "dances", "name": "Saman", "fact_key": "entity:dances:Saman"}
    assert clue_accuracy(kb, papeda, "Papua", national, table) == 0
    assert clue_accuracy(kb, saman, "Aceh", national, table) == 2
    assert clue_accuracy(kb, papeda, "Papua", national) == 2  # what the KB alone would say
