"""Cochran–Armitage trend families and pooled odds ratios of the cross-cultural analysis.

One routine, :func:`trend_table`, computes trends of accuracy and of each error-type share over
the ordered levels of a variable (WEIRD bin 0–5, or one dimension's levels) for every *unit* of a
frame: a model, the models pooled, a domain, a topic category or a dimension. The units of one
call form one table; BH-FDR runs within each family (table × scope × ``fdr_by`` columns), so a
test is never adjusted against tests of another question.

Pooling over models stacks every model's answers: a case counts once per model. The answers of
different models to the same case are not independent, so pooled p-values are optimistic as
tests of "cases"; they are the paper's pooled statistic (models as replicates), reported as such.

**Small cells.** Every test carries its expected counts under the null (n_i·p̄ and n_i·(1 − p̄)
over the non-empty levels) and ``sparse`` = Cochran's rule fails (an expected count below 1, or
more than 20% of the cells below 5): the normal approximation of the statistic is then rough, and
the report marks the row.

**Chance baselines are references, not hypotheses.** A random or fixed-position chooser does not
read the question, so "its accuracy does not depend on the WEIRD bin" is true by construction and
any rejection is a type-I error. Rows of a baseline (or of a pool that contains one) keep their z
and p as a calibration reference but enter no BH family and are never marked significant
(``chance`` = True, ``q_value`` NaN, ``reject`` False).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from cultureqa.analysis import stats

ERROR_TYPES: tuple[str, ...] = ("A", "B", "C", "D", "E")
COCHRAN_MIN_EXPECTED = 1.0
COCHRAN_SMALL = 5.0
COCHRAN_MAX_SMALL_SHARE = 0.2
"""Cochran's (1954) rule: every expected count at least 1, and at most 20% of them below 5."""
BINS: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
LEVELS: dict[str, tuple[int, ...]] = {
    "weird_bin": BINS, "W": (0, 1), "E": (0, 1, 2), "I": (0, 1, 2, 3), "R": (0, 1, 2, 3),
    "D": (0, 1, 2),
}  # fmt: skip
"""Ordered levels (and CA scores w = level) of each variable a trend runs over."""


def _level_counts(frame: pd.DataFrame, unit: str, level: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(unit × level: n, correct, errors; unit × level × type: error counts), zero-filled."""
    rows = frame.dropna(subset=[level])
    rows = rows.assign(_lv=pd.to_numeric(rows[level]).astype("int64"))
    units = sorted(rows[unit].astype(str).unique())
    index = pd.MultiIndex.from_product([units, LEVELS[level]], names=[unit, "_lv"])
    keys = [rows[unit].astype(str), rows["_lv"]]
    totals = rows.groupby(keys).agg(
        n=("correct", "size"), correct=("correct", "sum"), errors=("is_error", "sum")
    )
    errors = rows[rows["is_error"]]
    typed = errors.groupby([errors[unit].astype(str), errors["_lv"], errors["pred_type"]]).size()
    by_type = typed.unstack(fill_value=0).reindex(columns=list(ERROR_TYPES), fill_value=0)
    return totals.reindex(index, fill_value=0), by_type.reindex(index, fill_value=0)


def expected_count_flags(x: np.ndarray, n: np.ndarray) -> dict[str, Any]:
    """Expected counts of the 2 × k table under no trend, and whether Cochran's rule fails."""
    keep = n > 0
    total = n[keep].sum()
    if total == 0:
        return {"min_expected": np.nan, "cells_below_5": 0, "n_cells": 0, "sparse": True}
    p_bar = x[keep].sum() / total
    expected = np.concatenate([n[keep] * p_bar, n[keep] * (1 - p_bar)])
    small = int((expected < COCHRAN_SMALL).sum())
    sparse = bool(expected.min() < COCHRAN_MIN_EXPECTED) or small > COCHRAN_MAX_SMALL_SHARE * len(
        expected
    )
    return {"min_expected": float(expected.min()), "cells_below_5": small,
            "n_cells": len(expected), "sparse": sparse}  # fmt: skip


def _row(levels: Sequence[int], x: np.ndarray, n: np.ndarray, prefix: str) -> dict[str, Any]:
    """CA statistics, small-cell flags, endpoint rates and per-level rates of one measure."""
    result = stats.cochran_armitage_trend(x.tolist(), n.tolist(), scores=list(levels))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n > 0, x / np.maximum(n, 1), np.nan)
    present = [i for i, count in enumerate(n) if count > 0]
    first, last = (present[0], present[-1]) if present else (0, 0)
    ends = {"level_low": levels[first], "level_high": levels[last],
            "p_low": p[first] if present else np.nan, "p_high": p[last] if present else np.nan,
            "n_low": int(n[first]), "n_high": int(n[last])}  # fmt: skip
    per_level = {f"p_{prefix}{lv}": p[i] for i, lv in enumerate(levels)}
    per_level |= {f"n_{prefix}{lv}": int(n[i]) for i, lv in enumerate(levels)}
    return {"z": result.z, "p_value": result.p_value, "delta_pp": result.endpoint_delta_pp,
            **expected_count_flags(x, n), **ends, **per_level}  # fmt: skip


