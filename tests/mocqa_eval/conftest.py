"""Builders for the ID-MoCQA evaluation tests: a synthetic dataset in the finalized shape."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from cultureqa.knowledge.provinces import CANONICAL_PROVINCES
from cultureqa.mocqa_shared.schema import CLUE_TYPES

TOPICS = ("food", "wedding", "art")


def synthetic_dataset(n_sources: int, languages: tuple[str, ...] = ("en", "id")) -> pd.DataFrame:
    """n_sources × 6 clue types × languages items; gold letters and provinces rotate."""
    rows = []
    for s in range(n_sources):
        for c, clue in enumerate(CLUE_TYPES):
            for language in languages:
                item_id = f"s{s}.{clue}.{language}"
                rows.append(
                    {
                        "item_id": item_id,
                        "pair_id": f"s{s}.{clue}",
                        "source_id": f"s{s}",
                        "clue_type": clue,
                        "language": language,
                        "province": CANONICAL_PROVINCES[s % len(CANONICAL_PROVINCES)],
                        "topic": TOPICS[s % len(TOPICS)],
                        "question": f"[{item_id}] In the province known for clue {c}, what is "
                        f"given at a wedding?",
                        "options": [f"option one {s}", f"option two {s}", f"option three {s}"],
                        "answer": "ABC"[(s + c) % 3],
                    }
                )
    return pd.DataFrame(rows)


@pytest.fixture
def make_dataset() -> Callable[..., pd.DataFrame]:
    return synthetic_dataset
