"""``make repro`` ends with its results table: every cell, numbers recomputed independently."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from cultureqa.cli import main
from cultureqa.runs.headline import ACCURACY, headline, read_params

ROOT = Path(__file__).resolve().parents[1]


def _root(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    rng = np.random.default_rng(7)
    items = [f"i{k}" for k in range(30)]
    grid = pd.MultiIndex.from_product([items, ["a", "b", "c"]], names=["item_id", "setting"])
    grid = grid.to_frame(index=False)
    grid["correct"] = rng.random(len(grid)) < 0.4
    out = tmp_path / "data/eval/indoculture/model/predictions.parquet"
    out.parent.mkdir(parents=True)
    grid.to_parquet(out)
    return tmp_path


def test_the_table_has_every_cell_and_the_numbers_of_the_items(tmp_path: Path) -> None:
    root = _root(tmp_path)
    frame = headline(root, read_params(root))
    shown = frame.set_index(["benchmark", "prompt", "slot"])
    assert ("mocqa", "cot", "baselines.random") in shown.index  # every slot, every prompt
    assert ("cases", "own", "model") in shown.index
    mine = shown.loc[("indoculture", "zero_shot", "model")]
    rows = pd.read_parquet(root / "data/eval/indoculture/model/predictions.parquet")
    per_item = rows.groupby("item_id")["correct"].mean().to_numpy(float)
    low, high = stats.t.interval(0.95, len(per_item) - 1, per_item.mean(), stats.sem(per_item))
    assert mine["accuracy"] == pytest.approx(per_item.mean())
    assert (mine["ci_low"], mine["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert mine[ACCURACY] == f"{per_item.mean():.3f} ± {(high - low) / 2:.3f}"
    assert mine["n items"] == 30 and mine["model"] == "gemma3-270m"
    missing = shown.drop(index=("indoculture", "zero_shot", "model"))
    assert set(missing[ACCURACY]) == {"n/a"}  # never a number from elsewhere


def test_cli_prints_the_table_last(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _root(tmp_path)
    assert main(["--root", str(root), "headline"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("|")[1:6] == [" benchmark   ", " prompt    ", " slot                   ",
                                        " model        ", " accuracy ± 95% CI "]  # fmt: skip
    assert "| indoculture | zero_shot | model " in lines[2] and lines[2].endswith("| 30      |")
    assert lines[-1].startswith("accuracy over each slot's rows")
    (root / "params.yaml").unlink()
    assert main(["--root", str(root), "headline"]) == 2
