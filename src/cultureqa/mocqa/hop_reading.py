"""How a hop-necessity table is read: one test per comparison, Holm over the whole table.

A reading is a claim ("the clue is needed here"), and a table of 14 cells makes 14 such claims
at once. Deciding each cell on its own 95% interval lets chance speak: at the real cell sizes a
model whose clue does nothing showed at least one "clue needed" or "clue misleads" in about 39%
of whole tables (issue 34). So every reading comes from one test and one correction:

* **the test**: McNemar's exact test on the paired items of a cell, for each comparison
  (clue vs none, oracle vs none, clue vs oracle) — statsmodels' ``mcnemar(exact=True)``, whose
  vectorised twin :func:`mcnemar_exact` the simulation tests use (tested equal);
* **the correction**: Holm's step-down (statsmodels ``multipletests(method="holm")``) over
  *every* comparison of *every* row of the table (cells × 3), so the chance that a table of a
  model whose conditions do not differ shows any difference reading is at most ``alpha``;
* "the statement alone is above chance" (which separates the two no-difference readings) is a
  one-sided exact binomial test against 1/3, Holm-corrected over the table's rows on its own,
  since it claims a level, not a difference.

The bootstrap intervals stay in the table as effect sizes; they decide nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

ALPHA = 0.05
CHANCE = 1 / 3
COMPARISONS: dict[str, tuple[str, str]] = {
    "clue_vs_none": ("clue", "none"),
    "oracle_vs_none": ("oracle", "none"),
    "clue_vs_oracle": ("clue", "oracle"),
}
"""Name → (a, b): McNemar of condition a against b on the same items; the sign is a − b."""
CLUE_NEEDED = "clue needed"
CLUE_BEYOND = "clue helps beyond the province"
CLUE_MISLEADS = "clue misleads"
CLUE_UNUSED = "clue unused"
STATEMENT_SUFFICES = "statement suffices"
TOO_WEAK = "too weak to tell"
CHANCE_MODEL = "chance model"
NO_DIFFERENCE = (STATEMENT_SUFFICES, TOO_WEAK)
"""The readings that claim no difference between the conditions."""
_SIG = "Holm-adjusted McNemar p < α"
READINGS = {
    CLUE_NEEDED: f"clue > none ({_SIG}) and clue not above oracle: the clue carries the province",
    CLUE_BEYOND: f"clue > none and clue > oracle (both {_SIG}): the clue helps by another route "
    "than the province (lexical hints at the answer), more than naming the province does",
    CLUE_MISLEADS: f"clue < none ({_SIG}): the clue lowers accuracy (a wrong first hop pulls the "
    "answer away)",
    CLUE_UNUSED: f"oracle > none ({_SIG}) but clue vs none is not: naming the province helps, "
    "the clue does not (first hop fails or is ignored)",
    STATEMENT_SUFFICES: "no difference between the conditions, and the statement alone is above "
    "chance (one-sided exact binomial against 1/3, Holm over the rows): the answer is reachable "
    "without the first hop",
    TOO_WEAK: "no difference between the conditions, and the statement alone is not above "
    "chance: the model cannot answer even with the province named",
    CHANCE_MODEL: "a chance baseline ignores the question: it checks the plumbing only",
}
RULE = (
    "Each reading rests on McNemar's exact test (statsmodels) of each paired comparison (clue vs "
    "none, oracle vs none, clue vs oracle), Holm-adjusted (statsmodels multipletests) over every "
    "comparison of every row of the table, at α = {alpha}: a model whose conditions do not "
    "differ shows a difference reading in at most {pct:.0f}% of tables. The bootstrap intervals "
    "are effect sizes and decide nothing."
)


def mcnemar_exact(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Two-sided exact McNemar p from the discordant counts, elementwise (1 where none).

    The formula of statsmodels' ``mcnemar(table, exact=True)`` (2·Binom(min(b, c); b + c, ½),
    capped at 1), over arrays, for simulating thousands of tables; tested equal to it.
    """
    from scipy.stats import binom  # imported where called: build stages import this module

    b, c = np.asarray(b), np.asarray(c)
    return np.asarray(np.minimum(1.0, 2 * binom.cdf(np.minimum(b, c), b + c, 0.5)), dtype=float)


