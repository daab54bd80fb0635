"""The reviewer export (docs/twohop-engine.md §6): stratified, seeded, every fact and term shown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

from cultureqa.regions.config import RegionSet
from cultureqa.regions.judges.checks import CheckConfig
from cultureqa.regions.pipeline import run_build
from cultureqa.regions.review import sample_rows
from tests.regions.invented import plant_every_kind, with_named_facts, write_invented

ROOT = Path(__file__).resolve().parents[2]


def _dataset(root: Path) -> Path:
    raw = with_named_facts(root, write_invented(root))
    plant_every_kind(root)
    data = run_build(RegionSet.from_params(raw, root), root, 13, CheckConfig()).dataset
    path = root / "dataset.parquet"
    data.to_parquet(path)
    return path


def test_the_sample_is_stratified_by_clue_type_and_seeded(tmp_path: Path) -> None:
    data = pd.read_parquet(_dataset(tmp_path))
    sample = sample_rows(data, 10, 41)
    counts = sample["clue_type"].value_counts()
    assert counts.max() - counts.min() <= 1 and set(counts.index) == set(data["clue_type"])
    assert sample_rows(data, 10, 41).equals(sample)
    assert not sample_rows(data, 10, 42)["item_id"].equals(sample["item_id"])
    assert len(sample_rows(data, 500, 41)) == len(data)


def test_each_item_shows_its_facts_sources_years_and_scrubbed_terms(tmp_path: Path) -> None:
    path = _dataset(tmp_path)
    out = tmp_path / "review"
    done = subprocess.run(
        [sys.executable, "-m", "cultureqa.regions.review", str(path), "--n", "30", "--seed", "7",
         "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    sample = pd.read_csv(out.with_suffix(".csv"), keep_default_na=False)
    entity = sample[sample["clue_type"] == "entity"].iloc[0]
    assert "curated:invented" in entity["facts"] and "data/facts.csv row" in entity["facts"]
    assert "year 2020" in entity["facts"]
    comparison = sample[sample["clue_type"] == "comparison"].iloc[0]
    assert "low " in comparison["facts"] and "high " in comparison["facts"]
    vel = sample[(sample["region"] == "VEL") & (sample["language"] == "en")].iloc[0]
    assert (
        "Tharn → local people (people, und, curated:invented ethnography 2" in vel["terms_scrubbed"]
    )
    page = out.with_suffix(".md").read_text(encoding="utf-8")
    assert "seed 7" in page and page.count("**Reading:**") == len(sample)


def test_a_file_that_is_not_a_two_hop_dataset_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "cultureqa.regions.review", str(bad), "--seed", "1",
         "--out", str(tmp_path / "r")],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "bad.csv" in done.stderr and "not a two-hop dataset" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r.csv").exists()
