"""Tests for cultureqa.cases.weird: the coding rules (scores, quantile classes, bin bounds).

The levels computed from the publishers' files are tested in ``test_country_levels.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cultureqa.cases.weird import (
    bin_bounds,
    quantile_class,
    un_members,
    weird_for,
    weird_score_sixths,
)


def test_score_is_exact_in_sixths() -> None:
    assert weird_score_sixths(1, 2, 3, 3, 2) == 30
    assert weird_score_sixths(0, 0, 1, 2, 0) == 6  # 1/3 + 2/3 is exactly one point
    assert weird_score_sixths(0, 0, 0, 0, 0) == 0


def test_value_on_a_cut_falls_in_the_lower_class_like_qcut() -> None:
    values = pd.Series([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    cuts = tuple(float(q) for q in np.quantile(values, [1 / 3, 2 / 3]))
    ours = quantile_class(values, cuts)
    assert quantile_class(pd.Series([cuts[0]]), cuts).iloc[0] == 0
    qcut = pd.qcut(values, 3, labels=False)
    assert ours.astype(int).tolist() == qcut.astype(int).tolist()


def test_ties_share_a_class() -> None:
    values = pd.Series([1.0, 2.0, 2.0, 2.0, 2.0, 3.0])
    classes = quantile_class(values, (2.0, 2.0))
    assert classes.tolist() == [0, 0, 0, 0, 0, 2]


def test_weird_for_resolves_names_and_fails_loudly() -> None:
    annotation = pd.DataFrame({"iso3": ["USA", "CHN", "BRA"], "weird_bin": [5, 1, 2]})
    rows = weird_for(["United States of America", "China"], annotation)
    assert rows["iso3"].tolist() == ["USA", "CHN"]
    with pytest.raises(KeyError, match="Japan"):
        weird_for(["Japan"], annotation)


def test_bin_bounds_range_over_the_unknown_levels() -> None:
    known = {"W": 0, "E": 1, "I": 0, "R": 0, "D": 0}
    assert bin_bounds(known) == ""
    assert bin_bounds(known | {"E": None}) == "0–1"  # E/2 ≤ 1
    assert bin_bounds({"W": 1, "E": None, "I": 3, "R": 3, "D": 2}) == "4–5"


def test_there_are_193_un_members() -> None:
    members = un_members()
    assert len(members) == 193 and len(set(members)) == 193
    assert {"TWN", "XKX", "PSE", "HKG", "VAT"}.isdisjoint(members)
    assert {"MCO", "PRK", "SSD", "TLS"} <= set(members)
