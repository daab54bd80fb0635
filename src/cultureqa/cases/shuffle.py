"""Put typed options into answer positions A–F with a fixed seed (DESIGN.md §6).

Construction emits options keyed by error type, with the correct answer always under type F; shown
that way, a model could score by always picking F. Positions are therefore re-drawn per item, and
the letter → type map is stored so every prediction can be traced back to an error type.

Positions come from seeded random Latin squares stacked over the items (sorted by ``case_id``):
within each block of six items every type, the correct one included, takes every position exactly
once, so gold-position counts differ by at most one over any number of items. An independent draw
per item would leave the uniformity check of the validate stage to chance on small datasets.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pandas as pd

from cultureqa.cases.construct import CORRECT_TYPE, TYPES

LETTERS: tuple[str, ...] = ("A", "B", "C", "D", "E", "F")
"""Answer positions as shown to the model under test."""

OPTION_COLUMNS: tuple[str, ...] = tuple(f"option_{letter}" for letter in LETTERS)
SHUFFLED_COLUMNS: tuple[str, ...] = (
    "case_id", "question", *OPTION_COLUMNS, "answer", "letter_types", "shuffle_seed"
)  # fmt: skip
"""Leading columns of the shuffled table; other input columns follow unchanged."""


def latin_square(rng: random.Random, k: int) -> list[tuple[int, ...]]:
    """A random k×k Latin square (row, column and symbol order all drawn from ``rng``).

    Row ``r`` is one item's arrangement: entry ``j`` is the index of the type shown at
    position ``j``.
    """
    rows, cols, symbols = (rng.sample(range(k), k) for _ in range(3))
    return [tuple(symbols[(r + c) % k] for c in cols) for r in rows]


def balanced_arrangements(n: int, seed: int, k: int = len(LETTERS)) -> list[tuple[int, ...]]:
    """``n`` arrangements (position → type index) from stacked random Latin squares.

    Every type's position counts, the correct type's included, differ by at most one.
    """
    rng = random.Random(seed)
    out: list[tuple[int, ...]] = []
    while len(out) < n:
        out.extend(latin_square(rng, k))
    return out[:n]


def shuffle_items(items: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Assign each typed item its positions.

    Args:
        items: the constructed item table, with ``case_id``, ``question`` and ``type_A`` …
            ``type_F`` (the option of each error type).
        seed: shuffle seed; the robustness check reruns with other seeds (e.g. 60 and 40).

    Returns:
        One row per item, sorted by ``case_id``: ``option_A`` … ``option_F`` by position,
        ``answer`` (the letter holding type F), ``letter_types`` (JSON ``{"A": type, …}``),
        ``shuffle_seed``, then every other input column except the ``type_*`` ones.

    Raises:
        ValueError: when type columns are missing or a case id repeats.
    """
    type_columns = [f"type_{t}" for t in TYPES]
    missing = [c for c in ("case_id", "question", *type_columns) if c not in items.columns]
    if missing:
        raise ValueError(f"item table lacks column(s) {missing}")
    if items["case_id"].duplicated().any():
        dupes = sorted(items.loc[items["case_id"].duplicated(), "case_id"].astype(str).unique())
        raise ValueError(f"duplicate case_id(s) {dupes[:10]}")
    ordered = items.sort_values("case_id", kind="stable").reset_index(drop=True)
    arrangements = balanced_arrangements(len(ordered), seed)
    records = [
        _place(row, arrangement, seed)
        for row, arrangement in zip(ordered.to_dict("records"), arrangements, strict=True)
    ]
    rest = [c for c in ordered.columns if c not in SHUFFLED_COLUMNS and c not in type_columns]
    return pd.DataFrame(records, columns=[*SHUFFLED_COLUMNS, *rest])


def _place(row: dict[str, object], arrangement: tuple[int, ...], seed: int) -> dict[str, object]:
    letter_types = {LETTERS[pos]: TYPES[t] for pos, t in enumerate(arrangement)}
    placed = {f"option_{letter}": row[f"type_{t}"] for letter, t in letter_types.items()}
    answer = next(letter for letter, t in letter_types.items() if t == CORRECT_TYPE)
    rest = {k: v for k, v in row.items() if not k.startswith("type_")}
    return {
        **rest,
        **placed,
        "answer": answer,
        "letter_types": json.dumps(letter_types, sort_keys=True),
        "shuffle_seed": seed,
    }


def parse_letter_types(value: str) -> dict[str, str]:
    """The stored letter → type map, checked to hold each letter and each type exactly once."""
    mapping = json.loads(value)
    if sorted(mapping) != list(LETTERS) or sorted(mapping.values()) != list(TYPES):
        raise ValueError(f"letter_types must map A–F onto types A–F once each, got {value}")
    return {str(k): str(v) for k, v in mapping.items()}


def type_of_letter(letter_types: str, letter: str | None) -> str | None:
    """Error type behind a predicted letter (``None`` for no or an unknown letter)."""
    if not letter:
        return None
    return parse_letter_types(letter_types).get(letter.strip().upper())


def answer_position_counts(shuffled: pd.DataFrame) -> dict[str, int]:
    """How often each letter is the gold answer (all six letters present)."""
    counts = Counter(str(a) for a in shuffled["answer"])
    return {letter: counts.get(letter, 0) for letter in LETTERS}
