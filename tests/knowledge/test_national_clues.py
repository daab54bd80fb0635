"""National claims of clue facts (issue 22): every clue unique in all of Indonesia, or refused."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from cultureqa.knowledge.national import default_national_path, load_national
from cultureqa.knowledge.national_clues import (
    SHARED,
    UNKNOWN,
    default_clue_facts_path,
    load_clue_facts,
)
from cultureqa.knowledge.provinces import KnowledgeBaseError

ROOT = Path(__file__).resolve().parents[2]


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


def test_the_filled_areas_and_the_jakarta_rule() -> None:
    national = load_national()
    areas = {p.name: p.statistics.get("area_km2") for p in national}
    for name in ("Southeast Sulawesi", "Gorontalo", "West Sulawesi", "Maluku", "North Maluku"):
        assert areas[name] is not None, name
    assert areas["North Sulawesi"] is None and areas["West Papua"] is None  # two values in print
    jakarta = national["Jakarta"].statistics
    # Jakarta's administrative regency and five administrative cities count, as BPS counts them
    assert (jakarta["regencies_count"].value, jakarta["cities_count"].value) == (1, 5)
