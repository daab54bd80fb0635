"""Tests for cultureqa.analysis.stats against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats as sps
from statsmodels.stats.contingency_tables import Table
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from cultureqa.analysis.stats import (
    accuracy_table,
    bh_fdr,
    chi_square_uniform,
    cochran_armitage_trend,
    cohen_kappa,
    icc_2_1,
    logit_odds_ratio,
    max_pairwise_gap,
    precision_recall,
    wilson_ci,
)

Z95 = 1.959963984540054

# Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges.
SHROUT_FLEISS = np.array(
    [
        [9, 2, 5, 8],
        [6, 1, 3, 2],
        [8, 4, 6, 8],
        [7, 1, 2, 6],
        [10, 5, 6, 9],
        [6, 2, 4, 7],
    ]
)

# A 6-bin (WEIRD bins 0-5) table with a rising proportion.
CA_SUCCESSES = [3, 8, 12, 20, 25, 30]
CA_TOTALS = [40, 45, 50, 55, 50, 45]


def wilson_closed_form(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson (1927) interval written out, independent of statsmodels."""
    p = k / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


def ca_z_by_loops(x: list[int], n: list[int], w: list[float]) -> float:
    """Agresti's Cochran-Armitage z with plain loops, via the x_i*N - n_i*X form."""
    big_n = 0
    big_x = 0
    for xi, ni in zip(x, n, strict=True):
        big_n += ni
        big_x += xi
    t = 0.0
    s1 = 0.0
    s2 = 0.0
    for xi, ni, wi in zip(x, n, w, strict=True):
        t += wi * (xi * big_n - ni * big_x)
        s1 += ni * wi * wi
        s2 += ni * wi
    p = big_x / big_n
    # T here is N times the centred statistic, so its variance carries N^2.
    var_t = big_n**2 * p * (1 - p) * (s1 - s2 * s2 / big_n)
    return t / math.sqrt(var_t)


# --- wilson_ci ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "n", "alpha"),
    [(0, 10, 0.05), (10, 10, 0.05), (3, 10, 0.05), (50, 200, 0.05), (1, 1, 0.05), (7, 30, 0.1)],
)
def test_wilson_matches_statsmodels(k: int, n: int, alpha: float) -> None:
    expected = proportion_confint(k, n, alpha=alpha, method="wilson")
    assert wilson_ci(k, n, alpha) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (10, 10), (3, 10), (50, 200)])
def test_wilson_matches_closed_form(k: int, n: int) -> None:
    assert wilson_ci(k, n) == pytest.approx(wilson_closed_form(k, n), abs=1e-12)


def test_wilson_boundaries_stay_in_unit_interval() -> None:
    low0, high0 = wilson_ci(0, 25)
    low1, high1 = wilson_ci(25, 25)
    assert low0 == 0.0 and 0 < high0 < 1
    assert 0 < low1 < 1 and high1 == 1.0


def test_wilson_empty_is_nan_and_bad_counts_raise() -> None:
    assert all(math.isnan(v) for v in wilson_ci(0, 0))
    with pytest.raises(ValueError, match="successes"):
        wilson_ci(5, 3)
    with pytest.raises(ValueError, match="successes"):
        wilson_ci(-1, 3)


# --- accuracy_table ----------------------------------------------------------------------------


def test_accuracy_table_hand_built() -> None:
    df = pd.DataFrame(
        {
            "model": ["A", "A", "A", "A", "B", "B"],
            "lang": ["en", "en", "en", "id", "en", "en"],
            "correct": [True, True, False, True, False, False],
        }
    )
    out = accuracy_table(df, ["model", "lang"])
    assert list(out.columns) == ["model", "lang", "n", "correct", "accuracy", "ci_low", "ci_high"]
    assert out[["model", "lang"]].values.tolist() == [["A", "en"], ["A", "id"], ["B", "en"]]
    assert out["n"].tolist() == [3, 1, 2]
    assert out["correct"].tolist() == [2, 1, 0]
    assert out["accuracy"].tolist() == pytest.approx([2 / 3, 1.0, 0.0])
    for (k, n), low, high in zip(
        [(2, 3), (1, 1), (0, 2)], out["ci_low"], out["ci_high"], strict=True
    ):
        assert (low, high) == pytest.approx(wilson_closed_form(k, n), abs=1e-12)


