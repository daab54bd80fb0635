"""Small files: uniformity allows the closest split whole counts can reach, and no more."""

from __future__ import annotations

import pandas as pd
import pytest

from cultureqa.validation.expectations import rounding_floor
from cultureqa.validation.mcq_expectations import gold_balance


@pytest.mark.parametrize(
    ("expected", "floor"),
    [([5 / 3] * 3, 2 / 15), ([2.0] * 3, 0.0), ([1 / 3] * 3, 2 / 3), ([2.5, 2.5], 0.1)],
)
def test_rounding_floor_is_the_best_whole_count_split(expected: list[float], floor: float) -> None:
    assert rounding_floor(expected) == pytest.approx(floor)


def _golds(letters: str) -> pd.DataFrame:
    return pd.DataFrame({"answer": list(letters), "n_options": [3] * len(letters)})


def test_five_items_pass_at_the_best_split_and_fail_beyond_it() -> None:
    best = gold_balance(_golds("AABBC"), tolerance=0.1)
    assert best["success"] and best["rounding_floor"] == pytest.approx(0.1333, abs=1e-4)
    skewed = gold_balance(_golds("AAABC"), tolerance=0.1)
    assert not skewed["success"] and skewed["max_deviation"] == pytest.approx(0.2667, abs=1e-4)


def test_the_floor_vanishes_on_large_files() -> None:
    result = gold_balance(_golds("A" * 400 + "B" * 300 + "C" * 300), tolerance=0.05)
    assert not result["success"] and result["rounding_floor"] < 0.001
