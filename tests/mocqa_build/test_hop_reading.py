"""The hop-necessity reading on scripted models with known effects, at the dataset's cell sizes.

Each scripted model answers every item under the three conditions from latent per-item facts
(the statement gives the answer away; the model knows the answer once it has the province; the
clue gives it the province; the clue hints at the answer's words; the clue pulls it to a wrong
option), plus an independent 1-in-3 guess per condition. Whole tables (2 languages × 6 clue
types at 64–71 items per cell, plus the two ``all`` rows, as the default build has) are
simulated many times at once and read with the production rule (McNemar exact, Holm over the
table, :func:`decide`; the vectorised twins are tested equal to statsmodels); one simulated
table also goes through :func:`hop_table` itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from cultureqa.mocqa.hop import CONDITIONS, HopConfig, hop_table
from cultureqa.mocqa.hop_reading import (
    CLUE_BEYOND,
    CLUE_MISLEADS,
    CLUE_NEEDED,
    CLUE_UNUSED,
    COMPARISONS,
    NO_DIFFERENCE,
    READINGS,
    STATEMENT_SUFFICES,
    above_chance_p,
    decide,
    holm,
    holm_batch,
    mcnemar_exact,
)

CELL_SIZES = np.array([64, 71, 66, 69, 70, 65, 71, 64, 68, 67, 64, 71])
"""Items per (language, clue type) cell: en × 6 then id × 6, within the build's 64–71."""
TYPES = 6
TABLES = 600


@dataclass(frozen=True)
class Script:
    """Per-item probabilities of the latent facts a scripted model answers from."""

    statement: float = 0.0  # the statement alone gives the answer
    knows: float = 0.0  # given the province, the model knows the answer
    first_hop: float = 0.0  # the clue gives the model the province
    lexical: float = 0.0  # the clue's words point at the answer (no province needed)
    misleads: float = 0.0  # the clue pulls the model to a wrong option


SCRIPTS = {
    "clue useless": (Script(statement=0.1, knows=0.7), CLUE_UNUSED),
    "clue needed": (Script(statement=0.1, knows=0.8, first_hop=0.9), CLUE_NEEDED),
    "clue misleading": (Script(statement=0.6, knows=0.7, misleads=0.6), CLUE_MISLEADS),
    "clue helps lexically": (Script(statement=0.1, knows=0.2, lexical=0.9), CLUE_BEYOND),
    "statement suffices": (Script(statement=0.7), STATEMENT_SUFFICES),
}


def simulate(script: Script, tables: int, seed: int) -> dict[str, np.ndarray]:
    """Correctness per condition, shape (tables, cells, 71), items past a cell's size False."""
    rng = np.random.default_rng(seed)
    shape = (tables, len(CELL_SIZES), int(CELL_SIZES.max()))
    present = np.arange(shape[2]) < CELL_SIZES[:, None]

    def draw(p: float) -> np.ndarray:
        return rng.random(shape) < p

    s, k, f = draw(script.statement), draw(script.knows), draw(script.first_hop)
    lex, mis = draw(script.lexical), draw(script.misleads)
    guess = {c: draw(1 / 3) for c in CONDITIONS}
    return {
        "none": (s | guess["none"]) & present,
        "oracle": (s | k | guess["oracle"]) & present,
        "clue": (~mis & (s | (f & k) | lex | guess["clue"])) & present,
    }


def _rows(counts: np.ndarray) -> np.ndarray:
    """Per-cell sums (tables, 12) → the table's 14 rows: en cells, en all, id cells, id all."""
    en, id_ = counts[:, :TYPES], counts[:, TYPES:]
    return np.concatenate([en, en.sum(1, keepdims=True), id_, id_.sum(1, keepdims=True)], axis=1)