def chance_models(frame: pd.DataFrame) -> set[str]:
    """Models of kind ``baseline`` in ``frame``: chance references (see the module docstring)."""
    if "kind" not in frame.columns:
        return set()
    return set(frame.loc[frame["kind"] == "baseline", "model"].astype(str))


def trend_table(
    frame: pd.DataFrame, unit: str, level: str, scope: str, prefix: str = "bin"
) -> pd.DataFrame:
    """Trends of accuracy and of each error-type share over ``level``, one block per unit.

    Accuracy is correct / answers; the share of type t is errors of type t / typed errors, both
    with CA weights w = level. ``delta_pp`` is (p_high − p_low)·100 between the outermost
    non-empty levels, whose rates and counts are in ``p_low``/``p_high``/``n_low``/``n_high``.
    ``chance`` is True for a unit whose answers include a chance baseline's.
    """
    levels = LEVELS[level]
    totals, by_type = _level_counts(frame, unit, level)
    rows = []
    chance = chance_models(frame)
    with_chance = (
        set(frame.loc[frame["model"].astype(str).isin(chance), unit].astype(str))
        if chance
        else set()
    )
    for name in totals.index.get_level_values(0).unique():
        t, k = totals.loc[name], by_type.loc[name]
        head = {"scope": scope, unit: name, "variable": level, "chance": name in with_chance}
        acc = _row(levels, t["correct"].to_numpy(), t["n"].to_numpy(), prefix)
        rows.append({**head, "measure": "accuracy", "error_type": "", **acc})
        errors = t["errors"].to_numpy()
        for e in ERROR_TYPES:
            share = _row(levels, k[e].to_numpy(), errors, prefix)
            rows.append({**head, "measure": "error_share", "error_type": e, **share})
    return pd.DataFrame(rows)


def add_q_values(table: pd.DataFrame, family: Sequence[str], alpha: float) -> pd.DataFrame:
    """BH-FDR q-values and reject flags within each family (groups of ``family`` columns).

    Chance-baseline rows (``chance``) are no hypothesis: they enter no family and keep
    ``q_value`` NaN and ``reject`` False, so a baseline is never reported significant.
    """
    if table.empty:
        return table
    out = table.assign(q_value=np.nan, reject=False)
    tested = out[~out["chance"].astype(bool)] if "chance" in out.columns else out
    for _, index in tested.groupby(list(family), sort=False).groups.items():
        reject, q = stats.bh_fdr(out.loc[index, "p_value"].to_numpy(), alpha)
        out.loc[index, "q_value"], out.loc[index, "reject"] = q, reject
    return out


def logit_rows(errors: pd.DataFrame, unit: str, dimensions: Sequence[str]) -> list[dict[str, Any]]:
    """Odds ratio of each error type per dimension level, per unit, without/with continent FE.

    Rows are the unit's errors (typed wrong answers); the outcome is "the error is of type t".
    """
    rows = []
    for name, part in errors.groupby(unit, sort=True):
        for dim in dimensions:
            data = part[[dim, "continent", "pred_type"]].astype({dim: "float64"})
            for kind in ERROR_TYPES:
                data = data.assign(y=(data["pred_type"] == kind).astype("int64"))
                for label, fe in (("none", []), ("continent", ["continent"])):
                    res = stats.logit_odds_ratio(data, "y", dim, fe)
                    rows.append({"model": name, "dimension": dim, "error_type": kind,
                                 "fixed_effects": label, **res._asdict()})  # fmt: skip
    return rows
