"""Benchmark: how often a printed reading misreads, on scripted models with known effects.

No real model: scripted models answer whole hop tables (2 languages × 6 clue types at 64–71 items
per cell plus the two ``all`` rows, as the default build has) from latent per-item facts, and
each table is read by the stage's own rule (:mod:`cultureqa.mocqa.hop_simulation`: McNemar and
Tango TOST, Holm over the table, :func:`cultureqa.mocqa.hop_reading.decide`). ``make compare``'s
Δ reading (:func:`cultureqa.runs.compare.difference` and
:func:`cultureqa.runs.compare.read_deltas`) is simulated on tables of paired per-item scores
the same way. Prints, per reading, the share of tables with a false finding where nothing
differs, the share of cells that read "no difference" where the effect exceeds the margin, and
the share left inconclusive. The bars: at most 5 % each.

    .venv/bin/python bench/hop_readings.py [--tables N] [--seed S]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from cultureqa.mocqa.hop_reading import (
    CLUE_BEYOND,
    CLUE_MISLEADS,
    CLUE_NEEDED,
    CLUE_UNUSED,
    DIFFERENCE_READINGS,
    INCONCLUSIVE_CELL,
    MARGIN,
    NO_DIFFERENCE,
)
from cultureqa.mocqa.hop_simulation import Script, read_simulated, simulate
from cultureqa.runs.compare import Cell, Estimate, Measured, difference, read_deltas

CLAIMS_CLUE_NONE = (CLUE_UNUSED, *NO_DIFFERENCE)
HOP_SCENARIOS: list[tuple[str, Script, tuple[str, ...], tuple[str, ...]]] = [
    # name, script, readings that are right, readings that misread "no difference"
    ("no effect anywhere", Script(), (), ()),
    ("clue +18 points", Script(statement=0.1, knows=0.5, first_hop=0.6),
     (CLUE_NEEDED, CLUE_BEYOND), CLAIMS_CLUE_NONE),
    ("clue −20 points", Script(statement=0.3, knows=0.5, misleads=0.375),
     (CLUE_MISLEADS,), CLAIMS_CLUE_NONE),
    ("clue +30 points", Script(statement=0.1, knows=0.8, first_hop=0.6),
     (CLUE_NEEDED, CLUE_BEYOND), CLAIMS_CLUE_NONE),
    ("clue does nothing, province +42", Script(statement=0.1, knows=0.7), (CLUE_UNUSED,), ()),
    ("statement gives it away", Script(statement=0.7), NO_DIFFERENCE, ()),
]  # fmt: skip
COMPARE_CELL = Cell("bench", "bench", "zero_shot", (), ("item_id",), "evaluate", {})
COMPARE_DELTAS = 8
"""Δ cells per simulated ``make compare`` table (e.g. 2 experiments × 4 benchmark columns)."""


def hop_rows(tables: int, seed: int) -> list[dict[str, object]]:
    """One row per scenario: shares of right, misread and inconclusive readings."""
    out = []
    for i, (name, script, right, wrong) in enumerate(HOP_SCENARIOS):
        readings = read_simulated(*simulate(script, tables, seed=seed + i), margin=MARGIN)
        acc = script.accuracy()
        row: dict[str, object] = {
            "reading": "hop table",
            "scenario": name,
            "clue − none": round(acc["clue"] - acc["none"], 2),
            "oracle − none": round(acc["oracle"] - acc["none"], 2),
        }
        if not right:  # nothing differs: any difference reading is a false finding
            false = np.isin(readings, DIFFERENCE_READINGS)
            row["false finding (tables)"] = f"{false.any(axis=1).mean():.1%}"
        else:
            row["right (cells)"] = f"{np.isin(readings, right).mean():.1%}"
        if wrong:
            row["'no difference' (cells)"] = f"{np.isin(readings, wrong).mean():.1%}"
        row["inconclusive (cells)"] = f"{(readings == INCONCLUSIVE_CELL).mean():.1%}"
        out.append(row)
    return out


def _measured(scores: np.ndarray) -> Measured:
    rows = pd.DataFrame({"item_id": [f"i{k}" for k in range(len(scores))], "correct": scores})
    return Measured(COMPARE_CELL, rows)


def compare_rows(
    tables: int, seed: int, margin: float = 0.05, effects: Sequence[float] = (0.0, 0.1, -0.1)
) -> list[dict[str, object]]:
    """``make compare`` tables of paired per-item correctness (300 items, 3 settings each)."""
    rng = np.random.default_rng(seed)
    out = []
    for effect in effects:
        readings: list[str] = []
        false_tables = 0
        for _ in range(tables):
            deltas: list[Estimate] = []
            for _ in range(COMPARE_DELTAS):
                skill = rng.random(300)  # each item's own difficulty, shared by both sides
                old = (rng.random((300, 3)) < skill[:, None]).mean(axis=1)
                new = (rng.random((300, 3)) < np.clip(skill + effect, 0, 1)[:, None]).mean(axis=1)
                found = difference(_measured(new), _measured(old), margin)
                assert isinstance(found, Estimate)
                deltas.append(found)
            table = [r for r, _ in read_deltas(deltas, margin)]
            false_tables += effect == 0 and "difference" in table
            readings += table
        shares = pd.Series(readings).value_counts(normalize=True)
        row: dict[str, object] = {"reading": "make compare Δ", "scenario": f"true Δ {effect:+.2f}"}
        if effect == 0:
            row["false finding (tables)"] = f"{false_tables / tables:.1%}"
            row["right (cells)"] = f"{shares.get('no difference beyond the margin', 0):.1%}"
        else:
            row["right (cells)"] = f"{shares.get('difference', 0):.1%}"
            row["'no difference' (cells)"] = (
                f"{shares.get('no difference beyond the margin', 0):.1%}"
            )
        row["inconclusive (cells)"] = f"{shares.get('inconclusive', 0):.1%}"
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tables", type=int, default=1000, help="simulated hop tables")
    parser.add_argument("--compare-tables", type=int, default=100, help="simulated Δ tables")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    # statsmodels' multipletests runs gc.collect() on every call (about 0.2 s each over the
    # imported libraries); frozen objects are not scanned, so the Holm calls cost milliseconds
    gc.freeze()
    start = time.perf_counter()
    hop = hop_rows(args.tables, args.seed)
    mid = time.perf_counter()
    compare = compare_rows(args.compare_tables, args.seed)
    end = time.perf_counter()
    frame = pd.DataFrame(hop + compare).astype(object).fillna("—")
    print(
        f"hop: {args.tables} tables × 14 cells per scenario, margin ± {MARGIN}; compare: "
        f"{args.compare_tables} tables × {COMPARE_DELTAS} Δs, 300 items, margin ± 0.05"
    )
    print(frame.to_markdown(index=False))
    print(f"\nseconds: hop {mid - start:.1f}, compare {end - mid:.1f}")


if __name__ == "__main__":
    main()
