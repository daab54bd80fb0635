"""Table 9 shrinkage: the seed's definition, checked against its printed rows, and its guard.

The seed prints ORs to two decimals and the shrinkage from unrounded ORs, so a printed row is
consistent with a definition when some pair of ORs within ±0.005 of the printed ones gives the
printed percentage. All five of the seed's rows are fixtures (printed in the seed text, quoted in
issue 42): W 1.86 → 2.56, −80.7 %; E 1.28 → 1.04, 87.1 %; I 1.21 → 1.08, 63.1 %; R 1.27 → 1.17,
37.6 %; D 1.34 → 1.17, 50.3 %. Each withheld row names its own reason, and a dimension that
continent determines (W on the shipped case bank) says so from a real fit.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cultureqa.cases.analysis import (
    COVERS_ONE,
    DETERMINED,
    FE_FIT_FAILED,
    NEAR_ONE,
    RAW_FIT_FAILED,
    SHRINKAGE_TOLERANCE,
    WITHHELD,
    odds_ratio_shrinkage,
    shrinkage_pct,
    withheld_summary,
)
from cultureqa.cases.trends import logit_rows

SEED_ROWS = [
    ("W", 1.86, 2.56, -80.7),
    ("E", 1.28, 1.04, 87.1),
    ("I", 1.21, 1.08, 63.1),
    ("R", 1.27, 1.17, 37.6),
    ("D", 1.34, 1.17, 50.3),
]
"""(dimension, printed OR without FE, printed OR with continent FE, printed shrinkage %)."""


def _attainable(definition, raw: float, fe: float) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Range of ``definition`` over ORs that round to the printed ones (a fine grid)."""
    grid = np.linspace(-0.005, 0.005, 41)
    values = definition(raw + grid[:, None], fe + grid[None, :])
    return float(values.min()), float(values.max())


def _log_scale(raw, fe):  # type: ignore[no-untyped-def]
    return 100 * (1 - np.log(fe) / np.log(raw))


@pytest.mark.parametrize(("dimension", "raw", "fe", "printed"), SEED_ROWS)
def test_the_seed_rows_fit_the_seed_definition_and_not_the_log_scale(
    dimension: str, raw: float, fe: float, printed: float
) -> None:
    low, high = _attainable(shrinkage_pct, raw, fe)
    assert low - 0.05 <= printed <= high + 0.05, (dimension, low, high)
    log_low, log_high = _attainable(_log_scale, raw, fe)
    assert not log_low - 0.05 <= printed <= log_high + 0.05  # the old formula misses the row


def test_shrinkage_point_values_from_the_printed_ors() -> None:
    assert float(shrinkage_pct(1.86, 2.56)) == pytest.approx(-81.395, abs=1e-3)
    assert float(shrinkage_pct(1.28, 1.04)) == pytest.approx(85.714, abs=1e-3)
    assert float(shrinkage_pct(2.0, 1.0)) == 100.0 and float(shrinkage_pct(2.0, 2.0)) == 0.0


def _logits(rows: list[tuple[str, float, float, float, float]], note: str = "") -> pd.DataFrame:
    """(dimension, OR none, CI low none, CI high none, OR continent) as ``dimension_logits``."""
    out = []
    for dim, raw, low, high, fe in rows:
        base = {"model": "all models", "dimension": dim, "error_type": "C", "n": 400}
        out.append({**base, "fixed_effects": "none", "odds_ratio": raw, "ci_low": low,
                    "ci_high": high, "note": ""})  # fmt: skip
        out.append({**base, "fixed_effects": "continent", "odds_ratio": fe, "ci_low": fe * 0.8,
                    "ci_high": fe * 1.2, "note": note if math.isnan(fe) else ""})  # fmt: skip
    return pd.DataFrame(out)


