"""Seeded, balanced option shuffling with a stored letter → type map."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.cases.construct import TYPES
from cultureqa.cases.ingest import load_cases, load_sample_items
from cultureqa.cases.shuffle import (
    LETTERS,
    SHUFFLED_COLUMNS,
    answer_position_counts,
    balanced_arrangements,
    latin_square,
    parse_letter_types,
    shuffle_items,
    type_of_letter,
)

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "data" / "sources" / "cases"


def _typed(n: int) -> pd.DataFrame:
    rows = [
        {"case_id": f"c{i:03d}", "question": f"q{i}", "country": "Japan",
         **{f"type_{t}": f"{t}-text-{i}" for t in TYPES}}
        for i in range(n)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_latin_square_rows_and_columns_are_permutations() -> None:
    square = latin_square(random.Random(1), 6)
    assert all(sorted(row) == list(range(6)) for row in square)
    assert all(sorted(col) == list(range(6)) for col in zip(*square, strict=True))


@pytest.mark.parametrize("n", [1, 5, 6, 7, 13, 40, 72])
def test_every_type_is_balanced_over_positions(n: int) -> None:
    arrangements = balanced_arrangements(n, seed=13)
    assert len(arrangements) == n
    for type_index in range(len(TYPES)):
        positions = Counter(a.index(type_index) for a in arrangements)
        counts = [positions.get(p, 0) for p in range(len(LETTERS))]
        assert max(counts) - min(counts) <= 1


def test_shuffle_maps_every_option_back_to_its_type() -> None:
    items = _typed(20)
    out = shuffle_items(items, seed=60)
    assert list(out.columns) == [*SHUFFLED_COLUMNS, "country"]
    by_id = items.set_index("case_id")
    for row in out.to_dict("records"):
        mapping = parse_letter_types(row["letter_types"])
        for letter, t in mapping.items():
            assert row[f"option_{letter}"] == by_id.loc[row["case_id"], f"type_{t}"]
        assert mapping[row["answer"]] == "F"
        assert row["shuffle_seed"] == 60


def test_gold_positions_are_uniform_on_the_sample() -> None:
    cases = load_cases(CASES / "case_bank.csv")
    items = load_sample_items(CASES / "items_sample.jsonl", cases["case_id"])
    for seed in (13, 40, 60):
        counts = answer_position_counts(shuffle_items(items, seed))
        assert set(counts) == set(LETTERS)
        assert max(counts.values()) - min(counts.values()) <= 1


def test_same_seed_same_result_regardless_of_row_order() -> None:
    items = _typed(15)
    first = shuffle_items(items, seed=7)
    again = shuffle_items(items.sample(frac=1.0, random_state=3), seed=7)
    pd.testing.assert_frame_equal(first, again)


def test_robustness_seeds_give_different_positions() -> None:
    items = _typed(30)
    a = shuffle_items(items, seed=60)["answer"]
    b = shuffle_items(items, seed=40)["answer"]
    assert (a != b).any()


def test_letter_type_helpers() -> None:
    stored = json.dumps(dict(zip(LETTERS, reversed(TYPES), strict=True)))
    assert type_of_letter(stored, " a ") == "F"
    assert type_of_letter(stored, None) is None
    assert type_of_letter(stored, "Z") is None
    with pytest.raises(ValueError, match="once each"):
        parse_letter_types(json.dumps({"A": "F", "B": "F"}))


def test_shuffle_rejects_bad_tables() -> None:
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['type_F'\]"):
        shuffle_items(_typed(3).drop(columns=["type_F"]), seed=1)
    with pytest.raises(ValueError, match="duplicate case_id"):
        shuffle_items(pd.concat([_typed(2), _typed(1)]), seed=1)
