"""Indonesia's provinces through the engine (docs/twohop-engine.md §8 step 3).

The set composed from ``conf/region_set/indonesia.yaml`` loads its 38 provinces with a universe
of the 34 of 2020 in both languages, and the engine builds its clues from
``data/knowledge/provinces_tables/``. Every clue is decided again here from the raw CSV files
with plain ``csv``; every benchmark province gets a clue of every declared type unless the set
names the gap and the engine counted its refusals; a fact row naming no province fails with
file, row and column.
"""

from __future__ import annotations

import csv
import re
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from cultureqa.core.io import SourceError
from cultureqa.knowledge.provinces import CANONICAL_PROVINCES
from cultureqa.regions.config import RegionSet
from cultureqa.regions.generation.clues import ClueBook, Clues
from cultureqa.regions.generation.tables import Knowledge, load_knowledge
from cultureqa.regions.scrub import leaks
from cultureqa.testing.composed import composed

ROOT = Path(__file__).resolve().parents[2]
TABLES = ROOT / "data/knowledge/provinces_tables"


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    return dict(composed(ROOT / "conf")["region_sets"]["indonesia"])


@pytest.fixture(scope="module")
def built(raw: dict[str, Any]) -> tuple[RegionSet, Knowledge, ClueBook]:
    rs = RegionSet.from_params(raw, ROOT)
    kb = load_knowledge(rs, ROOT, "en")
    return rs, kb, Clues(rs, kb).build(kb.universe)


def _rows(name: str) -> list[dict[str, str]]:
    with (TABLES / name).open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_the_set_loads_38_provinces_and_claims_over_the_34_of_2020(raw) -> None:
    rs = RegionSet.from_params(raw, ROOT)
    for language, name in (("en", "this province"), ("id", "provinsi ini")):
        kb = load_knowledge(rs, ROOT, language)
        assert len(kb.regions) == 38 and len(kb.universe) == 34
        assert "Highland Papua" in kb.regions and "Highland Papua" not in kb.universe
        papua = {t.text: t for t in kb.regions["Papua"].terms}
        assert papua["Papua"].replacement == name
        assert kb.name("West Java", language) == {"en": "West Java", "id": "Jawa Barat"}[language]


def _holds(cond: dict[str, Any], rid: str) -> bool | None:
    """One condition for one province, from the CSV files alone (None: no figure)."""
    if cond["kind"] == "category":
        return any(
            r["province"] == rid and r["fact"] == cond["category"] and r["value"] == cond["value"]
            for r in FACTS
        )
    column = INDICATORS[cond["indicator"]]
    figure = {r["province"]: r[column] for r in FIGURES}
    if not figure.get(rid):
        return None
    value = float(figure[rid])
    if cond["kind"] == "range":
        return (cond["low"] is None or value > cond["low"]) and (
            cond["high"] is None or value < cond["high"]
        )
    low, high = cond["low_region"], cond["high_region"]
    if any(r is not None and not figure.get(r) for r in (low, high)):
        return None
    return (low is None or float(figure[low]) < value) and (
        high is None or value < float(figure[high])
    )


FACTS = _rows("facts.csv")
FIGURES = _rows("indicators.csv")
INDICATORS = {"population": "population_2020", "area": "area_km2", "density": "density_2020"}


def test_every_clue_holds_for_its_province_alone_by_an_independent_reading(built) -> None:
    rs, _, book = built
    universe = [r["province"] for r in _rows("regions.csv") if r["map"] == "2020"]
    lines = (TABLES / "facts.csv").read_text(encoding="utf-8").splitlines()
    seen = 0
    for (target, clue_type), clues in book.clues.items():
        for clue in clues:
            seen += 1
            verdicts = {rid: [_holds(dict(c), rid) for c in clue.conditions] for rid in universe}
            holders = [rid for rid, v in verdicts.items() if all(x is True for x in v)]
            assert holders == [target], (clue_type, clue.text["en"])
            undecided = {rid for rid, v in verdicts.items() if None in v and False not in v}
            assert undecided <= set(clue.evidence.get("no_figure", [])), clue.text["en"]
            for cell in clue.evidence["cells"]:
                if "category" in cell:  # a named fact: its row, source and year
                    held = cell["target"]
                    assert held["source"] and re.fullmatch(r"\d{4}", held["year"])
                    assert lines[held["row"] - 1].startswith(f"{target},{cell['category']},")
            for language in rs.languages:
                assert clue.text[language] and "{" not in clue.text[language]
            assert clue.text["id"].startswith("provinsi ") and " the " not in clue.text["id"]
    assert seen > 400


