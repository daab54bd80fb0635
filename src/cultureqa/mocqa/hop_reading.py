"""How a hop-necessity table is read: three outcomes per comparison, Holm over the whole table.

A reading is a claim ("the clue is needed here", "the clue does nothing"), and a table of 14
cells makes 14 such claims at once, in both directions. Deciding each cell on its own 95%
interval let chance speak (a model whose clue does nothing showed a difference in 39% of tables,
issue 34), and reading a non-significant difference as none let size speak the other way: a clue
worth +18 points read "clue unused" in 52% of cells, a clue costing 20 points read "statement
suffices" in 69% (issue 42). So each paired comparison (clue vs none, oracle vs none, clue vs
oracle) reads one of three ways (:func:`cultureqa.mocqa.paired.three_way`):

* **a difference**: McNemar's exact test (statsmodels ``mcnemar(exact=True)``; its vectorised
  twin :func:`mcnemar_exact` is tested equal), Holm-adjusted (statsmodels
  ``multipletests(method="holm")``) over every comparison of every row of the table;
* **no difference beyond the margin**: two one-sided Tango score tests that the difference lies
  within ± ``twohop.hop.margin`` (:func:`cultureqa.mocqa.paired.equivalence_p`), Holm-adjusted
  over the table the same way;
* **inconclusive** otherwise, with the paired items that would decide it
  (:func:`cultureqa.mocqa.paired.n_to_decide`).

A cell's reading claims no more than its comparisons show; where they do not fit one of the
readings below, the cell reads "inconclusive at this n". "The statement alone is above chance"
(which separates the two no-difference readings) is a one-sided exact test against each item's
own chance (1 / its options; the Poisson-binomial of scipy), Holm over the table's rows; "too weak
to tell" needs the statement alone shown below chance + margin the same way, not merely not
above it.

The bootstrap intervals stay in the table as effect sizes; they decide nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from cultureqa.mocqa.paired import DIFFERENCE, EQUIVALENT, INCONCLUSIVE, n_to_decide, three_way

ALPHA = 0.05
MARGIN = 0.10
"""Default equivalence margin (accuracy share): a difference under 10 points is "none"."""
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
INCONCLUSIVE_CELL = "inconclusive at this n"
NO_DIFFERENCE = (STATEMENT_SUFFICES, TOO_WEAK)
"""The readings that claim no difference between the conditions."""
DIFFERENCE_READINGS = (CLUE_NEEDED, CLUE_BEYOND, CLUE_MISLEADS, CLUE_UNUSED)
"""The readings that claim a difference between the conditions."""
_SIG = "Holm-adjusted McNemar p < α"
_SAME = "within ± margin (Holm-adjusted Tango TOST p < α)"
READINGS = {
    CLUE_NEEDED: f"clue > none ({_SIG}) and clue not above oracle: the clue carries the province",
    CLUE_BEYOND: f"clue > none and clue > oracle (both {_SIG}): the clue helps by another route "
    "than the province (lexical hints at the answer), more than naming the province does",
    CLUE_MISLEADS: f"clue < none ({_SIG}): the clue lowers accuracy (a wrong first hop pulls the "
    "answer away)",
    CLUE_UNUSED: f"oracle > none ({_SIG}) and clue − none {_SAME}: naming the province helps, "
    "the clue does not (first hop fails or is ignored)",
    STATEMENT_SUFFICES: f"clue − none and oracle − none both {_SAME}, and the statement alone is "
    "above each item's chance (1 / its options; one-sided exact Poisson-binomial, Holm over the "
    "rows): the answer is reachable without the first hop",
    TOO_WEAK: f"clue − none and oracle − none both {_SAME}, and the statement alone is below "
    "chance + margin (one-sided exact, Holm over the rows): the model cannot answer even with "
    "the province named",
    INCONCLUSIVE_CELL: "the comparisons fit none of the readings above (a difference not shown "
    "and not ruled out beyond the margin): the cell cannot tell at this n; n_to_decide says how "
    "many paired items would",
    CHANCE_MODEL: "a chance baseline ignores the question: it checks the plumbing only",
}
RULE = (
    "Each comparison (clue vs none, oracle vs none, clue vs oracle) reads as a difference "
    "(McNemar exact, statsmodels), no difference beyond ± {margin} (two one-sided Tango score "
    "tests) or inconclusive; both tests are Holm-adjusted (statsmodels multipletests) over every "
    "comparison of every row of the table, at α = {alpha}: a model whose conditions do not "
    "differ shows a difference reading in at most {pct:.0f}% of tables, and one whose conditions "
    "differ by more than the margin reads no difference in at most {pct:.0f}% of cells. The "
    "bootstrap intervals are effect sizes and decide nothing."
)


def mcnemar_exact(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Two-sided exact McNemar p from the discordant counts, elementwise (1 where none).

    The formula of statsmodels' ``mcnemar(table, exact=True)`` (2·Binom(min(b, c); b + c, ½),
    capped at 1), over arrays, for simulating thousands of tables; tested equal to it.
    """
    from scipy.stats import binom  # imported where called: build stages import this module

    b, c = np.asarray(b), np.asarray(c)
    return np.asarray(np.minimum(1.0, 2 * binom.cdf(np.minimum(b, c), b + c, 0.5)), dtype=float)


