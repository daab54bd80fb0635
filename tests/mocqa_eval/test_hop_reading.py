"""The hop-necessity reading on scripted models with known effects, at the dataset's cell sizes.

Whole tables (:mod:`cultureqa.mocqa.hop_simulation`: 2 languages × 6 clue types at 64–71 items
per cell, plus the two ``all`` rows, as the default build has) of scripted models are simulated
many times at once and read with the production rule (McNemar exact and Tango TOST, Holm over the
table, :func:`decide`; the vectorised twins are tested equal to statsmodels); one simulated table
also goes through :func:`hop_table` itself. The bars are the issue's: false findings in at most
5% of tables without an effect, "no difference" in at most 5% of cells whose effect exceeds the
margin.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import binom
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from cultureqa.mocqa.hop import CONDITIONS, HopConfig, hop_table
from cultureqa.mocqa.hop_reading import (
    CLUE_BEYOND,
    CLUE_MISLEADS,
    CLUE_NEEDED,
    CLUE_UNUSED,
    COMPARISONS,
    DIFFERENCE_READINGS,
    INCONCLUSIVE_CELL,
    NO_DIFFERENCE,
    READINGS,
    STATEMENT_SUFFICES,
    TOO_WEAK,
    above_chance_p,
    below_chance_margin_p,
    decide,
    holm,
    holm_batch,
    mcnemar_exact,
)
from cultureqa.mocqa.hop_simulation import (
    CELL_SIZES,
    TYPES,
    Script,
    read_simulated,
    rows,
    simulate,
)
from cultureqa.mocqa.paired import _restricted_p21, equivalence_p, n_to_decide

TABLES = 400
CLUE_CLAIMS_NONE = (CLUE_UNUSED, *NO_DIFFERENCE)
"""Readings that say the clue changes nothing (clue − none within the margin)."""

SCRIPTS = {
    "clue needed": (Script(statement=0.1, knows=0.8, first_hop=0.9), CLUE_NEEDED),
    "clue misleading": (Script(statement=0.6, knows=0.7, misleads=0.6), CLUE_MISLEADS),
    "clue helps lexically": (Script(statement=0.1, knows=0.2, lexical=0.9), CLUE_BEYOND),
}
"""Effects far beyond the margin: each reads as built in nearly every cell."""
PLUS_18 = Script(statement=0.1, knows=0.5, first_hop=0.6)
"""clue − none = +0.18 (none 0.40, clue 0.58, oracle 0.70): issue 42's first measurement."""
MINUS_20 = Script(statement=0.3, knows=0.5, misleads=0.375)
"""clue − none = −0.20 (none 0.53, clue 0.33, oracle 0.77): issue 42's second measurement."""


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_each_large_effect_reads_as_built_in_95_percent_of_cells(name: str) -> None:
    script, expected = SCRIPTS[name]
    readings = read_simulated(*simulate(script, TABLES, seed=len(name)))
    share = float((readings == expected).mean())
    worst_cell = float((readings == expected).mean(axis=0).min())
    assert share >= 0.95 and worst_cell >= 0.95, (name, share, worst_cell)


def test_the_scripts_have_the_effects_they_are_named_for() -> None:
    plus, minus = PLUS_18.accuracy(), MINUS_20.accuracy()
    assert plus["clue"] - plus["none"] == pytest.approx(0.18)
    assert minus["clue"] - minus["none"] == pytest.approx(-0.20)


@pytest.mark.parametrize(("script", "seed"), [(PLUS_18, 1), (MINUS_20, 2)])
def test_an_effect_beyond_the_margin_reads_no_difference_in_at_most_5_percent_of_cells(
    script: Script, seed: int
) -> None:
    readings = read_simulated(*simulate(script, TABLES, seed=seed))
    assert np.isin(readings, CLUE_CLAIMS_NONE).mean() <= 0.05
    wrong_way = CLUE_MISLEADS if script is PLUS_18 else (CLUE_NEEDED, CLUE_BEYOND)
    assert np.isin(readings, wrong_way).mean() <= 0.01