def test_every_benchmark_province_gets_every_clue_type_or_the_set_says_why(raw, built) -> None:
    rs, _, book = built
    declared = {(p, t) for t, provinces in raw["known_gaps"].items() for p in provinces}
    missing = {(p, t) for p in CANONICAL_PROVINCES for t in rs.clue_types if not book.get(p, t)}
    assert missing == declared
    refused: dict[tuple[str, str], int] = defaultdict(int)
    for (target, clue_type, _), n in book.refused.items():
        refused[(target, clue_type)] += n
    for gap in missing:  # never silent: every candidate the engine tried is counted with a reason
        assert refused[gap] > 0, gap
    assert all(str(r).strip() for t in raw["known_gaps"].values() for r in t.values())


def test_a_planted_fact_about_no_province_names_file_row_and_column(raw, tmp_path: Path) -> None:
    shutil.copytree(TABLES, tmp_path / "data/knowledge/provinces_tables")
    facts = tmp_path / "data/knowledge/provinces_tables/facts.csv"
    lines = facts.read_text(encoding="utf-8").splitlines()
    lines.insert(7, lines[7].replace("Aceh,", "Atlantis,", 1))
    facts.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rs = RegionSet.from_params(raw, tmp_path)
    with pytest.raises(SourceError, match=r"facts\.csv, row 8, column 'province': 'Atlantis'"):
        load_knowledge(rs, tmp_path, "en")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("A wedding feast in Padang lasts three days.", ["in Padang (place_phrase)"]),
        ("Nasi Padang is served on many small plates.", ["Nasi Padang (place_phrase)"]),
        ("Kerbau merumput di padang rumput yang luas.", []),  # the word "padang", a field
        ("The buffalo graze on a wide padang near the river.", []),
    ],
)
def test_a_place_name_that_is_also_a_word_leaks_only_as_the_place(raw, text, found) -> None:
    """Padang (West Sumatra's capital, also "field") is a leak term only in its place phrases."""
    rs = RegionSet.from_params(raw, ROOT)
    kb = load_knowledge(rs, ROOT, "en")
    region = kb.regions["West Sumatra"]
    assert "Padang" not in {t.text for t in region.terms}
    assert leaks([text], region, language="id" if text.startswith("Kerbau") else "en") == found


@pytest.mark.parametrize(
    ("province", "text", "found"),
    [
        ("North Sumatra", "tari melingkar suku Nias", ["Suku Nias (place_phrase)"]),
        ("North Sumatra", "rumah adat Karo bagi delapan keluarga", ["Adat Karo (place_phrase)"]),
        ("East Java", "upacara suku Tengger di kawah", ["suku Tengger (people_phrase)"]),
        ("West Java", "masyarakat adat Sunda menggelar upacara", ["adat Sunda (people_phrase)"]),
        ("East Nusa Tenggara", "suling bambu ganda suku Ngada", ["Suku Ngada (place_phrase)"]),
        ("West Java", "the Sunda Strait", []),  # the bare name alone: a strait, not the people
    ],
)
def test_a_people_or_place_phrase_leaks_with_its_head_in_either_case(
    raw, province, text, found
) -> None:
    """The ID-MoCQA gazetteer reads "suku Nias" and "adat Sunda" as the province's own terms.

    The leak table writes a people's bare name after every people and cultural head noun, and a
    phrase's first letter matches in either case, so a head mid-sentence is found.
    """
    rs = RegionSet.from_params(raw, ROOT)
    region = load_knowledge(rs, ROOT, "id").regions[province]
    assert leaks([text], region, language="id") == found
