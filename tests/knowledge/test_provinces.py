"""Knowledge base: completeness, provenance of every figure, and loud errors on bad files."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from cultureqa.knowledge.provinces import (
    CANONICAL_PROVINCES,
    KnowledgeBase,
    KnowledgeBaseError,
    default_knowledge_dir,
    load_knowledge_base,
)

CORE_KINDS = ("dances", "dishes", "textiles", "houses", "ceremonies", "instruments", "landmarks")


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    return load_knowledge_base()


@pytest.fixture
def kb_copy(tmp_path: Path) -> Path:
    target = tmp_path / "provinces"
    shutil.copytree(default_knowledge_dir(), target)
    return target


def _fold(text: str) -> str:
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


def test_loads_all_eleven_provinces_in_canonical_order(kb: KnowledgeBase) -> None:
    assert tuple(p.name for p in kb) == CANONICAL_PROVINCES
    assert kb["Papua"].name_id == "Papua"
    assert kb["South Kalimantan"].name_id == "Kalimantan Selatan"
    with pytest.raises(KeyError):
        kb["Jakarta"]


def test_load_is_cached(kb: KnowledgeBase) -> None:
    assert load_knowledge_base() is kb


@pytest.mark.parametrize("name", CANONICAL_PROVINCES)
def test_each_province_has_the_minimum_content(kb: KnowledgeBase, name: str) -> None:
    province = kb[name]
    assert len(province.cities) + len(province.regencies) >= 6
    for kind in CORE_KINDS:
        assert len(province.items(kind)) >= 2, f"{name}: fewer than 2 {kind}"
    assert len(province.geography) >= 2
    assert len(province.events) >= 2
    assert province.ethnic_groups and province.coast and province.sources
    assert province.capital in province.cities


@pytest.mark.parametrize("name", CANONICAL_PROVINCES)
def test_every_statistic_has_year_and_source(kb: KnowledgeBase, name: str) -> None:
    stats = kb[name].statistics
    assert {"area_km2", "population", "regencies_count", "cities_count"} <= set(stats)
    for key, stat in stats.items():
        assert 1900 <= stat.year <= 2026, f"{name}.{key}"
        assert stat.source.strip(), f"{name}.{key}"
        assert stat.value > 0, f"{name}.{key}"
    assert stats["population"].year == 2020  # SP2020 everywhere, so comparisons are like-for-like


@pytest.mark.parametrize("name", CANONICAL_PROVINCES)
def test_place_lists_are_complete_and_match_official_counts(kb: KnowledgeBase, name: str) -> None:
    province = kb[name]
    assert (
        len(set(province.cities))
        == len(province.cities)
        == province.statistics["cities_count"].value
    )
    assert (
        len(set(province.regencies))
        == len(province.regencies)
        == province.statistics["regencies_count"].value
    )


def test_events_are_dated_and_sourced(kb: KnowledgeBase) -> None:
    for province in kb:
        for event in province.events:
            assert 1200 <= event.year <= 2026
            assert event.source and event.text_en and event.text_id


def test_aliases_do_not_collide_across_provinces(kb: KnowledgeBase) -> None:
    owner: dict[str, str] = {}
    for province in kb:
        for alias in province.names:
            key = _fold(alias)
            assert owner.setdefault(key, province.name) == province.name, alias
    for province in kb:
        for place in (*province.cities, *province.regencies):
            other = owner.get(_fold(place))
            assert other in (None, province.name), f"{place} ({province.name}) is {other}'s alias"


def test_land_borders_between_the_eleven_are_symmetric(kb: KnowledgeBase) -> None:
    for province in kb:
        for neighbour in province.neighbours:
            if neighbour in CANONICAL_PROVINCES:
                assert province.name in kb[neighbour].neighbours, (province.name, neighbour)


def test_known_rankings_hold(kb: KnowledgeBase) -> None:
    def top(key: str) -> str:
        return max(kb, key=lambda p: p.statistics[key].value).name

    assert top("population") == "West Java"
    assert top("area_km2") == "Papua"  # pre-2022 boundaries, stated in the Papua file
    assert min(kb, key=lambda p: p.statistics["area_km2"].value).name == "Bali"
    assert "pre-2022" in kb["Papua"].notes.lower()


def test_default_dir_honours_dvc_root(kb_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = kb_copy.parent
    (root / "data" / "knowledge").mkdir(parents=True)
    shutil.move(kb_copy, root / "data" / "knowledge" / "provinces")
    monkeypatch.setenv("DVC_ROOT", str(root))
    loaded = load_knowledge_base()
    assert loaded.source_dir == (root / "data" / "knowledge" / "provinces").resolve()
    assert len(loaded) == 11


def test_wrong_type_names_file_and_key(kb_copy: Path) -> None:
    path = kb_copy / "bali.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("year: 2020, source", 'year: "2020", source', 1), "utf-8")
    with pytest.raises(KnowledgeBaseError, match=r"bali\.yaml: key 'statistics\.area_km2\.year'"):
        load_knowledge_base(kb_copy)


def test_missing_key_names_list_index(kb_copy: Path) -> None:
    path = kb_copy / "aceh.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('    source: "Wikipedia: Aceh War', '    sauce: "x', 1), "utf-8")
    with pytest.raises(KnowledgeBaseError, match=r"aceh\.yaml: key 'events\[1\]\.source': missing"):
        load_knowledge_base(kb_copy)


def test_invalid_yaml_names_file(kb_copy: Path) -> None:
    (kb_copy / "papua.yaml").write_text("name: Papua\naliases: [unclosed\n", "utf-8")
    with pytest.raises(KnowledgeBaseError, match=r"papua\.yaml: invalid YAML"):
        load_knowledge_base(kb_copy)


def test_unknown_cultural_kind_and_province_are_rejected(kb_copy: Path) -> None:
    path = kb_copy / "west_java.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("  dances:", "  dance:", 1), "utf-8")
    with pytest.raises(KnowledgeBaseError, match=r"west_java\.yaml: key 'cultural_items'.*dance"):
        load_knowledge_base(kb_copy)
    path.write_text(text.replace("name: West Java", "name: Banten", 1), "utf-8")
    with pytest.raises(KnowledgeBaseError, match=r"west_java\.yaml: key 'name': 'Banten'"):
        load_knowledge_base(kb_copy)


def test_missing_province_file_is_reported(kb_copy: Path) -> None:
    (kb_copy / "east_java.yaml").unlink()
    with pytest.raises(KnowledgeBaseError, match=r"no file for provinces \['East Java'\]"):
        load_knowledge_base(kb_copy)
