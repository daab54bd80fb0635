"""The national province table: complete, sourced, consistent with the province files."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from cultureqa.knowledge.national import default_national_path, load_national
from cultureqa.knowledge.provinces import KnowledgeBaseError, load_knowledge_base


def _rows() -> list[dict[str, str]]:
    with default_national_path().open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_all_38_provinces_are_listed_and_34_form_the_2020_map() -> None:
    rows = _rows()
    assert len(rows) == 38 and len({r["province"] for r in rows}) == 38
    assert len(load_national()) == 34
    later = [r for r in rows if r["map"] == "2022"]
    assert len(later) == 4 and all("no 2020 figures" in r["notes"] for r in later)


def test_census_and_count_totals_match_the_published_national_figures() -> None:
    national = load_national()
    population = sum(p.statistics["population"].value for p in national)
    assert population == 270_203_917  # SP2020 total, BPS January 2021
    regencies = sum(p.statistics["regencies_count"].value for p in national)
    cities = sum(p.statistics["cities_count"].value for p in national)
    assert (regencies, cities) == (416, 98)  # Jakarta's administrative units included
    autonomous = [
        sum(p.statistics[f"autonomous_{n}"].value for p in national)
        for n in ("regencies_count", "cities_count")
    ]
    assert autonomous == [415, 93]  # Law 29/2007: Jakarta's regency and five cities are not
    jakarta = national["Jakarta"].statistics
    assert (
        jakarta["autonomous_regencies_count"].value,
        jakarta["autonomous_cities_count"].value,
    ) == (0, 0)


def test_every_empty_cell_is_explained_and_never_guessed() -> None:
    for row in _rows():
        if row["map"] == "2020" and not row["area_km2"]:
            assert "area left out" in row["notes"], row["province"]


def test_land_borders_are_symmetric() -> None:
    national = load_national()
    for province in national:
        for other in province.neighbours:
            assert province.name in national[other].neighbours, (province.name, other)


def test_benchmark_province_files_agree_with_the_national_table() -> None:
    national = load_national()
    for province in load_knowledge_base():
        row = national[province.name]
        for name in ("population", "area_km2", "regencies_count", "cities_count"):
            assert row.statistics[name].value == province.statistics[name].value, name
        assert row.statistics["population"].year == 2020


def test_a_malformed_figure_names_file_row_and_column(tmp_path: Path) -> None:
    folder = tmp_path / "national"
    shutil.copytree(default_national_path().parent, folder)
    path = folder / "provinces.csv"
    path.write_text(path.read_text().replace("5274871", "5.27 million", 1), encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match=r"provinces.csv, row 2, column 'population_2020'"):
        load_national(path)
