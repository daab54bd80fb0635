"""Every pooled statistic of the cross-cultural report against an independent computation.

A small synthetic prediction table (three models, 300 cases, seeded) goes through ``analyze``;
each pooled number is then recomputed here from the raw rows with other code: crosstabs and
statsmodels' linear-by-linear test (rescaled from the permutation variance N − 1 to the
binomial N) for Cochran–Armitage, the closed-form Benjamini–Hochberg step-up for q-values,
``statsmodels.discrete.Logit`` with explicit dummies for the odds ratios, and plain counting for
the bin table and macro accuracy.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from statsmodels.stats.contingency_tables import Table

from cultureqa.cases.analysis import POOLED, WITHHELD, AnalysisOptions, analyze
from cultureqa.cases.ingest import DOMAINS
from cultureqa.cases.weird import weird_score_sixths

MODELS = ("m1", "m2", "m3")
CONTINENTS = ("Africa", "Asia", "Europe")
N_CASES = 300


def _cases(rng: np.random.Generator) -> pd.DataFrame:
    dims = np.column_stack([rng.integers(0, k, N_CASES) for k in (2, 3, 4, 4, 3)])
    sixths = np.array([weird_score_sixths(*row) for row in dims])
    topics = [json.dumps(["food", "law"] if i % 3 == 0 else ["food"]) for i in range(N_CASES)]
    return pd.DataFrame({
        "case_id": [f"c{i:03d}" for i in range(N_CASES)],
        "domain": rng.choice(DOMAINS[:4], N_CASES), "continent": rng.choice(CONTINENTS, N_CASES),
        "country": rng.choice([f"Country {i}" for i in range(12)], N_CASES),
        **{d: dims[:, i] for i, d in enumerate("WEIRD")},
        "weird_score": sixths / 6, "weird_bin": sixths // 6, "topic_categories": topics,
    })  # fmt: skip


def synthetic() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    cases = _cases(rng)
    frames = []
    for m, model in enumerate(MODELS):
        p = 0.3 + 0.05 * m + 0.08 * cases["weird_bin"].to_numpy()
        correct = rng.random(N_CASES) < p
        kinds = np.where(correct, "F", rng.choice(list("ABCDE"), N_CASES))
        frames.append(cases.assign(model=model, kind="model", seed=60, pred_type=kinds,
                                   correct=correct, status="ok"))  # fmt: skip
    return pd.concat(frames, ignore_index=True)


OPTIONS = AnalysisOptions(primary_seed=60, min_topic_n=50)


@pytest.fixture(scope="module")
def tables() -> dict[str, pd.DataFrame]:
    return analyze(synthetic(), OPTIONS).tables


def _ca(rows: pd.DataFrame, level: str, event: pd.Series) -> tuple[float, float]:
    """(z, Δpp) of a CA trend from a crosstab and statsmodels' linear-by-linear test."""
    tab = pd.crosstab(rows[level], event.loc[rows.index]).reindex(columns=[False, True])
    scores = tab.index.to_numpy(float)
    big_n = tab.to_numpy().sum()
    lbl = Table(tab.to_numpy(), shift_zeros=False).test_ordinal_association(row_scores=scores)
    rates = tab[True] / tab.sum(axis=1)
    return lbl.zscore * math.sqrt(big_n / (big_n - 1)), (rates.iloc[-1] - rates.iloc[0]) * 100