@pytest.mark.parametrize(("script", "seed"), [(PLUS_18, 1), (MINUS_20, 2)])
def test_without_the_equivalence_test_the_same_tables_misread_far_more_often(
    script: Script, seed: int
) -> None:
    """The gate bites: reading "not shown different" as "no difference" (the rule before
    issue 42) puts the same tables far over the 5% bar."""
    answers, chance = simulate(script, TABLES, seed=seed)
    old = read_simulated(answers, chance, margin=0.999)  # every comparison "within the margin"
    assert np.isin(old, CLUE_CLAIMS_NONE).mean() > 0.2


def test_a_model_without_any_effect_reads_a_difference_in_at_most_5_percent_of_tables() -> None:
    readings = read_simulated(*simulate(Script(), 2000, seed=7))
    assert np.isin(readings, DIFFERENCE_READINGS).any(axis=1).mean() <= 0.05


def test_no_difference_is_read_where_the_items_suffice_to_show_it() -> None:
    """The third reading is reachable: the ``all`` rows (about 400 items) show a clue that does
    nothing as unused and a statement that gives the answer away as sufficient."""
    unused = read_simulated(*simulate(Script(statement=0.5, knows=0.9), 200, seed=5))
    suffices = read_simulated(*simulate(Script(statement=0.7), 200, seed=6))
    all_rows = [TYPES, 2 * TYPES + 1]
    assert (unused[:, all_rows] == CLUE_UNUSED).mean() >= 0.5  # power ≈ 0.7 after Holm over 42
    assert (suffices[:, all_rows] == STATEMENT_SUFFICES).mean() >= 0.9
    assert np.isin(unused, CLUE_MISLEADS).mean() <= 0.01


def test_without_holm_chance_would_read_a_difference_far_more_often() -> None:
    """The gate bites: the same tables read cell by cell at raw p < 0.05 fail the bar."""
    answers, _ = simulate(Script(), 2000, seed=7)
    raw = []
    for a, b in COMPARISONS.values():
        raw.append(mcnemar_exact(rows((answers[a] & ~answers[b]).sum(-1)),
                                 rows((~answers[a] & answers[b]).sum(-1))))  # fmt: skip
    any_raw = (np.stack(raw, axis=-1)[..., :2] < 0.05).any(axis=(1, 2))
    assert any_raw.mean() > 0.2  # the unadjusted rule calls chance a finding in >1 table of 5


