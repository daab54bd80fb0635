"""Statistics shared by every analysis stage.

One module so that each number in a report comes from one tested implementation. Where
statsmodels or scipy provide a method (Wilson interval, BH-FDR, logistic regression, kappa,
chi-square) we call it; only statistics without a library routine (the Cochran-Armitage trend
test, ICC(2,1)) are written out from their textbook formulas.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

# scipy and statsmodels are imported where they are called: together they cost about 0.7 CPU s,
# and most stage processes that import this module (for a table's layout, a Wilson interval on
# the report path only) never reach them.

__all__ = [
    "OddsRatio",
    "TrendResult",
    "accuracy_table",
    "bh_fdr",
    "chi_square_uniform",
    "cochran_armitage_trend",
    "cohen_kappa",
    "icc_2_1",
    "logit_odds_ratio",
    "max_pairwise_gap",
    "precision_recall",
    "wilson_ci",
]

# A fitted probability this close to 0 or 1 means a coefficient ran off to infinity
# (quasi-complete separation); the same diagnostic as R's glm.fit warning.
_SEPARATION_EPS = 1e-8


class TrendResult(NamedTuple):
    """Result of a Cochran-Armitage trend test."""

    z: float
    """Signed z statistic; positive when the proportion rises with the score."""
    p_value: float
    """Two-sided p-value from the standard normal."""
    endpoint_delta_pp: float
    """(p_last - p_first) * 100 over the first and last non-empty groups."""


class OddsRatio(NamedTuple):
    """Odds ratio of a logistic regression coefficient with its Wald interval."""

    odds_ratio: float
    """exp(beta) for a one-unit increase of the predictor."""
    ci_low: float
    """Lower bound of the Wald confidence interval, exponentiated."""
    ci_high: float
    """Upper bound of the Wald confidence interval, exponentiated."""
    p_value: float
    """Two-sided Wald p-value of beta."""
    n: int
    """Rows used in the fit (after dropping missing values and perfectly predicted strata)."""
    note: str = ""
    """Why estimates are NaN, or which rows were dropped; empty when the fit is clean."""


def _wilson_arrays(
    successes: np.ndarray, n: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised Wilson bounds; NaN where n == 0 instead of a divide-by-zero warning."""
    low = np.full(n.shape, np.nan)
    high = np.full(n.shape, np.nan)
    ok = n > 0
    if ok.any():
        from statsmodels.stats.proportion import proportion_confint

        low[ok], high[ok] = proportion_confint(successes[ok], n[ok], alpha=alpha, method="wilson")
    return low, high


def wilson_ci(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Wilson keeps sensible coverage near 0 and 1 and for small slices (a province x clue type
    cell), where the normal interval collapses or leaves [0, 1].

    Args:
        successes: Number of correct answers.
        n: Number of answers.
        alpha: One minus the confidence level.

    Returns:
        (low, high); (nan, nan) when n == 0.

    Raises:
        ValueError: If successes is outside [0, n].
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"wilson_ci needs 0 <= successes <= n, got successes={successes}, n={n}")
    low, high = _wilson_arrays(np.array([successes]), np.array([n]), alpha)
    return float(low[0]), float(high[0])


def accuracy_table(
    df: pd.DataFrame, by: list[str], correct: str = "correct", alpha: float = 0.05
) -> pd.DataFrame:
    """Accuracy with Wilson intervals per group, in one vectorised pass.

    Every slice table in the reports (by clue type x language, province, domain, ...) is this
    function, so prediction tables of 100k rows must stay fast: one groupby and one vectorised
    interval call, no per-group Python.

    Args:
        df: One row per prediction.
        by: Grouping columns; [] gives a single overall row. Missing keys form their own group.
        correct: Boolean (or 0/1) column; parse errors must already be False.
        alpha: One minus the confidence level.

    Returns:
        Columns ``*by, n, correct, accuracy, ci_low, ci_high``, sorted by the group keys.

    Raises:
        KeyError: If a named column is missing.
        ValueError: If ``correct`` has missing or non-binary values.
    """
    missing = [c for c in [*by, correct] if c not in df.columns]
    if missing:
        raise KeyError(f"accuracy_table: columns {missing} not in frame {list(df.columns)}")
    hits = df[correct]
    if hits.isna().any() or not hits.isin([0, 1]).all():
        raise ValueError(
            f"accuracy_table: column {correct!r} must be boolean/0-1 without missing values "
            "(count parse errors as False before aggregating)"
        )
    hits = hits.astype("int64")
    if by:
        grouped = hits.groupby([df[c] for c in by], observed=True, dropna=False, sort=True)
        out = grouped.agg(["size", "sum"]).reset_index()
        out.columns = [*by, "n", "correct"]
    else:
        out = pd.DataFrame({"n": [len(hits)], "correct": [int(hits.sum())]})
    n = out["n"].to_numpy(dtype="int64")
    k = out["correct"].to_numpy(dtype="int64")
    with np.errstate(invalid="ignore", divide="ignore"):
        out["accuracy"] = np.where(n > 0, k / np.maximum(n, 1), np.nan)
    out["ci_low"], out["ci_high"] = _wilson_arrays(k, n, alpha)
    return out