@pytest.mark.parametrize(("dimension", "raw", "fe", "printed"), SEED_ROWS)
def test_each_seed_row_is_printed_as_the_seed_prints_it(
    dimension: str, raw: float, fe: float, printed: float
) -> None:
    """Each seed row as fitted ORs (CI excluding 1) prints a number within the rounding."""
    low = 1 + (raw - 1) / 2  # a CI that excludes 1
    table = odds_ratio_shrinkage(_logits([(dimension, raw, low, raw * 1.5, fe)]))
    row = table.iloc[0]
    assert row["shrinkage_withheld"] == ""
    assert abs(row["shrinkage_pct"] - printed) < 1.5  # the ORs are rounded to two decimals
    assert row["shrinkage"] == f"{row['shrinkage_pct']:.1f} %"


def test_each_withheld_row_names_its_own_reason() -> None:
    table = odds_ratio_shrinkage(
        _logits(
            [
                ("W", 1.86, 1.40, 2.47, 2.56),  # an effect: a number
                ("E", 1.0 + SHRINKAGE_TOLERANCE / 2, 1.01, 1.04, 1.6),  # near 1 (CI excludes 1)
                ("I", 1.30, 0.90, 1.88, 1.05),  # CI covers 1
                ("R", math.nan, math.nan, math.nan, 1.2),  # the raw fit failed
                ("D", 12.0, 1.23, 117.0, math.nan),  # issue 42: a strong raw OR, the FE fit failed
            ],
            note="perfect separation: PerfectSeparationWarning",
        )
    ).set_index("dimension")
    assert table.loc["W", "shrinkage"] == "-81.4 %" and table.loc["W", "shrinkage_withheld"] == ""
    assert table.loc["W", "shrinkage_pct"] == pytest.approx(-81.395, abs=1e-3)
    expected = {"E": NEAR_ONE, "I": COVERS_ONE, "R": RAW_FIT_FAILED, "D": FE_FIT_FAILED}
    for dim, why in expected.items():
        assert table.loc[dim, "shrinkage_withheld"] == why, dim
        assert table.loc[dim, "shrinkage"] == f"n/a ({why})"
        assert math.isnan(table.loc[dim, "shrinkage_pct"])
    assert "raw OR ≈ 1" not in table.loc["D", "shrinkage"]  # the old single label
    assert "separation" in table.loc["D", "note_continent"]
    lines = withheld_summary(table.reset_index())
    assert lines[0] == "4 of 5 rows withheld."
    assert any(line.startswith(f"n/a ({FE_FIT_FAILED}): 1 rows (dimensions D)") for line in lines)
    assert set(WITHHELD) == {NEAR_ONE, COVERS_ONE, RAW_FIT_FAILED, FE_FIT_FAILED, DETERMINED}


def test_a_dimension_that_continent_determines_says_so_from_a_real_fit() -> None:
    """W constant within each continent (as on the shipped case bank): the fit with continent
    cannot be made, and the row says why instead of "raw OR ≈ 1"."""
    rng = np.random.default_rng(4)
    continent = rng.choice(["Africa", "Asia", "Europe", "Oceania"], 600)
    western = np.isin(continent, ["Europe", "Oceania"]).astype(float)
    error_type = np.where(rng.random(600) < 0.2 + 0.3 * western, "C", "A")
    errors = pd.DataFrame({"model": "all models", "W": western, "continent": continent,
                           "pred_type": error_type})  # fmt: skip
    logits = pd.DataFrame(logit_rows(errors, "model", ["W"]))
    row = odds_ratio_shrinkage(logits).set_index("error_type").loc["C"]
    assert row["odds_ratio_none"] > 1.5 and row["ci_low_none"] > 1  # a real raw effect
    assert row["shrinkage_withheld"] == DETERMINED
    assert row["shrinkage"] == f"n/a ({DETERMINED})"
    assert "collinear" in row["note_continent"]
    lines = withheld_summary(odds_ratio_shrinkage(logits))
    assert any(f"n/a ({DETERMINED})" in line and "whatever the model" in line for line in lines)
