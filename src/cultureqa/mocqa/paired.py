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


DIFFERENCE = "difference"
EQUIVALENT = "no difference beyond the margin"
INCONCLUSIVE = "inconclusive"
"""The three readings of one paired comparison: the difference test decides (Holm-adjusted p <
α), else the equivalence test at the declared margin decides (Holm-adjusted TOST p < α), else
neither: the data cannot tell at this n. A non-significant difference is never read as none."""


def _restricted_p21(b: np.ndarray, c: np.ndarray, n: np.ndarray, delta: float) -> np.ndarray:
    """Maximum-likelihood P(only b right) under H0 ``p_a − p_b = delta`` (Tango 1998, eq. 3).

    Maximises ``b·log(p21 + δ) + c·log(p21) + (n − b − c)·log(1 − 2·p21 − δ)``; the root of its
    derivative is the positive root of ``2n·p² + B·p + C`` with ``B = −b − c + (2n − b + c)·δ``
    and ``C = −c·δ·(1 − δ)`` (tested against a numerical maximisation).
    """
    big_b = -b - c + (2 * n - b + c) * delta
    big_c = -c * delta * (1 - delta)
    return np.asarray((np.sqrt(big_b**2 - 8 * n * big_c) - big_b) / (4 * n), dtype=float)


def tango_z(b: np.ndarray, c: np.ndarray, n: np.ndarray, delta: float) -> np.ndarray:
    """Tango's score statistic of H0 ``p_a − p_b = delta`` from the discordant counts.

    ``b``: items only ``a`` got right, ``c``: only ``b``; ``n``: paired items. Unlike a t-test on
    the per-item differences, the variance is taken under H0, so a small cell with no discordant
    pair is not "no difference" for certain: its variance at the margin is ``δ(1 − δ)``. statsmodels
    has no paired-proportion equivalence test; this is Tango (1998), Statistics in Medicine 17(8),
    891-908, eq. 3-4.
    """
    b, c, n = (np.asarray(v, dtype=float) for v in (b, c, n))
    if delta < 0:  # the mirror test (b, c swapped, −δ) has the same statistic, negated, and its
        return -tango_z(c, b, n, -delta)  # quadratic's constant term ≤ 0: a real root always
    p21 = _restricted_p21(b, c, n, delta)
    variance = n * (2 * p21 + delta * (1 - delta))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray((b - c - n * delta) / np.sqrt(variance), dtype=float)


def equivalence_p(
    b: np.ndarray | int, c: np.ndarray | int, n: np.ndarray | int, margin: float
) -> np.ndarray:
    """TOST p that ``|p_a − p_b| < margin`` on paired binary data (elementwise; 1 where n = 0).

    Two one-sided Tango score tests, H0 ``δ ≤ −margin`` and H0 ``δ ≥ margin``; the larger p.
    """
    from scipy.stats import norm

    if not 0 < margin < 1:
        raise ValueError(f"an equivalence margin must lie in (0, 1), got {margin}")
    b, c, n = (np.asarray(v, dtype=float) for v in (b, c, n))
    empty = n <= 0
    safe_n = np.where(empty, 1.0, n)
    lower = norm.sf(tango_z(b, c, safe_n, -margin))
    upper = norm.cdf(tango_z(b, c, safe_n, margin))
    return np.asarray(np.where(empty, 1.0, np.maximum(lower, upper)), dtype=float)


def discordant(a: Sequence[bool] | np.ndarray, b: Sequence[bool] | np.ndarray) -> tuple[int, int]:
    """(items only ``a`` got right, items only ``b`` got right)."""
    x, y = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if x.shape != y.shape:
        raise ValueError(f"paired arrays differ in length: {x.size} vs {y.size}")
    return int((x & ~y).sum()), int((~x & y).sum())


def three_way(
    difference_adjusted: np.ndarray, equivalence_adjusted: np.ndarray, alpha: float
) -> np.ndarray:
    """:data:`DIFFERENCE`, :data:`EQUIVALENT` or :data:`INCONCLUSIVE` per entry."""
    diff = np.asarray(difference_adjusted, dtype=float) < alpha
    same = np.asarray(equivalence_adjusted, dtype=float) < alpha
    return np.select([diff, same], [DIFFERENCE, EQUIVALENT], default=INCONCLUSIVE)


def n_to_decide(
    delta: float, sd: float, margin: float, alpha: float, power: float = 0.8
) -> int | None:
    """Paired items that would decide a comparison of true effect ``delta``, per-item SD ``sd``.

    The smaller of the n that would show the difference (two-sided, at ``alpha``) and the n that
    would show equivalence within ``margin`` (one-sided at ``alpha``, the binding side of TOST),
    each at ``power``, from the normal approximation n = ((z_α + z_power)·sd / distance)². Pass
    ``alpha`` divided by the number of comparisons corrected together (Holm's first step), so the
    n is the one that decides the comparison in its table. The SD is floored at √(m(1 − m)),
    the per-item SD of paired binary data whose difference sits on the margin m with no item
    against it: the equivalence test uses the variance at the margin, not the observed one.
    None where neither can be shown (``delta`` on the margin, or no estimate).
    """
    from scipy.stats import norm

    if not (np.isfinite(delta) and np.isfinite(sd)):
        return None
    sd = max(sd, float(np.sqrt(margin * (1 - margin))))
    z_power = norm.ppf(power)
    found = []
    if delta != 0:
        found.append(((norm.ppf(1 - alpha / 2) + z_power) * sd / abs(delta)) ** 2)
    if abs(delta) < margin:
        found.append(((norm.ppf(1 - alpha) + z_power) * sd / (margin - abs(delta))) ** 2)
    return int(np.ceil(min(found))) if found else None
