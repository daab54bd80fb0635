"""Finalize: option positions and the published table (twohop-engine §1.8).

Pairs come complete from rebalance (:mod:`.translate`: every pair in every language of the set).

* ``case`` format: the options go A–F by the case benchmark's balanced seeded shuffle
  (:func:`cultureqa.cases.shuffle.shuffle_items`), as the case bank itself is published.
* ``statement`` format: gold positions are assigned, not drawn. Over all pairs (sorted by id) a
  shuffled list holding each letter ⌊n/k⌋ or ⌈n/k⌉ times says where each pair's gold goes, so per
  language the letter counts differ by at most one and a chi-square test cannot reject
  uniformity. Every language of a pair gets the same permutation, so the English and Indonesian
  items stay comparable option by option. The table has the ID-MoCQA dataset contract's columns
  (:data:`cultureqa.mocqa_shared.schema.DATASET_COLUMNS`, ``province`` holding the region id), so
  ``mocqa_evaluate``, ``mocqa_analyze``, human validation and the hop diagnostic read it as is.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.cases.shuffle import shuffle_items
from cultureqa.mocqa_shared.positions import balanced_positions, permutation
from cultureqa.regions.sources.source import TYPE_COLUMNS

LETTERS = tuple("ABCDEFGHIJ")
STATEMENT_COLUMNS = (
    "item_id", "pair_id", "source_id", "clue_type", "language", "province", "topic", "question",
    "options", "answer", "clue", "clue_evidence", "clue_source", "generator", "template_id",
    "n_words", "option_order", "region", "clue_key", "narrative", "background_none",
    "background_oracle", "replaced", "frame_terms",
)  # fmt: skip
"""The ID-MoCQA dataset contract's columns, the option order, then what the engine adds."""
_BUILD_ONLY = ("pair_id", "options", "answer", "template_id")
"""Built-item columns a ``case`` dataset does not publish (its options are typed columns)."""


def finalize(items: pd.DataFrame, seed: int, item_format: str) -> pd.DataFrame:
    """The published table of the set's format (see the module docstring)."""
    if item_format == "statement":
        return finalize_statement(items, seed)
    return finalize_case(items, seed)


def finalize_case(items: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Options placed A–F by the case benchmark's balanced seeded shuffle (gold positions even)."""
    if not len(items):
        return items.drop(columns=list(_BUILD_ONLY)).assign(case_id=pd.Series(dtype=str))
    typed = pd.DataFrame(items["options"].tolist(), columns=list(TYPE_COLUMNS), index=items.index)
    rest = items.drop(columns=list(_BUILD_ONLY))
    at = list(rest.columns).index("question") + 1
    columns = [*rest.columns[:at], *TYPE_COLUMNS, *rest.columns[at:]]
    laid = pd.concat([rest, typed], axis=1)[columns]
    return shuffle_items(laid.assign(case_id=laid["item_id"]), seed)


def clue_source(evidence: dict[str, Any]) -> str:
    """The citations behind a clue: each named fact's source (year), each figure's file (year)."""
    out: list[str] = []
    for cell in evidence.get("cells", []):
        target = cell.get("target") or {}
        if target.get("source"):
            year = target.get("year")
            cite = f"{target['source']} ({year})" if year not in (None, "") else target["source"]
        elif cell.get("indicator"):
            cite = f"{Path(str(target.get('file', ''))).name} ({cell.get('year')})"
        else:
            cite = Path(str(target.get("file", ""))).name
        if cite and cite not in out:
            out.append(cite)
    return "; ".join(out)


def finalize_statement(items: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Balanced assigned gold positions, one permutation per pair across its languages."""
    rng = random.Random(seed)
    pairs = sorted(items["pair_id"].unique()) if len(items) else []
    sizes = {len(o) for o in items["options"]} if len(items) else set()
    if len(sizes) > 1:
        raise ValueError(f"statement items with different numbers of options: {sorted(sizes)}")
    k = sizes.pop() if sizes else 0
    targets = dict(zip(pairs, balanced_positions(len(pairs), k, rng), strict=True))
    orders: dict[str, list[int]] = {}
    rows: list[dict[str, Any]] = []
    for row in items.sort_values(["pair_id", "language"]).to_dict("records"):
        options = [str(o) for o in row["options"]]
        gold = LETTERS.index(str(row["answer"]))
        if row["pair_id"] not in orders:
            orders[row["pair_id"]] = permutation(gold, targets[row["pair_id"]], k, rng)
        order = orders[row["pair_id"]]
        rows.append(
            {
                **row,
                "province": row["region"],
                "options": [options[i] for i in order],
                "answer": LETTERS[order.index(gold)],
                "clue_source": clue_source(json.loads(str(row["clue_evidence"]))),
                "generator": "template",
                "n_words": len(str(row["question"]).split()),
                "option_order": "".join(LETTERS[i] for i in order),
            }
        )
    dataset = pd.DataFrame(rows, columns=list(STATEMENT_COLUMNS))
    dataset["n_words"] = dataset["n_words"].astype("int64")
    return dataset


def gold_positions(dataset: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Per language, how often each letter holds the gold answer."""
    out: dict[str, dict[str, int]] = {}
    for lang, part in dataset.groupby("language", sort=True):
        counts = Counter(str(a) for a in part["answer"])
        out[str(lang)] = dict(sorted(counts.items()))
    return out