def cochran_armitage_trend(
    successes: Sequence[int],
    totals: Sequence[int],
    scores: Sequence[float] | None = None,
) -> TrendResult:
    """Cochran-Armitage test for a linear trend in proportions over ordered groups.

    Used for accuracy and error-type shares over WEIRD bins 0-5. There is no statsmodels routine
    with the binomial (N, not N - 1) variance, so this is Agresti's (2002, sec. 5.3.5) statistic

        z = sum_i w_i (x_i - n_i p) / sqrt(p (1 - p) [sum_i n_i w_i^2 - (sum_i n_i w_i)^2 / N])

    with p = X / N pooled over the non-empty groups.

    Args:
        successes: Events x_i per group, in group order.
        totals: Trials n_i per group.
        scores: Weights w_i; default 0..k-1 (bin index), assigned before empty groups are
            dropped so an empty bin does not shift the others' weights.

    Returns:
        TrendResult; z and p_value are NaN when the variance is zero (fewer than two distinct
        scores among non-empty groups, or a pooled proportion of 0 or 1).

    Raises:
        ValueError: On mismatched lengths or successes outside [0, n_i].
    """
    x = np.asarray(successes, dtype=float)
    n = np.asarray(totals, dtype=float)
    w = np.arange(len(n), dtype=float) if scores is None else np.asarray(scores, dtype=float)
    if not x.shape == n.shape == w.shape or x.ndim != 1:
        raise ValueError(
            f"cochran_armitage_trend: lengths differ (successes={x.shape}, totals={n.shape}, "
            f"scores={w.shape})"
        )
    if (n < 0).any() or (x < 0).any() or (x > n).any():
        raise ValueError("cochran_armitage_trend needs 0 <= successes <= totals in every group")
    keep = n > 0
    x, n, w = x[keep], n[keep], w[keep]
    delta = float((x[-1] / n[-1] - x[0] / n[0]) * 100) if len(n) >= 2 else float("nan")
    total = n.sum()
    p_bar = x.sum() / total if total > 0 else float("nan")
    if len(n) < 2 or np.ptp(w) == 0 or not 0 < p_bar < 1:
        return TrendResult(float("nan"), float("nan"), delta)
    t = np.sum(w * (x - n * p_bar))
    var = p_bar * (1 - p_bar) * (np.sum(n * w**2) - np.sum(n * w) ** 2 / total)
    z = float(t / np.sqrt(var))
    from scipy import stats as sps

    return TrendResult(z, float(2 * sps.norm.sf(abs(z))), delta)