def test_accuracy_table_overall_row_and_custom_column() -> None:
    df = pd.DataFrame({"hit": [1, 0, 1, 1]})
    out = accuracy_table(df, [], correct="hit")
    assert len(out) == 1
    assert out.loc[0, "n"] == 4 and out.loc[0, "correct"] == 3
    assert out.loc[0, "accuracy"] == pytest.approx(0.75)
    assert (out.loc[0, "ci_low"], out.loc[0, "ci_high"]) == pytest.approx(wilson_closed_form(3, 4))


def test_accuracy_table_keeps_missing_group_keys() -> None:
    df = pd.DataFrame({"province": ["Bali", None, None], "correct": [True, False, True]})
    out = accuracy_table(df, ["province"])
    assert out["n"].sum() == 3
    assert out.loc[out["province"].isna(), "n"].item() == 2


def test_accuracy_table_rejects_missing_correct() -> None:
    df = pd.DataFrame({"g": ["a", "b"], "correct": [True, None]})
    with pytest.raises(ValueError, match="parse errors"):
        accuracy_table(df, ["g"])
    with pytest.raises(KeyError, match="nope"):
        accuracy_table(df, ["nope"])


def test_accuracy_table_100k_rows() -> None:
    rng = np.random.default_rng(7)
    n = 100_000
    df = pd.DataFrame(
        {
            "model": rng.choice([f"m{i}" for i in range(8)], n),
            "clue": rng.choice(["entity", "geo", "temporal", "common", "comp", "inter"], n),
            "lang": rng.choice(["en", "id"], n),
            "province": rng.choice([f"p{i}" for i in range(11)], n),
            "correct": rng.random(n) < 0.6,
        }
    )
    by = ["model", "clue", "lang", "province"]
    out = accuracy_table(df, by)
    assert out["n"].sum() == n
    assert len(out) == 8 * 6 * 2 * 11
    expected = df.groupby(by)["correct"].mean().to_numpy()
    np.testing.assert_allclose(out["accuracy"].to_numpy(), expected)
    assert (out["ci_low"] <= out["accuracy"]).all() and (out["accuracy"] <= out["ci_high"]).all()


# --- cochran_armitage_trend --------------------------------------------------------------------


def test_cochran_armitage_matches_explicit_loops() -> None:
    result = cochran_armitage_trend(CA_SUCCESSES, CA_TOTALS)
    assert result.z == pytest.approx(ca_z_by_loops(CA_SUCCESSES, CA_TOTALS, list(range(6))))
    assert result.p_value == pytest.approx(2 * sps.norm.sf(abs(result.z)))
    assert result.endpoint_delta_pp == pytest.approx((30 / 45 - 3 / 40) * 100)


def test_cochran_armitage_squared_is_logistic_score_test() -> None:
    # The CA statistic is the score test of slope = 0 in a logistic model on the scores.
    scores = np.repeat(np.arange(6), CA_TOTALS).astype(float)
    y = np.concatenate(
        [[1] * x + [0] * (n - x) for x, n in zip(CA_SUCCESSES, CA_TOTALS, strict=True)]
    )
    null_fit = sm.GLM(y, np.ones((len(y), 1)), family=sm.families.Binomial()).fit()
    score = null_fit.score_test(exog_extra=scores[:, None])
    result = cochran_armitage_trend(CA_SUCCESSES, CA_TOTALS)
    assert result.z**2 == pytest.approx(float(np.squeeze(score.statistic)), rel=1e-9)
    assert result.p_value == pytest.approx(float(np.squeeze(score.pvalue)), rel=1e-9)


def test_cochran_armitage_vs_linear_by_linear() -> None:
    # statsmodels' linear-by-linear test uses the permutation variance (N - 1 instead of N).
    table = np.column_stack([np.subtract(CA_TOTALS, CA_SUCCESSES), CA_SUCCESSES])
    big_n = sum(CA_TOTALS)
    lbl = Table(table).test_ordinal_association()
    result = cochran_armitage_trend(CA_SUCCESSES, CA_TOTALS)
    assert result.z == pytest.approx(lbl.zscore * math.sqrt(big_n / (big_n - 1)), rel=1e-9)


def test_cochran_armitage_empty_bins_keep_their_weight() -> None:
    x = [3, 0, 12, 20, 0, 30]
    n = [40, 0, 50, 55, 0, 45]
    result = cochran_armitage_trend(x, n)
    assert result.z == pytest.approx(ca_z_by_loops([3, 12, 20, 30], [40, 50, 55, 45], [0, 2, 3, 5]))
    assert result.endpoint_delta_pp == pytest.approx((30 / 45 - 3 / 40) * 100)


