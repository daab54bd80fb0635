"""Gold-position balance decided on evidence at the size the check sees (DESIGN.md §8).

The effect is the largest gap between a letter's share of golds and the share a uniform draw would
give it (1/k, or the mean of 1/k_i over items whose option count k_i reaches the letter). A fixed
cut-off on the observed gap fails truly balanced 50-item files by chance (12-31% of the time at
tolerance 0.10), and a significance test rejects harmless 0.8-point gaps at 100,000 rows. So the
check fails only when the *lower confidence bound* on the largest gap exceeds the tolerance:

* each letter's share gets an exact (Clopper-Pearson) interval at level 1 - (1 - confidence)/k
  (Bonferroni over the k letters), so all k intervals hold together with probability >= confidence;
* the gap's lower bound is the largest distance from a letter's expected share to its interval.

If the true gap is within the tolerance, the bound exceeds it with probability at most
1 - confidence (0.01 by default): a balanced file passes at least 99% of the time at every size,
while all golds at one letter fail from 20 items up for 2 to 6 options. With mixed option counts a
letter's count is a sum of Bernoulli draws with different rates, which varies less than a binomial
of the same mean, so the exact binomial interval is conservative there. The chi-square statistic
and p-value are reported beside the decision, never deciding it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import chisquare
from statsmodels.stats.proportion import proportion_confint

CONFIDENCE = 0.99
"""Simultaneous confidence of the letter-share intervals (how often an in-tolerance file passes)."""
WARN_SHARE = 0.5
"""A passing gap whose lower bound is past this share of the tolerance is a warning: the skew is
real (a 5-option set with 31 % of golds at A passes at bound 0.094 < 0.10), so the reader must see
it, and ``options.shuffle`` can remove it."""

RULE = (
    "fails only when the {conf:.0%} simultaneous lower bound on the largest gap exceeds the "
    "tolerance (exact Clopper-Pearson interval per letter, Bonferroni over letters)"
)


@dataclass(frozen=True)
class Balance:
    """Observed gold positions against a uniform draw, with the evidence-based verdict."""

    rows: int
    counts: dict[str, int]
    expected_counts: dict[str, float]
    shares: dict[str, float]
    max_deviation: float
    """Largest observed gap |share - expected share| over the letters."""
    gap_letter: str
    deviation_bound: float
    """Lower confidence bound on the largest gap (the decisive number)."""
    tolerance: float
    confidence: float
    unexpected_values: list[str]
    chi_square: float | None
    chi_square_p_value: float | None
    success: bool

    @property
    def warning(self) -> bool:
        """Passes, but the gap's lower bound is past half the tolerance: a real skew."""
        return self.success and self.rows > 0 and self.deviation_bound > WARN_SHARE * self.tolerance

    def as_dict(self) -> dict[str, object]:
        """JSON-ready, with the one-sentence summary and the one-line digest the reports print."""
        return {**asdict(self), "warning": self.warning, "summary": self.sentence(),
                "line": self.line(), "rule": self.rule()}  # fmt: skip

    def line(self) -> str:
        """Distribution, largest gap and its bound in one line (printed on a pass too)."""
        if not self.rows:
            return "gold positions: no rows"
        shares = ", ".join(f"{k} {c / self.rows:.0%}" for k, c in self.counts.items())
        verdict = ">" if self.deviation_bound > self.tolerance else "≤"
        line = (
            f"gold positions over {self.rows} items: {shares}; largest gap {self.max_deviation:.3f}"
            f" ({self.gap_letter}), {self.confidence:.0%} lower bound {self.deviation_bound:.3f} "
            f"{verdict} tolerance {self.tolerance:.2f}"
        )
        if self.warning:
            half = WARN_SHARE * self.tolerance
            line += (
                f"; warning: the bound is past half the tolerance ({half:.3f}), a real skew "
                "toward one position (options.shuffle: {seed} removes it)"
            )
        return line

    def rule(self) -> str:
        """The decision rule in words."""
        return RULE.format(conf=self.confidence)

    def sentence(self, what: str = "gold answers") -> str:
        """Counts, expectation, gap, bound and verdict in one sentence."""
        if not self.rows:
            return f"{what}: no rows to check"
        counts = ", ".join(
            f"{k} {c} of {self.rows} ({c / self.rows:.0%})" for k, c in self.counts.items()
        )
        expected = sorted({round(e / self.rows, 2) for e in self.expected_counts.values()})
        uniform = (
            f"≈ {expected[0]:.0%} each"
            if len(expected) == 1
            else ", ".join(f"{k} ≈ {e / self.rows:.0%}" for k, e in self.expected_counts.items())
        )
        verdict = ">" if self.deviation_bound > self.tolerance else "≤"
        outcome = "fails" if not self.success else "passes"
        outside = (
            f"; values outside the set {self.unexpected_values}" if self.unexpected_values else ""
        )
        test = (
            f"; chi-square {self.chi_square:.2f}, p={self.chi_square_p_value:.3g} "
            "(reported, not decisive)"
            if self.chi_square is not None and self.chi_square_p_value is not None
            else ""
        )
        return (
            f"{what}: {counts}; balanced would be {uniform}; largest gap "
            f"{self.max_deviation:.2f} ({self.gap_letter}), {self.confidence:.0%} bound "
            f"{self.deviation_bound:.2f} {verdict} tolerance {self.tolerance:.2f}: {outcome} "
            f"(the check {self.rule()}){outside}{test}"
        )


def balance(
    counts: Mapping[str, int],
    expected_counts: Mapping[str, float],
    tolerance: float,
    confidence: float = CONFIDENCE,
) -> Balance:
    """Decide whether ``counts`` (letter → golds) fit ``expected_counts`` within ``tolerance``.

    Values in ``counts`` outside ``expected_counts`` are rows too (and fail the check): a gold
    letter beyond an item's options is never balanced.
    """
    letters = list(expected_counts)
    observed = np.array([int(counts.get(k, 0)) for k in letters])
    outside = sorted(set(counts) - set(letters))
    n = int(sum(int(c) for c in counts.values()))
    if n == 0 or not letters:
        return Balance(0, {}, {}, {}, 1.0, "", 1.0, tolerance, confidence, outside, None, None,
                       False)  # fmt: skip
    expected = np.array([float(expected_counts[k]) for k in letters]) / n
    shares = observed / n
    gaps = np.abs(shares - expected)
    alpha = (1 - confidence) / len(letters)
    low, high = proportion_confint(observed, n, alpha=alpha, method="beta")
    distance = np.maximum(0.0, np.maximum(np.asarray(low) - expected, expected - np.asarray(high)))
    test = chisquare(observed, expected * observed.sum()) if observed.sum() else None
    worst = int(np.argmax(gaps))
    bound = float(distance.max())
    return Balance(
        rows=n,
        counts=dict(zip(letters, map(int, observed), strict=True)),
        expected_counts={k: round(float(e * n), 2) for k, e in zip(letters, expected, strict=True)},
        shares={k: round(float(s), 4) for k, s in zip(letters, shares, strict=True)},
        max_deviation=round(float(gaps.max()), 4),
        gap_letter=letters[worst],
        deviation_bound=round(bound, 4),
        tolerance=tolerance,
        confidence=confidence,
        unexpected_values=outside,
        chi_square=None if test is None else round(float(test.statistic), 4),
        chi_square_p_value=None if test is None else float(test.pvalue),
        success=not outside and bound <= tolerance,
    )


def uniform_counts(letters: list[str], rows: int) -> dict[str, float]:
    """Expected counts of a uniform draw over ``letters``."""
    return {k: rows / len(letters) for k in letters}
