"""Hop diagnostic of two-hop region items: none / clue / oracle on the evaluation engine.

Each item is asked three ways with its own options and gold: the scenario with the region's
words replaced and no clue (``none``), with the clue sentence (``clue``), and with a sentence
naming the region (``oracle``). The paired statistics and readings are ID-MoCQA's
(:func:`cultureqa.mocqa.hop.hop_table`). The case-bank prompt asks for the answer letter only, so
there is no first-hop answer to score: the ``first_hop`` columns are left out of the table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.cases.evaluate import CasesFamily, load_prompt
from cultureqa.cases.shuffle import OPTION_COLUMNS
from cultureqa.evaluation.engine import RunSpec, evaluate
from cultureqa.llm.store import StoreLocation
from cultureqa.mocqa.hop import CHANCE_BACKENDS, CONDITIONS, READINGS, HopConfig, hop_table
from cultureqa.spend import ApiStopped, stopped_reason

BACKGROUND = {"none": "background_none", "clue": "narrative", "oracle": "background_oracle"}


def subset(dataset: pd.DataFrame, limit: int | None) -> pd.DataFrame:
    """At most ``limit`` items per language, taken round-robin over clue types (by item id)."""
    if limit is None:
        return dataset
    ordered = dataset.sort_values("item_id")
    rank = ordered.groupby(["language", "clue_type"]).cumcount()
    picked = ordered.assign(_rank=rank).sort_values(["_rank", "clue_type", "item_id"])
    return picked.groupby("language").head(limit).drop(columns="_rank").reset_index(drop=True)


def run_hop(
    dataset: pd.DataFrame,
    dataset_path: str,
    model_cfg: Mapping[str, Any],
    config: HopConfig,
    root: Path,
    store_path: StoreLocation,
    language: str = "en",
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """(table, predictions with a ``condition`` column, summary)."""
    items = subset(dataset, config.limit)
    prompt = load_prompt(root, language)
    run = RunSpec(config.model, model_cfg, store_path, max_error_share=1.0, prompt=config.prompt)
    predictions = {}
    for condition in CONDITIONS:
        frame = items.assign(narrative=items[BACKGROUND[condition]])
        seed = int(frame["shuffle_seed"].iloc[0]) if len(frame) else 0
        family = CasesFamily({seed: frame}, {seed: dataset_path}, prompt, root, 0)
        record, preds = evaluate(family, run)
        if (reason := stopped_reason(record.api)) is not None:
            raise ApiStopped(reason)
        predictions[condition] = preds.assign(condition=condition)
    meta = items[["case_id", "language", "clue_type"]].rename(columns={"case_id": "item_id"})
    paired = meta
    for condition, preds in predictions.items():
        correct = preds[["case_id", "correct"]].rename(
            columns={"case_id": "item_id", "correct": condition}
        )
        paired = paired.merge(correct, on="item_id", how="inner")
    paired["first_hop"] = False  # not asked: the prompt wants the letter only
    paired["chance"] = 1 / len(OPTION_COLUMNS)  # every case shows all its options A–F
    chance = str(model_cfg.get("backend")) in CHANCE_BACKENDS
    table = hop_table(paired, config, chance).drop(
        columns=["first_hop", "first_hop_low", "first_hop_high"], errors="ignore"
    )
    records = [
        {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
        for r in table.to_dict(orient="records")
    ]
    summary = {
        "model": str(model_cfg.get("id")),
        "roster_entry": config.model,
        "items": len(items),
        "paired_items": len(paired),
        "chance_model": chance,
        "accuracy": {c: round(float(paired[c].mean()), 4) for c in CONDITIONS}
        if len(paired)
        else {},
        "errors": {c: int((p["status"] == "error").sum()) for c, p in predictions.items()},
        "bootstrap": {"resamples": config.bootstrap, "seed": config.seed},
        "margin": config.margin,
        "readings": {k: v.replace("province", "region") for k, v in READINGS.items()},
        "table": records,
    }
    return table, pd.concat(predictions.values(), ignore_index=True), summary