def read_simulated(answers: dict[str, np.ndarray]) -> np.ndarray:
    """Readings (tables, 14) by the production rule: McNemar exact, Holm per table, decide."""
    n = _rows(np.broadcast_to(CELL_SIZES, answers["none"].shape[:2]))
    raw, sign = [], {}
    for key, (a, b) in COMPARISONS.items():
        only_a = _rows((answers[a] & ~answers[b]).sum(-1))
        only_b = _rows((~answers[a] & answers[b]).sum(-1))
        raw.append(mcnemar_exact(only_a, only_b))
        sign[key] = only_a - only_b
    p = np.stack(raw, axis=-1)  # (tables, 14, 3): one Holm family per table
    adjusted = holm_batch(p.reshape(len(p), -1)).reshape(p.shape)
    chance_adjusted = holm_batch(above_chance_p(_rows(answers["none"].sum(-1)), n))
    by = {key: adjusted[..., i] for i, key in enumerate(COMPARISONS)}
    return decide(sign, by, chance_adjusted)


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_each_scripted_effect_reads_as_built_in_95_percent_of_cells(name: str) -> None:
    script, expected = SCRIPTS[name]
    readings = read_simulated(simulate(script, TABLES, seed=len(name)))
    share = float((readings == expected).mean())
    worst_cell = float((readings == expected).mean(axis=0).min())
    assert share >= 0.95 and worst_cell >= 0.95, (name, share, worst_cell)


def test_chance_reads_no_difference_in_95_percent_of_whole_tables() -> None:
    """A model whose three conditions are the same coin: any difference reading is chance."""
    readings = read_simulated(simulate(Script(), 2000, seed=7))
    whole_tables = np.isin(readings, NO_DIFFERENCE).all(axis=1)
    assert whole_tables.mean() >= 0.95, whole_tables.mean()


def test_without_holm_chance_would_read_a_difference_far_more_often() -> None:
    """The gate bites: the same tables read cell by cell at raw p < 0.05 fail the bar."""
    answers = simulate(Script(), 2000, seed=7)
    raw = []
    for a, b in COMPARISONS.values():
        raw.append(mcnemar_exact(_rows((answers[a] & ~answers[b]).sum(-1)),
                                 _rows((~answers[a] & answers[b]).sum(-1))))  # fmt: skip
    any_raw = (np.stack(raw, axis=-1)[..., :2] < 0.05).any(axis=(1, 2))
    assert any_raw.mean() > 0.2  # the unadjusted rule calls chance a finding in >1 table of 5


def test_hop_table_reads_a_simulated_table_as_the_vectorised_rule_does() -> None:
    script, _ = SCRIPTS["clue needed"]
    answers = simulate(script, 1, seed=3)
    frames = []
    for cell, n in enumerate(CELL_SIZES):
        language, clue_type = ("en", "id")[cell // TYPES], f"type{cell % TYPES}"
        frames.append(pd.DataFrame({
            "item_id": [f"{language}-{clue_type}-{i}" for i in range(n)],
            "language": language, "clue_type": clue_type, "first_hop": True,
            **{c: answers[c][0, cell, :n] for c in CONDITIONS},
        }))  # fmt: skip
    table = hop_table(pd.concat(frames), HopConfig(bootstrap=200, seed=1), chance_model=False)
    assert table["reading"].tolist() == read_simulated(answers)[0].tolist()
    for key in COMPARISONS:  # the adjusted p sits beside the raw and is never smaller
        assert (table[f"p_{key}_holm"] >= table[f"p_{key}"] - 1e-12).all()


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
        return str(decide(sign, adjusted, np.array([kwargs.get("chance", 1.0)]))[0])

    assert one(clue_vs_none=0.01, clue_vs_none_sign=1) == CLUE_NEEDED
    beyond = {"clue_vs_oracle": 0.01, "clue_vs_oracle_sign": 1.0}
    assert one(clue_vs_none=0.01, clue_vs_none_sign=1, **beyond) == CLUE_BEYOND
    assert one(clue_vs_none=0.01, clue_vs_none_sign=-1) == CLUE_MISLEADS
    assert one(oracle_vs_none=0.01, oracle_vs_none_sign=1) == CLUE_UNUSED
    assert one(clue_vs_none=0.06, clue_vs_none_sign=1, chance=0.01) == STATEMENT_SUFFICES
    assert one() == "too weak to tell"
    assert set(READINGS) >= {CLUE_NEEDED, CLUE_BEYOND, CLUE_MISLEADS, CLUE_UNUSED, *NO_DIFFERENCE}