def bh_fdr(p_values: Sequence[float], alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini-Hochberg adjustment within one family of tests.

    A missing p-value (an untestable bin) is not a test: it is left out of the family so it
    does not inflate the others' q-values.

    Args:
        p_values: Raw p-values of one family; NaN for tests that could not be run.
        alpha: False discovery rate.

    Returns:
        (reject, q_values) aligned with the input; NaN inputs give False and NaN.
    """
    p = np.asarray(p_values, dtype=float)
    reject = np.zeros(p.shape, dtype=bool)
    q = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        from statsmodels.stats.multitest import multipletests

        reject[ok], q[ok], _, _ = multipletests(p[ok], alpha=alpha, method="fdr_bh")
    return reject, q


def _nan_odds_ratio(n: int, note: str) -> OddsRatio:
    nan = float("nan")
    return OddsRatio(nan, nan, nan, nan, n, note)


def _drop_perfectly_predicted_levels(data: pd.DataFrame, fe_cols: list[str]) -> pd.DataFrame:
    """Drop fixed-effect levels whose outcome never varies (as Stata's logit does).

    Such a level's dummy diverges and its rows carry no information about the predictor, so
    dropping them gives the same predictor estimate without a non-converging fit.
    """
    while True:
        before = len(data)
        for col in fe_cols:
            level_mean = data.groupby(col, observed=True)["y"].transform("mean")
            data = data[(level_mean > 0) & (level_mean < 1)]
        if len(data) == before:
            return data


def logit_odds_ratio(
    df: pd.DataFrame,
    outcome: str,
    predictor: str,
    fixed_effects: list[str] | None = None,
    alpha: float = 0.05,
) -> OddsRatio:
    """Odds ratio of a binary outcome per unit of a numeric predictor, by logistic regression.

    Answers "does an error type become more likely as a WEIRD dimension rises", optionally
    within continents (categorical fixed effects). Small cells make separation common, so a
    failed fit returns NaNs with a note instead of raising and stopping a whole report.

    Args:
        df: One row per item (or per error).
        outcome: Binary column (bool or 0/1).
        predictor: Numeric column (e.g. a dimension level 0-3).
        fixed_effects: Categorical columns entered as treatment-coded dummies.
        alpha: One minus the confidence level of the interval.

    Returns:
        OddsRatio; estimates are NaN with a ``note`` on separation or non-convergence.

    Raises:
        KeyError: If a named column is missing.
        ValueError: If the outcome is not binary or the predictor is not numeric.
    """
    fes = list(fixed_effects or [])
    cols = [outcome, predictor, *fes]
    if missing := [c for c in cols if c not in df.columns]:
        raise KeyError(f"logit_odds_ratio: columns {missing} not in frame {list(df.columns)}")
    if not pd.api.types.is_numeric_dtype(df[predictor]):
        raise ValueError(f"logit_odds_ratio: predictor {predictor!r} must be numeric")
    # Safe names so arbitrary column names never break the formula.
    fe_names = [f"fe{i}" for i in range(len(fes))]
    data = df[cols].dropna().set_axis(["y", "x", *fe_names], axis=1)
    if not data["y"].isin([0, 1]).all():
        raise ValueError(f"logit_odds_ratio: outcome {outcome!r} must be binary (0/1 or bool)")
    data = data.astype({"y": float, "x": float})
    kept = _drop_perfectly_predicted_levels(data, fe_names)
    dropped = len(data) - len(kept)
    note = f"dropped {dropped} rows in fixed-effect levels with a constant outcome"
    result = _fit_logit(kept, fe_names, alpha)
    if dropped:
        result = result._replace(note="; ".join(filter(None, [note, result.note])))
    return result


def _design(data: pd.DataFrame, fe_names: list[str]) -> pd.DataFrame:
    """``const, x`` plus treatment-coded dummies of each fixed effect (first sorted level dropped).

    The same design as the formula ``y ~ x + C(fe)``, built without formula parsing, which took
    most of the time of the hundreds of small fits of an analysis run.
    """
    dummies = [
        pd.get_dummies(data[f].astype(str), prefix=f, drop_first=True, dtype=float)
        for f in fe_names
    ]
    return pd.concat([pd.Series(1.0, index=data.index, name="const"), data["x"], *dummies], axis=1)


def _fit_logit(data: pd.DataFrame, fe_names: list[str], alpha: float) -> OddsRatio:
    """Fit y ~ x + C(fe...) and read off x, turning every unidentified case into NaN + note."""
    n = len(data)
    if n == 0 or data["y"].nunique() < 2:
        return _nan_odds_ratio(n, "outcome has no variation")
    if data["x"].nunique() < 2:
        return _nan_odds_ratio(n, "predictor has no variation")
    # Imported here: the GLM machinery costs about a second per process, and most stages that
    # import this module (tracking, reports) never fit a model.
    from statsmodels.genmod.families import Binomial
    from statsmodels.genmod.generalized_linear_model import GLM
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationWarning

    model = GLM(data["y"], _design(data, fe_names), family=Binomial())
    # GLM solves with a pseudo-inverse, so collinearity (e.g. a dimension constant within each
    # continent) would silently give an arbitrary beta instead of an error.
    if np.linalg.matrix_rank(model.exog) < model.exog.shape[1]:
        return _nan_odds_ratio(n, "predictor is collinear with the fixed effects")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerfectSeparationWarning)
        warnings.simplefilter("error", ConvergenceWarning)
        try:
            res = model.fit()
        except PerfectSeparationWarning as exc:
            return _nan_odds_ratio(n, f"perfect separation: {exc}")
        except ConvergenceWarning as exc:
            return _nan_odds_ratio(n, f"did not converge: {exc}")
    mu = np.asarray(res.fittedvalues)
    if (mu < _SEPARATION_EPS).any() or (mu > 1 - _SEPARATION_EPS).any():
        return _nan_odds_ratio(n, "quasi-complete separation: fitted probabilities of 0 or 1")
    beta, (low, high) = res.params["x"], res.conf_int(alpha=alpha).loc["x"]
    if not np.isfinite([beta, low, high]).all():
        return _nan_odds_ratio(n, "non-finite estimate")
    return OddsRatio(
        float(np.exp(beta)), float(np.exp(low)), float(np.exp(high)), float(res.pvalues["x"]), n
    )


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float:
    """Cohen's kappa between two annotators' labels on the same items.

    The confusion table is built over the union of labels, so a category one annotator never
    used still counts as disagreement rather than being silently dropped.

    Args:
        a: First annotator's labels.
        b: Second annotator's labels, aligned with ``a``.

    Returns:
        Kappa; NaN when chance agreement is 1 (both used a single identical label) or no items.

    Raises:
        ValueError: If the sequences differ in length.
    """
    if len(a) != len(b):
        raise ValueError(f"cohen_kappa: label lists differ in length ({len(a)} vs {len(b)})")
    labels = sorted(set(a) | set(b))
    if len(labels) < 2:
        return float("nan")
    table = pd.crosstab(
        pd.Categorical(list(a), categories=labels),
        pd.Categorical(list(b), categories=labels),
        dropna=False,
    ).to_numpy()
    from statsmodels.stats.inter_rater import cohens_kappa

    return float(cohens_kappa(table, return_results=False))


def icc_2_1(ratings: np.ndarray) -> float:
    """ICC(2,1): two-way random effects, absolute agreement, single rater.

    Raters are a sample of possible raters and systematic rater offsets count as disagreement,
    which is what "would another annotator give the same score" asks. statsmodels has no ICC,
    so this is Shrout & Fleiss (1979), Psychological Bulletin 86(2), Table 1:

        ICC(2,1) = (BMS - EMS) / (BMS + (k - 1) EMS + k (JMS - EMS) / n)

    with BMS, JMS, EMS the between-targets, between-raters and residual mean squares of the
    two-way ANOVA without replication.

    Args:
        ratings: Array of shape (n targets, k raters), complete (no NaN).

    Returns:
        ICC(2,1); NaN when the denominator is zero (all ratings identical).

    Raises:
        ValueError: If the array is not 2-D with at least 2 targets and 2 raters, or has NaN.
    """
    y = np.asarray(ratings, dtype=float)
    if y.ndim != 2 or min(y.shape) < 2:
        raise ValueError(f"icc_2_1 needs an (n >= 2, k >= 2) matrix, got shape {y.shape}")
    if np.isnan(y).any():
        raise ValueError("icc_2_1 needs complete ratings (no NaN)")
    n, k = y.shape
    grand = y.mean()
    ss_rows = k * np.sum((y.mean(axis=1) - grand) ** 2)
    ss_cols = n * np.sum((y.mean(axis=0) - grand) ** 2)
    ss_err = np.sum((y - grand) ** 2) - ss_rows - ss_cols
    bms, jms, ems = ss_rows / (n - 1), ss_cols / (k - 1), ss_err / ((n - 1) * (k - 1))
    denom = bms + (k - 1) * ems + k * (jms - ems) / n
    return float((bms - ems) / denom) if denom != 0 else float("nan")


def precision_recall(pred: Sequence[bool], gold: Sequence[bool]) -> tuple[float, float]:
    """Precision and recall of the judge's Acceptable label against the human label.

    Precision says how far an Acceptable verdict from the judge can be trusted; recall says how
    much humanly acceptable material the judge would keep.

    Args:
        pred: Judge says Acceptable.
        gold: Human says Acceptable, aligned with ``pred``.

    Returns:
        (precision, recall); each NaN when its denominator is zero.

    Raises:
        ValueError: If the sequences differ in length.
    """
    if len(pred) != len(gold):
        raise ValueError(f"precision_recall: lengths differ ({len(pred)} vs {len(gold)})")
    p = np.asarray(pred, dtype=bool)
    g = np.asarray(gold, dtype=bool)
    tp = int(np.sum(p & g))
    n_pred, n_gold = int(p.sum()), int(g.sum())
    precision = tp / n_pred if n_pred else float("nan")
    recall = tp / n_gold if n_gold else float("nan")
    return precision, recall


def chi_square_uniform(counts: Sequence[int]) -> float:
    """P-value of a chi-square goodness-of-fit test against equal counts.

    Checks that shuffling left gold answers uniform over letters, so position bias cannot pass
    for knowledge.

    Args:
        counts: Gold answers per letter (include letters with zero count).

    Returns:
        The p-value; NaN with fewer than two categories or no observations.
    """
    obs = np.asarray(counts, dtype=float)
    if obs.size < 2 or obs.sum() == 0:
        return float("nan")
    from scipy import stats as sps

    return float(sps.chisquare(obs).pvalue)


def max_pairwise_gap(values: Mapping[str, float]) -> float:
    """Largest difference between any two values (max - min), ignoring NaN.

    Used for robustness across shuffle seeds: the result is in the units of the values, so pass
    accuracies in percentage points to compare with a pp threshold.

    Args:
        values: Metric per run (e.g. per seed).

    Returns:
        The gap; NaN with fewer than two finite values.
    """
    finite = [v for v in values.values() if np.isfinite(v)]
    return float(max(finite) - min(finite)) if len(finite) >= 2 else float("nan")