def _paired_frame(answers: dict[str, np.ndarray], chance: np.ndarray) -> pd.DataFrame:
    frames = []
    for cell, n in enumerate(CELL_SIZES):
        language, clue_type = ("en", "id")[cell // TYPES], f"type{cell % TYPES}"
        frames.append(pd.DataFrame({
            "item_id": [f"{language}-{clue_type}-{i}" for i in range(n)],
            "language": language, "clue_type": clue_type, "first_hop": True,
            "chance": chance[0, cell, :n],
            **{c: answers[c][0, cell, :n] for c in CONDITIONS},
        }))  # fmt: skip
    return pd.concat(frames)


@pytest.mark.parametrize("script", [SCRIPTS["clue needed"][0], PLUS_18, Script(statement=0.7)])
def test_hop_table_reads_a_simulated_table_as_the_vectorised_rule_does(script: Script) -> None:
    answers, chance = simulate(script, 1, seed=3, options=(2, 3, 4))
    table = hop_table(_paired_frame(answers, chance), HopConfig(bootstrap=200, seed=1), False)
    assert table["reading"].tolist() == read_simulated(answers, chance)[0].tolist()
    for key in COMPARISONS:  # the adjusted p sits beside the raw and is never smaller
        assert (table[f"p_{key}_holm"] >= table[f"p_{key}"] - 1e-12).all()
        inconclusive = table[f"reading_{key}"] == "inconclusive"
        assert table.loc[inconclusive, f"n_to_decide_{key}"].notna().all()
        assert table.loc[~inconclusive, f"n_to_decide_{key}"].isna().all()


def test_hop_table_needs_each_items_chance() -> None:
    answers, chance = simulate(PLUS_18, 1, seed=3)
    frame = _paired_frame(answers, chance)
    frame.loc[frame.index[0], "chance"] = np.nan
    with pytest.raises(ValueError, match="chance"):
        hop_table(frame, HopConfig(bootstrap=50, seed=1), False)


def test_above_chance_uses_each_items_own_options() -> None:
    """Poisson-binomial over the items' own chances: the binomial when all share one, and a
    count that beats 1/3 on three-option items does not beat chance on two-option items."""
    for k in range(0, 31, 5):
        assert above_chance_p(k, np.full(30, 1 / 3)) == pytest.approx(binom.sf(k - 1, 30, 1 / 3))
        assert below_chance_margin_p(k, np.full(30, 1 / 3), 0.1) == pytest.approx(
            binom.cdf(k, 30, 1 / 3 + 0.1)
        )
    assert above_chance_p(17, np.full(30, 1 / 3)) < 0.01
    assert above_chance_p(17, np.full(30, 1 / 2)) > 0.2
    padded = np.concatenate([np.full(30, 1 / 3), np.zeros(10)])  # padding is no item
    assert above_chance_p(17, padded) == pytest.approx(above_chance_p(17, np.full(30, 1 / 3)))


def test_tango_restricted_estimate_maximises_the_likelihood_under_h0() -> None:
    cases = [(5, 3, 60, 0.1), (0, 0, 12, 0.1), (2, 10, 67, 0.1), (20, 20, 67, 0.15),
             (0, 30, 67, 0.1)]  # fmt: skip
    for b, c, n, delta in cases:

        def nll(p: float, b: int = b, c: int = c, n: int = n, delta: float = delta) -> float:
            terms = [(b, p + delta), (c, p), (n - b - c, 1 - 2 * p - delta)]
            return -sum(k * np.log(q) for k, q in terms if k)

        best = minimize_scalar(nll, bounds=(max(0, -delta) + 1e-12, (1 - delta) / 2 - 1e-12),
                               method="bounded", options={"xatol": 1e-12})  # fmt: skip
        assert float(_restricted_p21(np.array(b), np.array(c), np.array(n), delta)) == (
            pytest.approx(best.x, abs=1e-6)
        )


def test_the_statistic_is_antisymmetric_in_the_direction_of_the_test() -> None:
    from cultureqa.mocqa.paired import tango_z

    for b, c in [(0, 13), (13, 0), (5, 9), (30, 2)]:
        assert float(tango_z(b, c, 67, -0.1)) == pytest.approx(-float(tango_z(c, b, 67, 0.1)))
        assert np.isfinite(tango_z(b, c, 67, -0.1))


def test_equivalence_holds_its_size_at_the_margin_and_shows_no_difference_with_items() -> None:
    """At a true difference of exactly the margin, TOST calls equivalence in at most ~α of
    samples; with no difference and 400 items it shows it nearly always; a cell with no
    discordant pair at n = 12 is not "no difference" for certain."""
    rng = np.random.default_rng(0)
    n, margin = 67, 0.1
    # true p(only a) = 0.25, p(only b) = 0.15: difference 0.10, on the margin
    draws = rng.multinomial(n, [0.25, 0.15, 0.60], size=20000)
    size = (equivalence_p(draws[:, 0], draws[:, 1], n, margin) < 0.05).mean()
    assert size <= 0.06
    null = rng.multinomial(400, [0.2, 0.2, 0.6], size=2000)
    # power at 40% discordance: z = 0.1 / (0.63 / 20) ≈ 3.2 per side, about 0.87 for both
    assert (equivalence_p(null[:, 0], null[:, 1], 400, margin) < 0.05).mean() >= 0.8
    assert float(equivalence_p(0, 0, 12, margin)) > 0.05
    assert float(equivalence_p(0, 0, 0, margin)) == 1.0


def test_n_to_decide_is_the_n_at_which_the_tests_would_decide() -> None:
    assert n_to_decide(0.0, 0.6, 0.1, 0.05) == pytest.approx(225, abs=2)  # ((1.645+0.842)·0.6/0.1)²
    assert n_to_decide(0.18, 0.7, 0.1, 0.05) == pytest.approx(119, abs=2)  # ((1.96+0.842)·0.7/.18)²
    assert n_to_decide(0.1, 0.6, 0.1, 0.05) is not None  # on the margin: the difference decides
    assert n_to_decide(float("nan"), 0.6, 0.1, 0.05) is None


def test_mcnemar_exact_equals_statsmodels_and_holm_equals_multipletests() -> None:
    grid = [(b, c) for b in range(0, 40, 3) for c in range(0, 40, 4)]
    ours = mcnemar_exact(np.array([b for b, _ in grid]), np.array([c for _, c in grid]))
    theirs = [mcnemar([[5, b], [c, 5]], exact=True).pvalue if b + c else 1.0 for b, c in grid]
    assert ours == pytest.approx(theirs, abs=1e-12)
    p = np.array([[0.001, 0.2, np.nan], [0.04, 0.01, 0.5]])
    finite = p[np.isfinite(p)]
    expected = multipletests(finite, method="holm")[1]
    got = holm(p)
    assert np.isnan(got[0, 2]) and got[np.isfinite(p)] == pytest.approx(expected)
    families = np.random.default_rng(0).random((50, 42)) ** 4  # ties and small p included
    families[0, :3] = families[0, 3]
    batch = holm_batch(families)
    for family, adjusted in zip(families, batch, strict=True):
        assert adjusted == pytest.approx(multipletests(family, method="holm")[1], abs=1e-12)


def test_the_decision_rule_cell_by_cell() -> None:
    def one(**kwargs: float) -> str:
        sign = {k: np.array([kwargs.get(f"{k}_sign", 0.0)]) for k in COMPARISONS}
        adjusted = {k: np.array([kwargs.get(k, 1.0)]) for k in COMPARISONS}
        same = {k: np.array([kwargs.get(f"{k}_same", 1.0)]) for k in COMPARISONS}
        chance = np.array([kwargs.get("chance", 1.0)]), np.array([kwargs.get("at_chance", 1.0)])
        return str(decide(sign, adjusted, same, *chance)[0])

    assert one(clue_vs_none=0.01, clue_vs_none_sign=1) == CLUE_NEEDED
    beyond = {"clue_vs_oracle": 0.01, "clue_vs_oracle_sign": 1.0}
    assert one(clue_vs_none=0.01, clue_vs_none_sign=1, **beyond) == CLUE_BEYOND
    assert one(clue_vs_none=0.01, clue_vs_none_sign=-1) == CLUE_MISLEADS
    assert one(oracle_vs_none=0.01, oracle_vs_none_sign=1, clue_vs_none_same=0.01) == CLUE_UNUSED
    # oracle > none, clue vs none neither shown different nor within the margin: no claim
    assert one(oracle_vs_none=0.01, oracle_vs_none_sign=1) == INCONCLUSIVE_CELL
    both_same = {"clue_vs_none_same": 0.01, "oracle_vs_none_same": 0.01}
    assert one(chance=0.01, **both_same) == STATEMENT_SUFFICES
    assert one(at_chance=0.01, **both_same) == TOO_WEAK
    assert one(**both_same) == INCONCLUSIVE_CELL  # neither above chance nor shown near it
    assert one(clue_vs_none=0.06, clue_vs_none_sign=1, chance=0.01) == INCONCLUSIVE_CELL
    assert one() == INCONCLUSIVE_CELL
    assert set(READINGS) >= {CLUE_NEEDED, CLUE_BEYOND, CLUE_MISLEADS, CLUE_UNUSED,
                             INCONCLUSIVE_CELL, *NO_DIFFERENCE}  # fmt: skip
