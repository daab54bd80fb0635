"""The Indonesian region set's tables are the province knowledge base in the engine's shape.

``python -m cultureqa.knowledge.province_tables build`` writes them; the committed copy must be
exactly what the builder writes today, every named fact must be a committed national claim (read
again here with plain ``csv``), and a malformed knowledge file stops the build with file and row
before anything is written.
"""

from __future__ import annotations

import csv
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from cultureqa.knowledge.national_clues import SPLIT_2022
from cultureqa.knowledge.province_tables import DEFAULT_OUT, Sources, build, main
from cultureqa.knowledge.provinces import KnowledgeBaseError

ROOT = Path(__file__).resolve().parents[2]
TABLES = ROOT / DEFAULT_OUT
NATIONAL = ROOT / "data/knowledge/national"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_the_committed_tables_are_what_the_builder_writes(tmp_path: Path) -> None:
    written = build(tmp_path)
    assert sorted(written) == sorted(p.name for p in TABLES.glob("*.csv"))
    for name, path in written.items():
        assert path.read_bytes() == (TABLES / name).read_bytes(), name


def test_every_named_fact_is_a_committed_national_claim() -> None:
    claims = _rows(NATIONAL / "clue_facts.csv")
    facts = [r for r in _rows(TABLES / "facts.csv") if r["fact_key"]]
    by_row = defaultdict(set)
    for fact in facts:
        by_row[int(fact["clue_facts_row"])].add(fact["province"])
        claim = claims[int(fact["clue_facts_row"]) - 2]
        assert claim["fact_key"] == fact["fact_key"]
        assert (fact["source"], fact["year"]) == (claim["source"], claim["year"])
        assert fact["fact_key"].endswith(fact["value"]) or fact["fact"] == "event"
    omitted = {int(r["clue_facts_row"]) for r in _rows(TABLES / "omitted.csv")}
    for row, claim in enumerate(claims, start=2):
        members = {p for p in claim["provinces"].split(";") if p}
        if not members:  # an unknown set is no fact: left out, with the claim's own note
            assert row in omitted and row not in by_row
            continue
        assert by_row[row] == {SPLIT_2022.get(p, p) for p in members}, claim["fact_key"]


def test_the_regions_and_leak_tables_hold_every_name() -> None:
    national = _rows(NATIONAL / "provinces.csv")
    regions = _rows(TABLES / "regions.csv")
    assert [r["province"] for r in regions] == [
        r["province"] for m in ("2020", "2022") for r in national if r["map"] == m
    ]
    assert sum(r["map"] == "2020" for r in regions) == 34
    terms = {(r["province"], r["term"]) for r in _rows(TABLES / "leak_terms.csv")}
    for row in national:
        assert {(row["province"], row["province"]), (row["province"], row["name_id"])} <= terms
    assert ("Central Java", "Javanese") in terms and ("East Java", "Javanese") in terms
    assert ("West Sumatra", "Minangkabau") in terms and ("South Sulawesi", "Gowa") in terms
    assert ("East Nusa Tenggara", "orang Sumba") in terms  # a bare name only in its phrases
    assert ("East Nusa Tenggara", "Sumba") not in terms


def _copy(tmp_path: Path) -> Sources:
    shutil.copytree(ROOT / "data/knowledge", tmp_path / "knowledge")
    kb = tmp_path / "knowledge" / "provinces"
    national = tmp_path / "knowledge" / "national"
    return Sources(kb, national / "provinces.csv", national / "clue_facts.csv",
                   kb.parent / "clue_templates.yaml")  # fmt: skip


def test_a_planted_unknown_province_stops_the_build_before_writing(tmp_path: Path) -> None:
    src = _copy(tmp_path)
    lines = src.clue_facts.read_text(encoding="utf-8").splitlines()
    lines[5] = lines[5].replace(",Aceh,", ",Atlantis,", 1)
    src.clue_facts.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    with pytest.raises(KnowledgeBaseError, match=r"clue_facts\.csv, row 6, column 'provinces'"):
        build(out, src)
    assert not out.exists()


def test_the_command_names_the_bad_file_in_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    src = _copy(tmp_path)
    src.national.write_text(
        src.national.read_text(encoding="utf-8").replace("5274871", "five million"),
        encoding="utf-8",
    )
    monkeypatch.setattr(Sources, "default", classmethod(lambda cls: src))
    assert main(["build", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "provinces.csv, row 2, column 'population_2020'" in err[0]
    assert not (tmp_path / "out").exists()