def above_chance_p(correct: np.ndarray, n: np.ndarray, chance: float = CHANCE) -> np.ndarray:
    """One-sided exact binomial p of ``correct`` of ``n`` against ``chance`` (P[X ≥ correct])."""
    from scipy.stats import binom

    return np.asarray(binom.sf(np.asarray(correct) - 1, np.asarray(n), chance), dtype=float)


def holm(p_values: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """Holm-adjusted p over all finite entries of ``p_values`` (any shape; NaN stays NaN)."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    finite = np.isfinite(p)
    if finite.any():
        out[finite] = multipletests(p[finite], alpha=alpha, method="holm")[1]
    return out


def holm_batch(p_values: np.ndarray) -> np.ndarray:
    """Holm-adjusted p along the last axis of finite ``p_values``, many families at once.

    The step-down of statsmodels' Holm (sorted p times m, m − 1, …, running maximum, capped at
    1), over arrays, for the simulation tests; tested equal to :func:`holm`. Calling
    ``multipletests`` per simulated table is not an option there: statsmodels 0.15 runs
    ``gc.collect()`` on every Holm call, about 0.3 s each inside a test process.
    """
    p = np.asarray(p_values, dtype=float)
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1) * np.arange(m, 0, -1)
    stepped = np.minimum(1.0, np.maximum.accumulate(ranked, axis=-1))
    out = np.empty_like(stepped)
    np.put_along_axis(out, order, stepped, axis=-1)
    return out


def decide(
    sign: Mapping[str, np.ndarray],
    adjusted: Mapping[str, np.ndarray],
    above_chance_adjusted: np.ndarray,
    alpha: float = ALPHA,
) -> np.ndarray:
    """The reading of each cell from its comparisons' signs (a − b) and Holm-adjusted p.

    Arrays of any common shape, so a simulation of thousands of tables reads them in one call.
    """
    up = {k: (np.asarray(adjusted[k]) < alpha) & (np.asarray(sign[k]) > 0) for k in COMPARISONS}
    down = {k: (np.asarray(adjusted[k]) < alpha) & (np.asarray(sign[k]) < 0) for k in COMPARISONS}
    above = np.asarray(above_chance_adjusted) < alpha
    conditions = [
        up["clue_vs_none"] & up["clue_vs_oracle"],
        up["clue_vs_none"],
        down["clue_vs_none"],
        up["oracle_vs_none"],
        above,
    ]
    choices = [CLUE_BEYOND, CLUE_NEEDED, CLUE_MISLEADS, CLUE_UNUSED, STATEMENT_SUFFICES]
    return np.select(conditions, choices, default=TOO_WEAK)


def read_table(table: pd.DataFrame, chance_model: bool, alpha: float = ALPHA) -> pd.DataFrame:
    """The table with Holm-adjusted p beside each raw p, and each row's reading.

    Needs ``p_<comparison>`` and the sign columns ``<a>_minus_<b>`` (from the accuracies), plus
    ``n`` and ``none``. The clue gain is blanked unless oracle > none is decided: a ratio over a
    denominator not shown to differ from 0 means nothing.
    """
    out = table.copy()
    raw = np.column_stack([out[f"p_{k}"].to_numpy(dtype=float) for k in COMPARISONS])
    adjusted = holm(raw, alpha)
    sign = {}
    for i, (key, (a, b)) in enumerate(COMPARISONS.items()):
        out[f"p_{key}_holm"] = adjusted[:, i]
        sign[key] = out[a].to_numpy(dtype=float) - out[b].to_numpy(dtype=float)
    correct = np.rint(out["none"].to_numpy(dtype=float) * out["n"].to_numpy(dtype=float))
    out["p_above_chance"] = above_chance_p(correct, out["n"].to_numpy())
    out["p_above_chance_holm"] = holm(out["p_above_chance"].to_numpy(), alpha)
    adjusted_by = {k: out[f"p_{k}_holm"].to_numpy() for k in COMPARISONS}
    readings = decide(sign, adjusted_by, out["p_above_chance_holm"].to_numpy(), alpha)
    out["reading"] = CHANCE_MODEL if chance_model else readings
    gain_shown = (adjusted_by["oracle_vs_none"] < alpha) & (sign["oracle_vs_none"] > 0)
    for column in ("gain", "gain_low", "gain_high"):
        if column in out.columns:
            out[column] = out[column].where(gain_shown)
    return out