def test_cochran_armitage_sign_and_score_invariance() -> None:
    falling = cochran_armitage_trend(CA_SUCCESSES[::-1], CA_TOTALS[::-1])
    assert falling.z < 0 and falling.endpoint_delta_pp < 0
    base = cochran_armitage_trend(CA_SUCCESSES, CA_TOTALS)
    shifted = cochran_armitage_trend(CA_SUCCESSES, CA_TOTALS, scores=[10 + 2 * b for b in range(6)])
    assert shifted.z == pytest.approx(base.z)


def test_cochran_armitage_degenerate_is_nan() -> None:
    none = cochran_armitage_trend([0, 0, 0], [10, 12, 9])
    assert math.isnan(none.z) and math.isnan(none.p_value)
    assert none.endpoint_delta_pp == pytest.approx(0.0)
    single = cochran_armitage_trend([0, 4, 0], [0, 10, 0])
    assert math.isnan(single.z) and math.isnan(single.endpoint_delta_pp)
    with pytest.raises(ValueError, match="lengths"):
        cochran_armitage_trend([1, 2], [3, 4, 5])
    with pytest.raises(ValueError, match="successes"):
        cochran_armitage_trend([5, 2], [3, 4])


# --- bh_fdr ------------------------------------------------------------------------------------


def test_bh_fdr_hand_computed() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 -> p*m/rank 0.02, 0.02, 0.04, 0.04 (already monotone).
    reject, q = bh_fdr([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(q, [0.02, 0.04, 0.04, 0.02])
    assert reject.tolist() == [True, True, True, True]
    reject, _ = bh_fdr([0.01, 0.04, 0.03, 0.005], alpha=0.03)
    assert reject.tolist() == [True, False, False, True]
    # Step-up monotonicity: 0.02*2/1 = 0.04 is capped by 0.03*2/2 = 0.03.
    _, q = bh_fdr([0.02, 0.03])
    np.testing.assert_allclose(q, [0.03, 0.03])


def test_bh_fdr_matches_statsmodels_and_skips_nan() -> None:
    rng = np.random.default_rng(3)
    p = rng.uniform(0, 0.2, 12)
    expected_reject, expected_q, _, _ = multipletests(p, alpha=0.05, method="fdr_bh")
    reject, q = bh_fdr(p)
    np.testing.assert_allclose(q, expected_q)
    assert reject.tolist() == expected_reject.tolist()
    with_nan = np.insert(p, [0, 5], np.nan)
    reject_nan, q_nan = bh_fdr(with_nan)
    assert np.isnan(q_nan[[0, 6]]).all() and not reject_nan[[0, 6]].any()
    np.testing.assert_allclose(np.delete(q_nan, [0, 6]), expected_q)


def test_bh_fdr_empty_and_all_nan() -> None:
    reject, q = bh_fdr([])
    assert reject.shape == q.shape == (0,)
    reject, q = bh_fdr([float("nan")] * 2)
    assert not reject.any() and np.isnan(q).all()


# --- logit_odds_ratio --------------------------------------------------------------------------


def two_by_two_frame(a: int, b: int, c: int, d: int) -> pd.DataFrame:
    """Exposed events a, exposed non-events b, unexposed events c, unexposed non-events d."""
    x = [1] * (a + b) + [0] * (c + d)
    y = [1] * a + [0] * b + [1] * c + [0] * d
    return pd.DataFrame({"err B": y, "W level": x})


def test_logit_odds_ratio_two_by_two_is_ad_over_bc() -> None:
    a, b, c, d = 30, 20, 15, 35
    result = logit_odds_ratio(two_by_two_frame(a, b, c, d), "err B", "W level")
    se = math.sqrt(1 / a + 1 / b + 1 / c + 1 / d)  # Woolf's standard error of log OR
    log_or = math.log(a * d / (b * c))
    assert result.odds_ratio == pytest.approx(a * d / (b * c), rel=1e-6)
    assert result.ci_low == pytest.approx(math.exp(log_or - Z95 * se), rel=1e-6)
    assert result.ci_high == pytest.approx(math.exp(log_or + Z95 * se), rel=1e-6)
    # IRLS stops on a deviance tolerance, which leaves ~1e-6 relative error in the tail p.
    assert result.p_value == pytest.approx(2 * sps.norm.sf(log_or / se), rel=1e-5)
    assert result.n == a + b + c + d and result.note == ""


def error_frame(seed: int = 11, n: int = 600) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    level = rng.integers(0, 4, n)
    continent = rng.choice(["Africa", "Asia", "Europe", "Latin America"], n)
    shift = pd.Series(continent).map(
        {"Africa": 0.3, "Asia": 0.0, "Europe": -0.4, "Latin America": 0.2}
    )
    logit = -0.8 + 0.35 * level + shift.to_numpy()
    y = rng.random(n) < 1 / (1 + np.exp(-logit))
    return pd.DataFrame({"error B": y, "I level": level, "continent": continent})


def test_logit_odds_ratio_matches_direct_glm_with_fixed_effects() -> None:
    df = error_frame()
    dummies = pd.get_dummies(df["continent"], drop_first=True, dtype=float)
    exog = sm.add_constant(pd.concat([df[["I level"]].astype(float), dummies], axis=1))
    fit = sm.GLM(df["error B"].astype(float), exog, family=sm.families.Binomial()).fit()
    low, high = fit.conf_int().loc["I level"]
    result = logit_odds_ratio(df, "error B", "I level", fixed_effects=["continent"])
    assert result.odds_ratio == pytest.approx(math.exp(fit.params["I level"]), rel=1e-6)
    assert (result.ci_low, result.ci_high) == pytest.approx(
        (math.exp(low), math.exp(high)), rel=1e-6
    )
    assert result.p_value == pytest.approx(fit.pvalues["I level"], rel=1e-6)
    assert result.n == len(df)


def test_logit_odds_ratio_without_fixed_effects_differs_from_with() -> None:
    df = error_frame()
    fit = sm.GLM(
        df["error B"].astype(float),
        sm.add_constant(df[["I level"]].astype(float)),
        family=sm.families.Binomial(),
    ).fit()
    plain = logit_odds_ratio(df, "error B", "I level")
    assert plain.odds_ratio == pytest.approx(math.exp(fit.params["I level"]), rel=1e-6)


def test_logit_odds_ratio_complete_separation_gives_nan_note() -> None:
    df = pd.DataFrame({"y": [0, 0, 0, 1, 1, 1], "x": [1, 2, 3, 4, 5, 6]})
    result = logit_odds_ratio(df, "y", "x")
    assert math.isnan(result.odds_ratio) and math.isnan(result.p_value)
    assert "separation" in result.note and result.n == 6


def test_logit_odds_ratio_quasi_separation_gives_nan_note() -> None:
    rng = np.random.default_rng(0)
    x = np.repeat([0, 1, 2], 50)
    y = np.where(x == 0, False, rng.random(150) < 0.5)
    result = logit_odds_ratio(pd.DataFrame({"y": y, "x": x}), "y", "x")
    # With a numeric predictor this is not separated; with level 0 alone it is.
    assert math.isfinite(result.odds_ratio)
    two_level = pd.DataFrame({"y": y[x < 2], "x": x[x < 2]})
    separated = logit_odds_ratio(two_level, "y", "x")
    assert math.isnan(separated.odds_ratio) and "separation" in separated.note


def test_logit_odds_ratio_drops_constant_fixed_effect_levels() -> None:
    df = error_frame()
    oceania = pd.DataFrame({"error B": False, "I level": [0, 1, 2, 3] * 5, "continent": "Oceania"})
    with_oceania = pd.concat([df, oceania], ignore_index=True)
    result = logit_odds_ratio(with_oceania, "error B", "I level", fixed_effects=["continent"])
    reference = logit_odds_ratio(df, "error B", "I level", fixed_effects=["continent"])
    assert result.odds_ratio == pytest.approx(reference.odds_ratio, rel=1e-6)
    assert result.n == len(df) and "dropped 20 rows" in result.note


def test_logit_odds_ratio_collinear_with_fixed_effects_gives_nan_note() -> None:
    # W is a country property; if it is constant within every continent the continent
    # dummies absorb it and beta is not identified.
    df = error_frame()
    df["W"] = (df["continent"] == "Europe").astype(int)
    result = logit_odds_ratio(df, "error B", "W", fixed_effects=["continent"])
    assert math.isnan(result.odds_ratio) and "collinear" in result.note
    assert math.isfinite(logit_odds_ratio(df, "error B", "W").odds_ratio)


def test_logit_odds_ratio_no_variation_and_bad_input() -> None:
    flat = pd.DataFrame({"y": [0, 0, 0], "x": [0, 1, 2]})
    assert logit_odds_ratio(flat, "y", "x").note == "outcome has no variation"
    const_x = pd.DataFrame({"y": [0, 1, 0], "x": [1, 1, 1]})
    assert logit_odds_ratio(const_x, "y", "x").note == "predictor has no variation"
    with pytest.raises(ValueError, match="binary"):
        logit_odds_ratio(pd.DataFrame({"y": [0, 2], "x": [0, 1]}), "y", "x")
    with pytest.raises(ValueError, match="numeric"):
        logit_odds_ratio(pd.DataFrame({"y": [0, 1], "x": ["a", "b"]}), "y", "x")


# --- cohen_kappa -------------------------------------------------------------------------------


def test_cohen_kappa_two_by_two_hand_computed() -> None:
    # 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: po = 0.7, pe = 0.5, kappa = 0.4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_cohen_kappa_with_unused_category() -> None:
    # po = 4/6; pe = (3*3 + 2*3 + 1*0) / 36 = 15/36; kappa = (24 - 15) / (36 - 15) = 3/7.
    a = ["OK", "OK", "Minor", "Minor", "Significant", "OK"]
    b = ["OK", "Minor", "Minor", "Minor", "OK", "OK"]
    assert cohen_kappa(a, b) == pytest.approx(3 / 7)


def test_cohen_kappa_edge_cases() -> None:
    assert cohen_kappa(["OK", "Minor"], ["OK", "Minor"]) == pytest.approx(1.0)
    assert math.isnan(cohen_kappa(["OK", "OK"], ["OK", "OK"]))
    with pytest.raises(ValueError, match="length"):
        cohen_kappa(["OK"], ["OK", "OK"])


# --- icc_2_1 -----------------------------------------------------------------------------------


def test_icc_2_1_shrout_fleiss_example() -> None:
    assert round(icc_2_1(SHROUT_FLEISS), 2) == 0.29


def test_icc_2_1_matches_anova_mean_squares() -> None:
    n, k = SHROUT_FLEISS.shape
    long = pd.DataFrame(
        [(t, r, float(SHROUT_FLEISS[t, r])) for t in range(n) for r in range(k)],
        columns=["target", "rater", "score"],
    )
    fit = sm.formula.ols("score ~ C(target) + C(rater)", long).fit()
    table = sm.stats.anova_lm(fit)
    bms = table.loc["C(target)", "mean_sq"]
    jms = table.loc["C(rater)", "mean_sq"]
    ems = table.loc["Residual", "mean_sq"]
    # Shrout & Fleiss report BMS 11.24, JMS 32.49, EMS 1.02.
    assert (bms, jms, ems) == pytest.approx((11.24, 32.49, 1.02), abs=0.01)
    expected = (bms - ems) / (bms + (k - 1) * ems + k * (jms - ems) / n)
    assert icc_2_1(SHROUT_FLEISS) == pytest.approx(expected)


def test_icc_2_1_absolute_agreement_penalises_rater_offset() -> None:
    targets = np.array([1.0, 3.0, 5.0, 7.0])
    assert icc_2_1(np.column_stack([targets, targets])) == pytest.approx(1.0)
    assert icc_2_1(np.column_stack([targets, targets + 2])) < 1.0
    with pytest.raises(ValueError, match="shape"):
        icc_2_1(np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="NaN"):
        icc_2_1(np.array([[1.0, np.nan], [2.0, 3.0]]))


# --- precision_recall, chi_square_uniform, max_pairwise_gap ------------------------------------


def test_precision_recall_hand_computed() -> None:
    pred = [True, True, True, True, False, False]
    gold = [True, False, False, True, True, False]
    assert precision_recall(pred, gold) == pytest.approx((2 / 4, 2 / 3))
    precision, recall = precision_recall([False, False], [True, False])
    assert math.isnan(precision) and recall == 0.0
    with pytest.raises(ValueError, match="lengths"):
        precision_recall([True], [True, False])


def test_chi_square_uniform() -> None:
    assert chi_square_uniform([10, 10, 10]) == pytest.approx(1.0)
    # chi2 = (100 + 100 + 0) / 20 = 10 on 2 df; the 2-df survival function is exp(-x / 2).
    assert chi_square_uniform([30, 10, 20]) == pytest.approx(math.exp(-5))
    assert math.isnan(chi_square_uniform([0, 0, 0]))
    assert math.isnan(chi_square_uniform([5]))


def test_max_pairwise_gap() -> None:
    assert max_pairwise_gap({"60": 71.5, "40": 69.0}) == pytest.approx(2.5)
    assert max_pairwise_gap({"a": 0.5, "b": 0.9, "c": 0.7, "d": float("nan")}) == pytest.approx(0.4)
    assert math.isnan(max_pairwise_gap({"60": 70.0}))
