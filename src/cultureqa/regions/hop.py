"""Hop diagnostic of two-hop region items: none / clue / oracle on the evaluation engine.

Each item is asked three ways with its own options and gold: the scenario with the region's
words replaced and no clue (``none``), with the clue sentence (``clue``), and with a sentence
naming the region (``oracle``). Each condition has its own prompt, true of what the model is
shown (``prompts/twohop/hop/<condition>/``): only the ``clue`` prompt speaks of a clue, and it
asks the model to name the region first. That answer is the first hop, scored against the
region's names and aliases; a log-likelihood backend (the baselines) scores letters only, so its
first hop is not asked and the table leaves the columns out. Chance is each item's own, 1 / its
options, reported per condition beside the accuracy. The paired statistics and readings are
ID-MoCQA's (:func:`cultureqa.mocqa.hop.hop_table`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.cases.evaluate import CasesFamily, load_prompt
from cultureqa.cases.shuffle import OPTION_COLUMNS
from cultureqa.core.spend import ApiStopped, stopped_reason
from cultureqa.evaluation.engine import RunSpec, evaluate
from cultureqa.llm.store import StoreLocation
from cultureqa.mocqa.hop import CHANCE_BACKENDS, CONDITIONS, READINGS, HopConfig, hop_table
from cultureqa.regions.config import RegionSet
from cultureqa.regions.generation.tables import load_regions

BACKGROUND = {"none": "background_none", "clue": "narrative", "oracle": "background_oracle"}
PROMPTS = Path("prompts") / "twohop" / "hop"
"""One folder per condition with the case benchmark's system and user templates."""
_OBJECT = re.compile(r"\{.*\}", re.S)


def named_region(raw: str) -> str:
    """The ``country`` field of a JSON reply ('' when absent or unreadable)."""
    match = _OBJECT.search(raw or "")
    try:
        payload = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        return ""
    value = payload.get("country") if isinstance(payload, dict) else None
    return str(value or "").strip()


def _norm(name: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"^the\s+", "", name.strip().casefold())).strip(" .")


def first_hop(raw: str, region: str, names: Mapping[str, frozenset[str]]) -> bool:
    """The reply names ``region`` (by one of its names or aliases, 'the' and case ignored)."""
    said = _norm(named_region(raw))
    return bool(said) and said in {_norm(n) for n in names.get(region, frozenset())}


def region_names(rs: RegionSet, root: Path) -> dict[str, frozenset[str]]:
    """Region id → the names and aliases a first-hop answer may use (every language)."""
    return {
        r.id: frozenset(t.text for t in r.terms if t.kind in ("name", "alias"))
        for r in load_regions(rs.regions, root, {})
    }


def item_chance(items: pd.DataFrame) -> pd.Series:
    """Each item's chance of a right guess: 1 / its non-empty options."""
    present = [c for c in OPTION_COLUMNS if c in items.columns]
    counts = items[present].fillna("").astype(str).apply(lambda col: col.str.strip() != "").sum(1)
    return 1.0 / counts


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
    names: Mapping[str, frozenset[str]],
    language: str = "en",
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """(table, predictions with a ``condition`` column, summary).

    ``names``: each region's names and aliases, which a first-hop answer must match.
    """
    items = subset(dataset, config.limit)
    run = RunSpec(config.model, model_cfg, store_path, max_error_share=1.0, prompt=config.prompt)
    predictions = {}
    for condition in CONDITIONS:
        prompt = load_prompt(root, language, root / PROMPTS / condition)
        frame = items.assign(narrative=items[BACKGROUND[condition]])
        seed = int(frame["shuffle_seed"].iloc[0]) if len(frame) else 0
        family = CasesFamily({seed: frame}, {seed: dataset_path}, prompt, root, 0)
        record, preds = evaluate(family, run)
        if (reason := stopped_reason(record.api)) is not None:
            raise ApiStopped(reason)
        predictions[condition] = preds.assign(condition=condition)
    meta = items[["case_id", "language", "clue_type", "region"]].rename(
        columns={"case_id": "item_id"}
    )
    meta["chance"] = item_chance(items).to_numpy()
    paired = meta
    for condition, preds in predictions.items():
        correct = preds[["case_id", "correct"]].rename(
            columns={"case_id": "item_id", "correct": condition}
        )
        paired = paired.merge(correct, on="item_id", how="inner")
    clue = predictions["clue"].set_index("case_id")["raw"].fillna("").astype(str)
    asked = bool((clue.str.strip() != "").any())  # chat replies; log-likelihood has none
    paired["first_hop"] = [
        first_hop(clue.get(i, ""), r, names)
        for i, r in zip(paired["item_id"], paired["region"], strict=True)
    ]
    chance = str(model_cfg.get("backend")) in CHANCE_BACKENDS
    table = hop_table(paired.drop(columns=["region"]), config, chance)
    if not asked:
        table = table.drop(columns=["first_hop", "first_hop_low", "first_hop_high"])
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
        "first_hop": round(float(paired["first_hop"].mean()), 4)
        if asked and len(paired)
        else "not asked (the backend scores letters by log-likelihood)",
        "chance": round(float(paired["chance"].mean()), 4) if len(paired) else None,
        "chance_rule": "each item's own: 1 / its options, averaged over the paired items",
        "errors": {c: int((p["status"] == "error").sum()) for c, p in predictions.items()},
        "bootstrap": {"resamples": config.bootstrap, "seed": config.seed},
        "margin": config.margin,
        "readings": {k: v.replace("province", "region") for k, v in READINGS.items()},
        "table": records,
    }
    return table, pd.concat(predictions.values(), ignore_index=True), summary