def above_chance_p(correct: np.ndarray | int, chances: np.ndarray) -> np.ndarray:
    """One-sided exact p that ``correct`` right answers beat each item's own chance.

    Under H0 each item is a guess among its own options (``chances``: 1 / options per item,
    items on the last axis; pad absent items with 0, a trial that never succeeds), so the count
    right is Poisson-binomial (scipy ``poisson_binom``); p = P[X ≥ correct]. With every item at
    1/3 this is the binomial test against 1/3. NaN where a row has no item.
    """
    from scipy.stats import poisson_binom

    chances = np.asarray(chances, dtype=float)
    p = poisson_binom(chances).sf(np.asarray(correct) - 1)
    return np.asarray(np.where(chances.any(axis=-1), p, np.nan), dtype=float)


def below_chance_margin_p(
    correct: np.ndarray | int, chances: np.ndarray, margin: float
) -> np.ndarray:
    """One-sided exact p that ``correct`` is below each item's chance + ``margin``.

    H0: each item is right with probability chance + margin (capped at 1; padded items, chance
    0, stay 0); p = P[X ≤ correct]. A small p shows the accuracy within the margin of chance,
    which "not above chance" alone does not.
    """
    from scipy.stats import poisson_binom

    chances = np.asarray(chances, dtype=float)
    shifted = np.where(chances > 0, np.minimum(1.0, chances + margin), 0.0)
    p = poisson_binom(shifted).cdf(np.asarray(correct))
    return np.asarray(np.where(chances.any(axis=-1), p, np.nan), dtype=float)


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
    equivalent_adjusted: Mapping[str, np.ndarray],
    above_chance_adjusted: np.ndarray,
    at_chance_adjusted: np.ndarray,
    alpha: float = ALPHA,
) -> np.ndarray:
    """The reading of each cell from its comparisons' signs (a − b) and Holm-adjusted p.

    ``adjusted``: the difference tests' p; ``equivalent_adjusted``: the equivalence tests' p;
    ``above_chance_adjusted`` / ``at_chance_adjusted``: the statement alone above chance / below
    chance + margin. Arrays of any common shape, so a simulation of thousands of tables reads
    them in one call.
    """
    reading = {
        k: three_way(np.asarray(adjusted[k]), np.asarray(equivalent_adjusted[k]), alpha)
        for k in COMPARISONS
    }
    up = {k: (reading[k] == DIFFERENCE) & (np.asarray(sign[k]) > 0) for k in COMPARISONS}
    down = {k: (reading[k] == DIFFERENCE) & (np.asarray(sign[k]) < 0) for k in COMPARISONS}
    same = {k: reading[k] == EQUIVALENT for k in COMPARISONS}
    no_change = same["clue_vs_none"] & same["oracle_vs_none"]
    conditions = [
        up["clue_vs_none"] & up["clue_vs_oracle"],
        up["clue_vs_none"],
        down["clue_vs_none"],
        up["oracle_vs_none"] & same["clue_vs_none"],
        no_change & (np.asarray(above_chance_adjusted) < alpha),
        no_change & (np.asarray(at_chance_adjusted) < alpha),
    ]
    choices = [CLUE_BEYOND, CLUE_NEEDED, CLUE_MISLEADS, CLUE_UNUSED, STATEMENT_SUFFICES, TOO_WEAK]
    return np.select(conditions, choices, default=INCONCLUSIVE_CELL)


