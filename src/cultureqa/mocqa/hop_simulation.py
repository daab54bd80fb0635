"""Whole hop tables of scripted models, read by the production rule, many at once.

How often does a table misread? Only a simulation with known effects can say, and only if it
reads its tables with the rule the stage uses. Each scripted model answers every item under the
three conditions from latent per-item facts (the statement gives the answer away; the model
knows the answer once it has the province; the clue gives it the province; the clue hints at the
answer's words; the clue pulls it to a wrong option), plus an independent guess per condition
among the item's options. Tables have the default build's shape (2 languages × 6 clue types at
64–71 items per cell, plus the two ``all`` rows) and are read with the vectorised twins of the
stage's tests (:func:`~cultureqa.mocqa.hop_reading.mcnemar_exact`,
:func:`~cultureqa.mocqa.hop_reading.holm_batch`, each tested equal to statsmodels) and the
stage's own :func:`~cultureqa.mocqa.paired.equivalence_p`,
:func:`~cultureqa.mocqa.hop_reading.above_chance_p`,
:func:`~cultureqa.mocqa.hop_reading.below_chance_margin_p` and
:func:`~cultureqa.mocqa.hop_reading.decide`. Used by the reading's tests and by
``bench/hop_readings.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cultureqa.mocqa.hop_reading import (
    ALPHA,
    COMPARISONS,
    MARGIN,
    above_chance_p,
    below_chance_margin_p,
    decide,
    holm_batch,
    mcnemar_exact,
)
from cultureqa.mocqa.paired import equivalence_p

CONDITIONS = ("none", "clue", "oracle")
CELL_SIZES = np.array([64, 71, 66, 69, 70, 65, 71, 64, 68, 67, 64, 71])
"""Items per (language, clue type) cell: en × 6 then id × 6, within the build's 64–71."""
TYPES = 6


@dataclass(frozen=True)
class Script:
    """Per-item probabilities of the latent facts a scripted model answers from."""

    statement: float = 0.0  # the statement alone gives the answer
    knows: float = 0.0  # given the province, the model knows the answer
    first_hop: float = 0.0  # the clue gives the model the province
    lexical: float = 0.0  # the clue's words point at the answer (no province needed)
    misleads: float = 0.0  # the clue pulls the model to a wrong option

    def accuracy(self, chance: float = 1 / 3) -> dict[str, float]:
        """Expected accuracy per condition for items whose guess is right with ``chance``."""
        miss = (1 - self.statement) * (1 - chance)
        hop = self.first_hop * self.knows
        return {
            "none": 1 - miss,
            "oracle": 1 - miss * (1 - self.knows),
            "clue": (1 - self.misleads) * (1 - miss * (1 - hop) * (1 - self.lexical)),
        }


def simulate(
    script: Script, tables: int, seed: int, options: tuple[int, ...] = (3,)
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(correctness per condition, per-item chance), shape (tables, cells, 71).

    Items past a cell's size are False with chance 0. Each item draws its number of options
    from ``options`` (uniformly), and its guesses are right with 1 / that number.
    """
    rng = np.random.default_rng(seed)
    shape = (tables, len(CELL_SIZES), int(CELL_SIZES.max()))
    present = np.arange(shape[2]) < CELL_SIZES[:, None]
    chance = np.where(present, 1 / rng.choice(np.asarray(options), size=shape), 0.0)

    def draw(p: float | np.ndarray) -> np.ndarray:
        return rng.random(shape) < p

    s, k, f = draw(script.statement), draw(script.knows), draw(script.first_hop)
    lex, mis = draw(script.lexical), draw(script.misleads)
    guess = {c: draw(chance) for c in CONDITIONS}
    answers = {
        "none": (s | guess["none"]) & present,
        "oracle": (s | k | guess["oracle"]) & present,
        "clue": (~mis & (s | (f & k) | lex | guess["clue"])) & present,
    }
    return answers, chance


def rows(counts: np.ndarray) -> np.ndarray:
    """Per-cell values (tables, 12, …) → the table's 14 rows: en cells, en all, id cells, id all."""
    en, id_ = counts[:, :TYPES], counts[:, TYPES:]
    return np.concatenate([en, en.sum(1, keepdims=True), id_, id_.sum(1, keepdims=True)], axis=1)


def _row_items(chance: np.ndarray) -> np.ndarray:
    """Per-item chances (tables, 12, 71) → (tables, 14, 6 × 71): each row's items, 0-padded."""
    tables, _, width = chance.shape
    cells = np.zeros((tables, 14, TYPES * width))
    for language in range(2):
        block = chance[:, language * TYPES : (language + 1) * TYPES]
        cells[:, language * 7 : language * 7 + TYPES, :width] = block
        cells[:, language * 7 + TYPES] = block.reshape(tables, -1)
    return cells


def read_simulated(
    answers: dict[str, np.ndarray],
    chance: np.ndarray,
    margin: float = MARGIN,
    alpha: float = ALPHA,
) -> np.ndarray:
    """Readings (tables, 14) by the production rule: both tests per comparison, Holm per table."""
    n = rows(np.broadcast_to(CELL_SIZES, answers["none"].shape[:2]))
    raw, same, sign = [], [], {}
    for key, (a, b) in COMPARISONS.items():
        only_a = rows((answers[a] & ~answers[b]).sum(-1))
        only_b = rows((~answers[a] & answers[b]).sum(-1))
        raw.append(mcnemar_exact(only_a, only_b))
        same.append(equivalence_p(only_a, only_b, n, margin))
        sign[key] = only_a - only_b
    tables = len(n)
    adjusted = holm_batch(np.stack(raw, axis=-1).reshape(tables, -1)).reshape(tables, 14, 3)
    same_adj = holm_batch(np.stack(same, axis=-1).reshape(tables, -1)).reshape(tables, 14, 3)
    items = _row_items(chance)
    correct = rows(answers["none"].sum(-1))
    above = holm_batch(above_chance_p(correct, items))
    at_chance = holm_batch(below_chance_margin_p(correct, items, margin))
    by = {key: adjusted[..., i] for i, key in enumerate(COMPARISONS)}
    same_by = {key: same_adj[..., i] for i, key in enumerate(COMPARISONS)}
    return decide(sign, by, same_by, above, at_chance, alpha)
