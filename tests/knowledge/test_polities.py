"""Historic polities leak their province (issue 34): data, loader errors, gazetteer rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from cultureqa.knowledge import load_knowledge_base
from cultureqa.knowledge.gazetteer import Gazetteer, find_own_province_leaks
from cultureqa.knowledge.peoples import load_peoples
from cultureqa.knowledge.polities import default_polities_path, load_polities
from cultureqa.knowledge.provinces import KnowledgeBaseError


def _leaks(text: str, language: str, province: str) -> list[tuple[str, str]]:
    return [(x.name, x.kind) for x in find_own_province_leaks(text, language, province)]  # type: ignore[arg-type]


def test_every_polity_has_its_province_period_and_source() -> None:
    polities = load_polities()
    assert len(polities) >= 30
    by_province = {p.province for p in polities}
    assert by_province == {p.name for p in load_knowledge_base()} - {"Papua"}  # none documented
    assert all(p.source.startswith("Wikipedia: ") and p.year == 2026 for p in polities)
    south = {p.term for p in polities if p.province == "South Sulawesi"}
    assert {"Gowa", "Tallo", "Bone"} <= south
    assert "Samudera Pasai" in {p.term for p in polities if p.province == "Aceh"}


@pytest.mark.parametrize(
    ("text", "language", "province", "expected"),
    [
        # the case: Gowa is a kingdom and a regency of South Sulawesi
        (
            "a fort of the Gowa kingdom on the waterfront",
            "en",
            "South Sulawesi",
            [("Gowa", "polity")],
        ),
        ("benteng Kerajaan Gowa di tepi laut", "id", "South Sulawesi", [("Gowa", "polity")]),
        ("istana raja-raja Tallo", "id", "South Sulawesi", [("Tallo", "polity")]),
        ("the wars of the Kingdom of Bone", "en", "South Sulawesi", [("Bone", "polity")]),
        ("the Bone sultans signed", "en", "South Sulawesi", [("Bone", "polity")]),
        ("the port of Samudera Pasai", "en", "Aceh", [("Samudera Pasai", "polity")]),
        ("Raden Wijaya founded Majapahit", "en", "East Java", [("Majapahit", "polity")]),
        ("Kerajaan Sunda runtuh", "id", "West Java", [("Sunda", "people")]),  # phrase rule
        # not leaks: another province's polity, geography that shares a bare name
        ("Raden Wijaya founded Majapahit", "en", "Bali", []),
        ("the Gulf of Bone lies east", "en", "South Sulawesi", []),
        ("Teluk Bone di timur", "id", "South Sulawesi", []),
        ("the Aru Islands lie far away", "en", "North Sumatra", []),
    ],
)
def test_own_polities_leak_and_look_alikes_do_not(
    text: str, language: str, province: str, expected: list[tuple[str, str]]
) -> None:
    assert _leaks(text, language, province) == expected


def test_each_route_is_needed_the_phrase_rule_and_the_polities_file() -> None:
    """A regency named as a kingdom needs the phrase rule (no locative cue in "the Gowa
    kingdom"); a polity that is no place today (Majapahit) needs the polities file."""
    bare = Gazetteer(load_knowledge_base(), load_peoples())
    gowa = bare.own_leaks("a fort of the Gowa kingdom", "en", "South Sulawesi")
    assert [(x.name, x.kind) for x in gowa] == [("Gowa", "regency")]
    assert bare.own_leaks("a fort near Gowa's old court", "en", "South Sulawesi")  # 's cue
    assert bare.own_leaks("Raden Wijaya founded Majapahit", "en", "East Java") == []
    full = Gazetteer(load_knowledge_base(), load_peoples(), load_polities())
    found = full.own_leaks("Raden Wijaya founded Majapahit", "en", "East Java")
    assert [x.term for x in found] == ["Majapahit (empire)"]


def test_knowledge_base_texts_name_no_polity_of_their_own_province() -> None:
    """Fact texts say "the local sultanate"; only item names may hold one (refused as clues)."""
    for province in load_knowledge_base():
        texts = [(e.text_en, "en") for e in province.events] + [
            (e.text_id, "id") for e in province.events
        ]
        for items in province.cultural_items.values():
            texts += [(i.description_en, "en") for i in items] + [
                (i.description_id, "id") for i in items
            ]
        texts += [(g.fact_en, "en") for g in province.geography] + [
            (g.fact_id, "id") for g in province.geography
        ]
        for text, language in texts:
            polities = [x for x in _leaks(text, language, province.name) if x[1] == "polity"]
            assert not polities or "Sikka" in text, (province.name, text, polities)


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (
            "province: Aceh, kind: sultanate",
            "key 'province': 'Atlantis' is not a benchmark province",
        ),
        ("year: 2026", "key 'year': every entry needs the year of its source"),
        ("kind: sultanate", "key 'kind': 'duchy' is not one of"),
    ],
)
def test_a_malformed_entry_names_file_entry_and_key(
    tmp_path: Path, broken: str, message: str
) -> None:
    text = default_polities_path().read_text(encoding="utf-8")
    replacement = {
        "province: Aceh, kind: sultanate": "province: Atlantis, kind: sultanate",
        "year: 2026": "year: soon",
        "kind: sultanate": "kind: duchy",
    }[broken]
    path = tmp_path / "polities.yaml"
    path.write_text(text.replace(broken, replacement, 1), encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match=rf"polities.yaml: polities\[0\]: {message}"):
        load_polities(path)