def read_table(
    table: pd.DataFrame, chance_model: bool, alpha: float = ALPHA, margin: float = MARGIN
) -> pd.DataFrame:
    """The table with Holm-adjusted p beside each raw p, each comparison's and each row's reading.

    Needs per comparison ``p_<comparison>`` (McNemar), ``p_<comparison>_equivalence`` (TOST at
    ``margin``) and ``discordant_<comparison>`` (share of items the two conditions disagree on),
    the accuracies ``none``/``clue``/``oracle`` (the signs), ``n``, and ``p_above_chance`` and
    ``p_at_chance`` from each item's own chance. Adds ``reading_<comparison>`` and, where that
    is inconclusive, ``n_to_decide_<comparison>``. The clue gain is blanked unless oracle > none
    is decided: a ratio over a denominator not shown to differ from 0 means nothing.
    """
    out = table.copy()
    keys = list(COMPARISONS)
    raw = np.column_stack([out[f"p_{k}"].to_numpy(dtype=float) for k in keys])
    same_raw = np.column_stack([out[f"p_{k}_equivalence"].to_numpy(dtype=float) for k in keys])
    adjusted, same_adjusted = holm(raw, alpha), holm(same_raw, alpha)
    sign, adjusted_by, same_by = {}, {}, {}
    family = int(np.isfinite(raw).sum())
    for i, (key, (a, b)) in enumerate(COMPARISONS.items()):
        out[f"p_{key}_holm"] = adjusted_by[key] = adjusted[:, i]
        out[f"p_{key}_equivalence_holm"] = same_by[key] = same_adjusted[:, i]
        sign[key] = out[a].to_numpy(dtype=float) - out[b].to_numpy(dtype=float)
        out[f"reading_{key}"] = three_way(adjusted[:, i], same_adjusted[:, i], alpha)
        spread = out[f"discordant_{key}"].to_numpy(dtype=float) - sign[key] ** 2
        out[f"n_to_decide_{key}"] = [
            n_to_decide(d, float(np.sqrt(max(v, 0.0))), margin, alpha / max(family, 1))
            if r == INCONCLUSIVE
            else None
            for d, v, r in zip(sign[key], spread, out[f"reading_{key}"], strict=True)
        ]
    out["p_above_chance_holm"] = holm(out["p_above_chance"].to_numpy(dtype=float), alpha)
    out["p_at_chance_holm"] = holm(out["p_at_chance"].to_numpy(dtype=float), alpha)
    readings = decide(
        sign, adjusted_by, same_by, out["p_above_chance_holm"].to_numpy(),
        out["p_at_chance_holm"].to_numpy(), alpha,
    )  # fmt: skip
    out["reading"] = CHANCE_MODEL if chance_model else readings
    gain_shown = (adjusted_by["oracle_vs_none"] < alpha) & (sign["oracle_vs_none"] > 0)
    for column in ("gain", "gain_low", "gain_high"):
        if column in out.columns:
            out[column] = out[column].where(gain_shown)
    return out