def _bh(p: np.ndarray) -> np.ndarray:
    """Closed-form Benjamini–Hochberg: q_(i) = min over j ≥ i of p_(j)·m/j."""
    order = np.argsort(p)
    ranked = p[order] * len(p) / np.arange(1, len(p) + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty_like(q)
    out[order] = np.minimum(q, 1)
    return out


def test_pooled_bin_trends_match_linear_by_linear(tables) -> None:  # type: ignore[no-untyped-def]
    rows = synthetic()
    pooled = tables["weird_trends"].query("scope == 'pooled'").set_index("error_type")
    assert set(pooled["model"]) == {POOLED}
    z, delta = _ca(rows, "weird_bin", rows["correct"])
    assert pooled.loc["", "z"] == pytest.approx(z, rel=1e-9)
    assert pooled.loc["", "delta_pp"] == pytest.approx(delta)
    errors = rows[~rows["correct"]]
    for kind in "ABCDE":
        z, delta = _ca(errors, "weird_bin", errors["pred_type"] == kind)
        assert pooled.loc[kind, "z"] == pytest.approx(z, rel=1e-9)
        assert pooled.loc[kind, "delta_pp"] == pytest.approx(delta)
    shares = pooled.query("measure == 'error_share'")
    np.testing.assert_allclose(shares["q_value"], _bh(shares["p_value"].to_numpy()))


def test_per_model_trends_are_their_own_family(tables) -> None:  # type: ignore[no-untyped-def]
    rows = synthetic().query("model == 'm2'")
    m2 = tables["weird_trends"].query("model == 'm2' and measure == 'accuracy'").iloc[0]
    assert m2["z"] == pytest.approx(_ca(rows, "weird_bin", rows["correct"])[0], rel=1e-9)
    per_model = tables["weird_trends"].query("scope == 'model' and measure == 'accuracy'")
    np.testing.assert_allclose(per_model["q_value"], _bh(per_model["p_value"].to_numpy()))


def test_domain_and_topic_trends(tables) -> None:  # type: ignore[no-untyped-def]
    rows = synthetic()
    domain = DOMAINS[2]
    part = rows[rows["domain"] == domain]
    got = tables["trends_by_domain"].query("domain == @domain and measure == 'accuracy'").iloc[0]
    z, delta = _ca(part, "weird_bin", part["correct"])
    assert (got["z"], got["delta_pp"]) == (pytest.approx(z, rel=1e-9), pytest.approx(delta))
    law = rows[rows["topic_categories"].str.contains('"law"')]
    got = tables["trends_by_topic"].query("topic_category == 'law' and measure == 'accuracy'")
    assert got.iloc[0]["z"] == pytest.approx(_ca(law, "weird_bin", law["correct"])[0], rel=1e-9)
    acc = tables["trends_by_domain"].query("measure == 'accuracy'")
    np.testing.assert_allclose(acc["q_value"], _bh(acc["p_value"].to_numpy()))


def test_dimension_trends_with_endpoint_rates(tables) -> None:  # type: ignore[no-untyped-def]
    rows = synthetic()
    got = tables["dimension_trends"].query("dimension == 'I' and measure == 'accuracy'").iloc[0]
    z, delta = _ca(rows, "I", rows["correct"])
    assert got["z"] == pytest.approx(z, rel=1e-9) and got["delta_pp"] == pytest.approx(delta)
    assert got["p_low"] == pytest.approx(rows.loc[rows["I"] == 0, "correct"].mean())
    assert got["p_high"] == pytest.approx(rows.loc[rows["I"] == 3, "correct"].mean())
    assert (got["level_low"], got["level_high"]) == (0, 3)
    assert set(tables["dimension_trends"]["dimension"]) == set("WEIRD")


@pytest.mark.parametrize("fixed_effects", ["none", "continent"])
def test_pooled_odds_ratios_match_discrete_logit(tables, fixed_effects: str) -> None:  # type: ignore[no-untyped-def]
    errors = synthetic().query("not correct")
    y = (errors["pred_type"] == "C").astype(float)
    x = errors[["R"]].astype(float)
    if fixed_effects == "continent":
        x = x.join(pd.get_dummies(errors["continent"], drop_first=True, dtype=float))
    fit = sm.Logit(y, sm.add_constant(x)).fit(disp=0)
    low, high = np.exp(fit.conf_int().loc["R"])
    got = (
        tables["dimension_logits"]
        .query(
            "model == @POOLED and dimension == 'R' and error_type == 'C'"
            " and fixed_effects == @fixed_effects"
        )
        .iloc[0]
    )
    assert got["odds_ratio"] == pytest.approx(math.exp(fit.params["R"]), rel=1e-6)
    assert (got["ci_low"], got["ci_high"]) == (
        pytest.approx(low, rel=1e-6),
        pytest.approx(high, rel=1e-6),
    )
    assert got["n"] == len(errors)


def _beta(errors: pd.DataFrame, dim: str, kind: str, continent: bool) -> float:
    y = (errors["pred_type"] == kind).astype(float)
    x = errors[[dim]].astype(float)
    if continent:
        x = x.join(pd.get_dummies(errors["continent"], drop_first=True, dtype=float))
    return float(sm.Logit(y, sm.add_constant(x)).fit(disp=0).params[dim])


@pytest.mark.parametrize(("dim", "kind"), [("R", "C"), ("W", "E"), ("I", "B")])
def test_shrinkage_matches_two_direct_logit_fits(tables, dim: str, kind: str) -> None:  # type: ignore[no-untyped-def]
    errors = synthetic().query("not correct")
    none, fe = _beta(errors, dim, kind, False), _beta(errors, dim, kind, True)
    got = (
        tables["odds_ratio_shrinkage"]
        .query("model == @POOLED and dimension == @dim and error_type == @kind")
        .iloc[0]
    )
    assert got["odds_ratio_none"] == pytest.approx(math.exp(none), rel=1e-6)
    assert got["odds_ratio_continent"] == pytest.approx(math.exp(fe), rel=1e-6)
    raw, adjusted = math.exp(none), math.exp(fe)
    if got["shrinkage_withheld"]:
        assert math.isnan(got["shrinkage_pct"]) and got["shrinkage_withheld"] in WITHHELD
        assert got["shrinkage"] == f"n/a ({got['shrinkage_withheld']})"
    else:
        expected = 100 * (raw - adjusted) / (raw - 1)
        assert got["shrinkage_pct"] == pytest.approx(expected, rel=1e-5)


def test_domain_topics_match_a_hand_count(tables) -> None:  # type: ignore[no-untyped-def]
    cases = synthetic().drop_duplicates("case_id")
    table = tables["domain_topics"].set_index("domain")
    for domain in DOMAINS[:4]:
        part = cases[cases["domain"] == domain]
        law = sum("law" in json.loads(t) for t in part["topic_categories"])
        assert table.loc[domain, "n_cases"] == len(part)
        assert table.loc[domain, "top_topics"] == f"food ({len(part)}), law ({law})"


def test_bin_table_and_macro_accuracy(tables) -> None:  # type: ignore[no-untyped-def]
    cases = synthetic().drop_duplicates("case_id")
    bins = tables["weird_bins"].set_index("weird_bin")
    for b in range(6):
        part = cases[cases["weird_bin"] == b]
        assert bins.loc[b, "n_cases"] == len(part)
        assert bins.loc[b, "n_countries"] == part["country"].nunique()
    m1 = synthetic().query("model == 'm1'")
    per_domain = [m1.loc[m1["domain"] == d, "correct"].mean() for d in DOMAINS[:4]]
    row = tables["overall"].set_index("model").loc["m1"]
    assert row["macro_accuracy"] == pytest.approx(sum(per_domain) / 10)
    assert row["macro_accuracy_present"] == pytest.approx(np.mean(per_domain))
    assert row["missing_domains"] == ", ".join(DOMAINS[4:])


def test_report_has_every_section_with_csv_and_figures(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cultureqa.cases.report import write_report
    from cultureqa.cases.sections import SECTIONS

    write_report(analyze(synthetic(), OPTIONS), tmp_path)
    text = (tmp_path / "tables.md").read_text(encoding="utf-8")
    for section in SECTIONS:
        assert f"## {section.title}" in text
        assert (tmp_path / "tables" / f"{section.name}.csv").exists(), section.name
    figures = ("weird_bin_counts.png", "dimension_levels.png", "odds_ratios.png",
               "across_models_by_domain.png", "across_models_by_topic.png",
               "across_models_by_continent.png")  # fmt: skip
    for figure in figures:
        assert (tmp_path / figure).stat().st_size > 0
    assert "_Empty" not in text


def test_empty_sections_say_why(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cultureqa.cases.report import read_analysis, write_analysis, write_report

    only_baselines = synthetic().assign(kind="baseline")
    write_analysis(analyze(only_baselines, OPTIONS), tmp_path / "analyze")
    write_report(read_analysis(tmp_path / "analyze"), tmp_path / "report")
    text = (tmp_path / "report" / "tables.md").read_text(encoding="utf-8")
    for title in ("pooled (all models)", "per domain (pooled", "Across models by domain",
                  "Logistic odds ratios per dimension, pooled, no fixed effects"):  # fmt: skip
        body = text.split(title, 1)[1].split("\n## ", 1)[0]
        assert "_Empty: no roster entry of kind 'model'" in body, title
    assert "## Cochran–Armitage trends over WEIRD bins per model\n" in text
