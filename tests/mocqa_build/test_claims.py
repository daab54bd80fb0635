"""Comparison and intersection claims are computed from KB statistics and verified."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType

import pytest

from cultureqa.knowledge.provinces import KnowledgeBase, Statistic, load_knowledge_base
from cultureqa.mocqa_build import claims
from cultureqa.mocqa_build.templates import (
    MIN_TEMPLATES,
    TemplateError,
    load_templates,
    placeholders,
)
from cultureqa.mocqa_shared.schema import CLUE_TYPES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return load_knowledge_base()


def _with_stat(kb: KnowledgeBase, province: str, name: str, value: float) -> KnowledgeBase:
    """A copy of the KB with one statistic changed (KB records are frozen)."""
    provinces = []
    for p in kb:
        if p.name == province:
            stats = dict(p.statistics)
            stats[name] = Statistic(value, stats[name].year, stats[name].source)
            p = dataclasses.replace(p, statistics=MappingProxyType(stats))
        provinces.append(p)
    return KnowledgeBase(tuple(provinces), kb.source_dir)


def test_a_count_claim_must_name_one_province_whether_or_not_jakartas_units_count() -> None:
    """Issue 34: NTT is the only province of more than 5 million with fewer than 2 cities only
    if Jakarta's five administrative cities count; counting autonomous cities, Jakarta (0)
    joins it. Such a claim is refused with its reason, and the stored old claim fails."""
    from cultureqa.knowledge.national import load_national

    national = load_national()
    alt = claims.autonomous_reading(national)
    assert alt is not None and alt["Jakarta"].statistics["cities_count"].value == 0
    assert claims.autonomous_reading(alt) is None  # the readings agree there
    found = claims.intersection_claims(national, "East Nusa Tenggara", 0.02)
    pair = {"cities_count_below:2", "population_above:5"}
    refused = [e for e in found if {e["s1"]["id"], e["s2"]["id"]} == pair]
    assert len(refused) == 2 and all(e["refusal"] == claims.ADMIN_REASON for e in refused)
    assert all(e["intersection"] == ["East Nusa Tenggara"] for e in refused)  # BPS reading holds
    assert all(e["autonomous_intersection"] == [] and not e["unique"] for e in refused)
    assert not claims.verify_evidence(national, refused[0], "East Nusa Tenggara", 0.02)
    kept = [e for e in found if not e["refusal"]]
    assert kept and all(
        claims.verify_evidence(national, e, "East Nusa Tenggara", 0.02) for e in kept
    )
    fewest = claims.comparison_evidence(national, "cities_count", "min1", "Java")
    assert fewest["holder"] == "Yogyakarta" and fewest["autonomous_holder"] == "Jakarta"
    assert fewest["refusal"] == claims.ADMIN_REASON and not fewest["unique"]
    most = claims.comparison_evidence(national, "regencies_count", "max1", "Sumatra")
    assert most["unique"] and "autonomous_holder" not in most  # North Sumatra either way


def test_rank_holder_needs_a_strict_winner() -> None:
    assert claims.rank_holder({"a": 3, "b": 2, "c": 1}, "max1") == "a"
    assert claims.rank_holder({"a": 3, "b": 2, "c": 1}, "min2") == "b"
    assert claims.rank_holder({"a": 3, "b": 3, "c": 1}, "max1") is None  # tie
    assert claims.rank_holder({"a": 3, "b": 2, "c": 2}, "max2") is None  # tie below
    assert claims.rank_holder({"a": 3, "b": 2}, "max1") is None  # scope too small


def test_every_comparison_identifies_exactly_its_province(kb: KnowledgeBase) -> None:
    for province in kb:
        found = claims.comparison_claims(kb, province.name)
        assert found, f"no verifiable comparison for {province.name}"
        for evidence in found:
            values = evidence["data"]
            assert len(values) >= claims.MIN_SCOPE and evidence["source"] and evidence["year"]
            ordered = sorted(values, key=values.get, reverse=evidence["rank"].startswith("max"))
            k = int(evidence["rank"][-1]) - 1
            assert ordered[k] == province.name and evidence["unique"]
            assert list(values.values()).count(values[province.name]) == 1
            assert claims.verify_evidence(kb, evidence, province.name)
            assert not claims.verify_evidence(
                kb, evidence, "Bali" if province.name != "Bali" else "Aceh"
            )


def test_comparison_fails_verification_when_the_kb_changes(kb: KnowledgeBase) -> None:
    evidence = claims.comparison_evidence(kb, "population", "max1", "all")
    assert evidence["holder"] == "West Java"
    tied = _with_stat(kb, "East Java", "population", kb["West Java"].statistics["population"].value)
    assert claims.comparison_evidence(tied, "population", "max1", "all")["unique"] is False
    assert not claims.verify_evidence(tied, evidence, "West Java")


def test_every_intersection_has_s1_of_three_and_narrows_to_the_target(kb: KnowledgeBase) -> None:
    for province in kb:
        found = claims.intersection_claims(kb, province.name)
        assert found, f"no verifiable intersection for {province.name}"
        for evidence in found[:25]:
            s1, s2 = evidence["s1"]["provinces"], evidence["s2"]["provinces"]
            assert len(s1) >= 3 and province.name in s1
            assert [p for p in s1 if p in s2] == [province.name] == evidence["intersection"]
            assert claims.verify_evidence(kb, evidence, province.name)


def test_intersection_predicates_are_recomputed_from_the_kb(kb: KnowledgeBase) -> None:
    s1 = claims.predicate_by_id(kb, "population_above:10")
    s2 = claims.predicate_by_id(kb, "island:Sumatra")
    assert s1 is not None and s2 is not None
    evidence = claims.intersection_evidence(kb, s1, s2)
    assert set(evidence["s1"]["provinces"]) == {
        "North Sumatra",
        "West Java",
        "Central Java",
        "East Java",
    }
    assert evidence["intersection"] == ["North Sumatra"] and evidence["unique"]
    shrunk = _with_stat(kb, "West Java", "population", 1_000_000)
    shrunk = _with_stat(shrunk, "Central Java", "population", 1_000_000)
    assert not claims.verify_evidence(shrunk, evidence, "North Sumatra")  # S1 now has 2 members
    assert not claims.verify_evidence(kb, {**evidence, "s2": {"id": "no_such"}}, "North Sumatra")


def test_templates_have_three_per_clue_type_and_language() -> None:
    book = load_templates((ROOT / "data/knowledge/clue_templates.yaml").resolve())
    for clue_type in CLUE_TYPES:
        groups = [k for k in book.clues if k.startswith(f"{clue_type}.")]
        assert groups
        for group in groups:
            for language in ("en", "id"):
                assert len(book.clues[group][language]) >= MIN_TEMPLATES
    for language in ("en", "id"):
        assert all({"clue", "stem"} <= placeholders(f) for f in book.frames[language])
    assert book.localize("Lake Toba", "id") == "Danau Toba"
    assert book.localize("Java Sea", "id") == "Laut Jawa"


def test_a_template_missing_its_slot_is_a_load_error(tmp_path: Path) -> None:
    text = (ROOT / "data/knowledge/clue_templates.yaml").read_text(encoding="utf-8")
    broken = text.replace(
        "Think of the province where, in {year}, {text}.",
        "Think of the province where something happened.",
    )
    path = tmp_path / "templates.yaml"
    path.write_text(broken, encoding="utf-8")
    with pytest.raises(TemplateError, match=r"temporal.default.en\[0\]' lacks \['text', 'year'\]"):
        load_templates(path)


def test_claims_in_the_built_dataset_hold_for_all_of_indonesia(template_build) -> None:
    import json

    from cultureqa.knowledge.national import load_national

    national = load_national()
    dataset = template_build[1]["finalize"].frame
    claimed = dataset[dataset["clue_type"].isin(["comparison", "intersection"])]
    assert len(claimed) > 0
    for row in claimed.itertuples():
        evidence = json.loads(row.clue_evidence)
        assert claims.verify_evidence(national, evidence, row.province), row.clue
        if evidence["claim"] == "comparison" and evidence["scope"] == "all":
            assert len(evidence["data"]) == len(national)  # the evidence stores every value
    closed = r"covered here|dibahas di sini|eleven provinces|kesebelas provinsi"
    assert not dataset["question"].str.contains(closed).any()


def test_a_claim_true_only_among_the_benchmark_provinces_fails_nationally(
    kb: KnowledgeBase,
) -> None:
    from cultureqa.knowledge.national import load_national

    national = load_national()
    # Among the 11, West Sumatra has the smallest area on Sumatra; nationally Bengkulu does.
    evidence = claims.comparison_evidence(kb, "area_km2", "min1", "Sumatra")
    assert evidence["holder"] == "West Sumatra"
    assert not claims.verify_evidence(national, evidence, "West Sumatra")
    assert claims.comparison_evidence(national, "area_km2", "min1", "Sumatra")["holder"] == (
        "Bengkulu"
    )
    # A statistic some province lacks (area for ten of them) yields no national claim at all.
    assert claims.comparison_evidence(national, "area_km2", "max1", "all")["holder"] is None


@pytest.mark.parametrize(
    ("claim", "province", "verdict"),
    [
        ("West Java is the most populous province of Indonesia", "West Java", "agrees"),
        ("Aceh has the smallest population of the provinces on Sumatra", "Aceh", "disagrees"),
        ("North Sumatra has the most regencies on Sumatra", "North Sumatra", "agrees"),
        ("Papua has the most regencies in Indonesia", "Papua", "disagrees"),  # Central Java: 29
        ("Bali is the smallest province outside Java", "Bali", "unverifiable"),  # loose scope
    ],
)
def test_llm_comparison_claims_are_recomputed_over_their_whole_scope(
    claim: str, province: str, verdict: str
) -> None:
    from cultureqa.knowledge.national import load_national
    from cultureqa.mocqa_build.llm.kb_check import check_comparison_nationally

    got, note = check_comparison_nationally(load_national(), {"claim_text": claim}, province)
    assert got == verdict, note


def test_an_intersection_that_depends_on_an_unchecked_cell_is_never_offered(
    tmp_path: Path,
) -> None:
    import shutil

    from cultureqa.knowledge.national import default_national_path, load_national

    folder = tmp_path / "national"
    shutil.copytree(default_national_path().parent, folder)
    path = folder / "provinces.csv"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("1848923,46914.03,", "1848923,,", 1), encoding="utf-8")
    planted = load_national(path)  # Maluku's area left out
    island = claims.predicate_by_id(planted, "no_land_border")
    dense = claims.predicate_by_id(planted, "density_above:500")
    assert island is not None and dense is not None
    evidence = claims.intersection_evidence(planted, island, dense)
    # Bali is the only dense island province we can check, but Maluku's area is missing: "no"
    # would be a guess, so the claim is refused and the gap is named.
    assert evidence["intersection"] == ["Bali"] and not evidence["unique"]
    assert "Maluku" in evidence["undecided"]
    # with Maluku's figure in the table (issue 22 filled it) the same claim is decided
    national = load_national()
    filled = claims.intersection_evidence(
        national,
        claims.predicate_by_id(national, "no_land_border"),  # type: ignore[arg-type]
        claims.predicate_by_id(national, "density_above:500"),  # type: ignore[arg-type]
    )
    assert filled["intersection"] == ["Bali"] and filled["unique"] and not filled["undecided"]
    borneo = claims.predicate_by_id(national, "island:Borneo")
    denser = claims.predicate_by_id(national, "density_above:100")
    assert borneo is not None and denser is not None
    ok = claims.intersection_evidence(national, borneo, denser)
    assert ok["intersection"] == ["South Kalimantan"] and ok["unique"] and not ok["undecided"]
