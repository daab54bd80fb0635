"""`cultureqa compare`: experiments from `dvc exp show --json`, item-level intervals, paired Δ."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from cultureqa.compare import (
    Experiment,
    as_frame,
    compare,
    difference,
    estimate,
    experiments,
    render,
)

PARAMS = {
    "model": {"id": "m1"},
    "prompt": {"style": "zero_shot"},
    "evaluate": {"benchmarks": ["indoculture"]},
    "cases": {"roster": ["model"]},
}


def test_rows_come_from_exp_show_json() -> None:
    show = [
        {"rev": "workspace", "name": None, "data": {"params": {"params.yaml": {"data": PARAMS}}}},
        {"rev": "a" * 40, "name": "main", "data": {}, "experiments": [
            {"name": "sunny-cat", "revs": [{"rev": "b" * 40, "name": "sunny-cat", "data": {}}]},
        ]},
    ]  # fmt: skip
    rows = experiments(show)
    assert [(r.name, r.rev) for r in rows] == [
        ("workspace", None),
        ("main", "a" * 40),
        ("sunny-cat", "b" * 40),
    ]
    assert rows[0].params["model"]["id"] == "m1"


def test_paired_interval_is_the_t_interval_of_the_item_differences() -> None:
    rng = np.random.default_rng(3)
    items = [f"i{k}" for k in range(40)]
    old = pd.Series(rng.integers(0, 2, 40).astype(float), index=items)
    new = pd.Series(np.clip(old + rng.integers(0, 2, 40), 0, 1), index=items)
    got = difference(new, old)
    d = (new - old).to_numpy()
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    assert (got.value, got.low, got.high) == pytest.approx((d.mean(), d.mean() - half,
                                                            d.mean() + half))  # fmt: skip
    assert got.note == "paired, n=40"
    # the same items with other ids cannot be paired: Welch over both sets, marked
    other = difference(new.set_axis([f"j{k}" for k in range(40)]), old)
    assert other.note.startswith("unpaired") and other.text(signed=True).endswith("†")
    assert other.high - other.low > got.high - got.low


def test_one_item_has_no_interval() -> None:
    one = estimate(pd.Series([1.0], index=["i0"]))
    assert one.value == 1.0 and np.isnan(one.low) and one.text() == "1.000 (n=1)"


def _write(root: Path, slot: str, correct: list[bool]) -> None:
    frame = pd.DataFrame({
        "item_id": [f"q{k // 2}" for k in range(len(correct))],  # two settings per item
        "setting": ["a", "b"] * (len(correct) // 2), "correct": correct,
    })  # fmt: skip
    path = root / "data" / "eval" / "indoculture" / slot / "predictions.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path)


def test_table_from_workspace_predictions(tmp_path: Path) -> None:
    _write(tmp_path, "model", [True, False, True, True, False, False, True, True])
    rows = [Experiment("workspace", None, PARAMS)]
    result = compare(tmp_path, rows, baseline="workspace")
    row = result.rows[0]
    assert row["indoculture"].value == pytest.approx(5 / 8) and row["indoculture"].n == 4
    assert row["indoculture Δ"] == "(baseline)" and row["cases"] == "n/a"  # cases not run
    numbers = as_frame(result, text=False)
    assert numbers.loc[0, "indoculture n"] == 4 and numbers.loc[0, "cases"] == "n/a"
    table = render(result)
    assert "| workspace " in table and "0.625 ± " in table
    assert max(map(len, table.splitlines()[:3])) <= 160


def test_an_unknown_baseline_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not an experiment here"):
        compare(tmp_path, [Experiment("workspace", None, PARAMS)], baseline="nope")
