"""``columns.options.shuffle: {seed}``: make a gold-skewed published set evaluable.

IndoCloze puts every right ending first; a model that prefers A scores 100 %. The shuffle draws one
permutation per item from the declared seed and the item's id (not its position), so the same item
gets the same order in every run, sample and language, and the same prompt is sent every time. The
item records where its options came from: ``options_order`` (the source letters in the order shown)
and ``gold_source_position`` (the gold's letter in the source), a slice the report can show.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np

from cultureqa.core.records import LETTERS, McqItem

SHUFFLE_FIELDS = ("options_order", "gold_source_position")
"""Metadata a shuffled item carries (declared names may not reuse them; slices may name them)."""


def permutation(seed: int, item_id: str, size: int) -> list[int]:
    """Source positions in the order shown: stable per (seed, item id), whatever the run."""
    digest = hashlib.sha256(f"{seed}:{item_id}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
    return [int(i) for i in rng.permutation(size)]


def shuffled(item: McqItem, seed: int) -> McqItem:
    """The item with its options reordered, every gold re-pointed and the source order kept."""
    order = permutation(seed, item.id, len(item.options))
    new_of = {old: new for new, old in enumerate(order)}
    golds = tuple(new_of[g] for g in item.golds)
    metadata = {
        **item.metadata,
        "options_order": "".join(LETTERS[i] for i in order),
        "gold_source_position": LETTERS[item.answer_index],
    }
    return replace(
        item,
        options=tuple(item.options[i] for i in order),
        answer_index=golds[0],
        answer_indices=golds if len(golds) > 1 else (),
        metadata=metadata,
    )
