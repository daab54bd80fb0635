"""Paired comparisons of per-item correctness: the uncertainty of a difference on the same items.

Two conditions answered on the same items (clue vs no clue, CoT vs zero-shot) are paired data:
an interval for the difference must resample items, not conditions, and a test must use the
discordant pairs. Intervals here are seeded percentile bootstraps over items (deterministic, so
DVC-tracked outputs do not move between runs); the test is McNemar's exact binomial test from
statsmodels; single proportions get Wilson intervals from statsmodels' ``proportion_confint``
(the method :func:`cultureqa.analysis.stats.wilson_ci` uses; importing it here would make every
ID-MoCQA build stage depend on the analysis package).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

Interval = tuple[float, float]


class Proportion(NamedTuple):
    """An accuracy with its Wilson 95% interval."""

    value: float
    low: float
    high: float
    n: int


def proportion(correct: Sequence[bool] | np.ndarray) -> Proportion:
    """Share of True with its Wilson interval (NaN when empty)."""
    values = np.asarray(correct, dtype=bool)
    n, k = int(values.size), int(values.sum())
    if n == 0:
        return Proportion(math.nan, math.nan, math.nan, 0)
    from statsmodels.stats.proportion import proportion_confint  # ~0.7 CPU s: where it is used

    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return Proportion(k / n, float(low), float(high), n)


def mcnemar_p(a: Sequence[bool] | np.ndarray, b: Sequence[bool] | np.ndarray) -> float:
    """Exact McNemar p-value for paired correctness ``a`` vs ``b`` (1.0 with no discordant pair)."""
    x, y = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if x.shape != y.shape:
        raise ValueError(f"paired arrays differ in length: {x.size} vs {y.size}")
    table = [[int((x & y).sum()), int((x & ~y).sum())], [int((~x & y).sum()), int((~x & ~y).sum())]]
    if table[0][1] + table[1][0] == 0:
        return 1.0
    from statsmodels.stats.contingency_tables import mcnemar

    return float(mcnemar(table, exact=True).pvalue)


Statistic = Callable[[np.ndarray], np.ndarray]
"""Maps resampled per-condition means (shape: conditions × resamples) to one value per resample."""


def bootstrap_means(columns: Sequence[np.ndarray], n_boot: int, seed: int) -> np.ndarray:
    """Means of each column over ``n_boot`` item resamples (the same resample for every column).

    Returns an array of shape (len(columns), n_boot); empty input gives NaNs.
    """
    data = np.vstack([np.asarray(c, dtype=float) for c in columns])
    n = data.shape[1]
    if n == 0:
        return np.full((len(columns), n_boot), np.nan)
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n, size=(n_boot, n))
    return np.stack([row[index].mean(axis=1) for row in data])


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> Interval:
    """Percentile interval of the finite samples (NaN when none is finite)."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return (math.nan, math.nan)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return (float(low), float(high))


def paired_difference(
    a: Sequence[bool] | np.ndarray, b: Sequence[bool] | np.ndarray, n_boot: int, seed: int
) -> tuple[float, Interval]:
    """Mean of ``a − b`` on paired items with its bootstrap 95% interval."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size == 0:
        return math.nan, (math.nan, math.nan)
    means = bootstrap_means([x, y], n_boot, seed)
    return float(x.mean() - y.mean()), percentile_interval(means[0] - means[1])


def excludes_zero(interval: Interval) -> bool:
    """Whether a (finite) interval lies wholly above or below 0."""
    low, high = interval
    return bool(np.isfinite(low) and np.isfinite(high) and (low > 0 or high < 0))
