"""Finalize: stable ids, balanced gold positions, the published table (DESIGN.md §5.6).

Gold positions are assigned, not drawn: over all pairs (sorted by id) a shuffled list holding each
letter ⌊n/3⌋ or ⌈n/3⌉ times says where each pair's gold goes, so per language the letter counts
differ by at most one and a chi-square test cannot reject uniformity. Both languages of a pair get
the same permutation, so English and Indonesian items stay comparable option by option. The seed
is recorded in the card. The position rule is shared with the two-hop engine
(:mod:`cultureqa.mocqa_shared.positions`).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pandas as pd

from cultureqa.mocqa_build.stage import StageResult, stage_metrics
from cultureqa.mocqa_build.textchecks import word_count
from cultureqa.mocqa_shared.positions import balanced_positions, permutation
from cultureqa.mocqa_shared.schema import (
    DATASET_COLUMNS,
    LETTERS,
    VARIANT_COLUMNS,
    as_options,
    clue_source,
    require_columns,
)


def finalize(frame: pd.DataFrame, seed: int) -> StageResult:
    """Shuffle options per pair with balanced gold positions and build the dataset rows."""
    require_columns(frame, VARIANT_COLUMNS, "finalize")
    rng = random.Random(seed)
    pairs = sorted(frame["pair_id"].unique())
    targets = dict(zip(pairs, balanced_positions(len(pairs), len(LETTERS), rng), strict=True))
    orders: dict[str, list[int]] = {}
    rows: list[dict[str, Any]] = []
    for row in frame.sort_values(["pair_id", "language"]).to_dict("records"):
        options = as_options(row["options"])
        gold = LETTERS.index(row["answer"])
        if row["pair_id"] not in orders:
            orders[row["pair_id"]] = permutation(gold, targets[row["pair_id"]], len(options), rng)
        order = orders[row["pair_id"]]
        rows.append(
            {
                **{c: row[c] for c in DATASET_COLUMNS if c in row},
                "item_id": row["variant_id"],
                "options": [options[i] for i in order],
                "answer": LETTERS[order.index(gold)],
                "clue_source": clue_source(json.loads(str(row["clue_evidence"]) or "{}")),
                "n_words": word_count(str(row["question"])),
                "option_order": "".join(LETTERS[i] for i in order),
            }
        )
    dataset = pd.DataFrame(rows, columns=[*DATASET_COLUMNS, "option_order"])
    dataset["n_words"] = dataset["n_words"].astype("int64")
    letters = {k: int(v) for k, v in dataset["answer"].value_counts().sort_index().items()}
    metrics = stage_metrics(
        "finalize",
        len(frame),
        dataset,
        pd.DataFrame({"reason": []}),
        seed=seed,
        pairs=len(pairs),
        gold_positions=letters,
    )
    return StageResult(dataset, metrics=metrics)
