"""Hop necessity (issues 11, 22): does a model need the clue, and can this model tell us?

A two-hop question is only two-hop if the clue carries the province. The diagnostic asks one
configured model every item three ways, on the item's own options and gold:

* ``none``: the statement only (the frame sentence holding the clue removed; "that province"
  points nowhere);
* ``clue``: the question as built;
* ``oracle``: the frame sentence replaced by the item's sentence naming the province outright.

It reads the two-hop engine's ``statement`` items (``twohop_hop@indonesia``); the ``case`` items
go through :mod:`cultureqa.regions.hop`, and both share :func:`hop_table` and its readings.

Each condition has its own prompt that tells the truth about it (``HopConfig.prompts``: one
folder of ``<style>.<language>.txt`` per condition): under ``none`` the model is told the
province is neither named nor described, under ``oracle`` that the question names it, under
``clue`` that an indirect clue describes it. One prompt for all three would tell the model about
a clue that is not there.

Per language and clue type it reports accuracy under each condition (Wilson 95% intervals),
first-hop accuracy (province named correctly under ``clue``), the paired differences clue − none,
oracle − none and oracle − clue with bootstrap intervals over items (effect sizes), the clue gain
(clue − none) / (oracle − none) with its paired bootstrap interval (the share of what naming the
province is worth that the clue delivers; left empty unless oracle > none is decided, since a
ratio over a denominator near 0 means nothing), and exact McNemar p-values for each comparison,
raw and Holm-adjusted over the whole table.

The readings (:mod:`cultureqa.mocqa.hop_reading`) decide on Holm-adjusted tests both ways, never
on intervals or point estimates: each comparison is a difference (McNemar), no difference beyond
``twohop.hop.margin`` (Tango TOST) or inconclusive with the n that would decide it; the cell reads
clue needed, clue helps beyond the province (clue above oracle too: lexical hints), clue
misleads, clue unused, statement suffices, too weak to tell, or inconclusive at this n. Chance is
each item's own (1 / its options). A chance baseline (random or fixed position) cannot read the
table at all; its rows say so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cultureqa.core.spend import ApiStopped, stopped_reason
from cultureqa.evaluation.engine import RunSpec, evaluate
from cultureqa.knowledge.provinces import KnowledgeBase
from cultureqa.llm.store import StoreLocation
from cultureqa.mocqa.evaluate import EvalConfig, MocqaFamily, balanced_subset
from cultureqa.mocqa.hop_reading import (
    ALPHA,
    COMPARISONS,
    MARGIN,
    READINGS,
    RULE,
    above_chance_p,
    below_chance_margin_p,
    read_table,
)
from cultureqa.mocqa.paired import (
    bootstrap_means,
    discordant,
    equivalence_p,
    mcnemar_p,
    paired_difference,
    percentile_interval,
    proportion,
)

CONDITIONS = ("none", "clue", "oracle")
CHANCE_BACKENDS = frozenset({"random", "fixed"})
"""Backends that pick an option without reading the question (the plumbing check)."""
PROMPTS = {c: f"prompts/mocqa/hop/{c}" for c in CONDITIONS}
"""Default prompt folder per condition (each holds ``<style>.<language>.txt``)."""
__all__ = ["CONDITIONS", "READINGS", "HopConfig", "ablate", "hop_table", "run_hop"]


@dataclass(frozen=True)
class HopConfig:
    """``mocqa.hop``: which model (a param path), prompt style, items, bootstrap."""

    model: str = "model"
    prompt: str = "zero_shot"
    limit: int | None = 12
    bootstrap: int = 2000
    """Item resamples for the paired intervals."""
    seed: int = 13
    """Seed of the bootstrap (the intervals are deterministic)."""
    prompts: Mapping[str, str] = field(default_factory=lambda: dict(PROMPTS))
    """Condition → prompt folder relative to the project root; every condition needs one."""
    alpha: float = ALPHA
    """Family-wise error rate of the whole table's readings (Holm)."""
    margin: float = MARGIN
    """Equivalence margin (accuracy share): a comparison reads "no difference" only when shown
    within ± margin."""

    def __post_init__(self) -> None:
        prompts = {str(k): str(v) for k, v in dict(self.prompts).items()}
        if missing := [c for c in CONDITIONS if c not in prompts]:
            raise ValueError(f"hop prompts: missing condition(s) {missing}; it needs {CONDITIONS}")
        if unknown := sorted(set(prompts) - set(CONDITIONS)):
            raise ValueError(f"hop prompts: unknown condition(s) {unknown}; known {CONDITIONS}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"twohop.hop.alpha must lie in (0, 1), got {self.alpha}")
        if not 0 < self.margin < 1:
            raise ValueError(f"twohop.hop.margin must lie in (0, 1), got {self.margin}")
        object.__setattr__(self, "prompts", prompts)


def without_clue(question: str, clue: str) -> str | None:
    """The question with its clue removed, or None when the clue is not found verbatim."""
    if not clue.strip() or clue not in question:
        return None
    rest = " ".join(question.replace(clue, " ", 1).split()).lstrip(" .,;:")
    return rest[:1].upper() + rest[1:]


def with_oracle(question: str, clue: str, sentence: str) -> str | None:
    """The question with its clue replaced by ``sentence`` (None when the clue is not found)."""
    if not clue.strip() or clue not in question:
        return None
    return " ".join(question.replace(clue, sentence, 1).split())


def ablate(dataset: pd.DataFrame, condition: str) -> tuple[pd.DataFrame, int]:
    """The items under one condition, and how many had to be dropped (frame not found).

    The item's frame sentence (``narrative``: "Think of {clue}.") carries the clue: ``none``
    removes it, ``oracle`` puts the item's own sentence naming its province in its place
    (``background_oracle``, in the item's language), so the statement and options stay as built.
    """
    if condition == "clue":
        return dataset, 0
    if condition not in CONDITIONS:
        raise ValueError(f"unknown hop condition {condition!r}; known: {CONDITIONS}")
    rows = zip(dataset["question"], dataset["narrative"], dataset["background_oracle"], strict=True)
    if condition == "none":
        changed = [without_clue(str(q), str(frame)) for q, frame, _ in rows]
    else:
        changed = [with_oracle(str(q), str(frame), str(named)) for q, frame, named in rows]
    keep = pd.Series([s is not None for s in changed], index=dataset.index)
    frame = dataset.assign(question=[s or "" for s in changed])[keep]
    return frame, int((~keep).sum())


def paired_items(
    predictions: Mapping[str, pd.DataFrame], items: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per item answered under every condition: correctness per condition, first hop.

    With ``items`` (the dataset rows, with their ``options``), each row also carries its own
    ``chance``: 1 / its number of options.
    """
    keys = ["item_id", "language", "clue_type"]
    clue = predictions["clue"][[*keys, "correct", "province_correct"]].rename(
        columns={"correct": "clue", "province_correct": "first_hop"}
    )
    out = clue
    for condition in ("none", "oracle"):
        frame = predictions[condition][["item_id", "correct"]]
        out = out.merge(frame.rename(columns={"correct": condition}), on="item_id", how="inner")
    for column in (*CONDITIONS, "first_hop"):
        out[column] = out[column].fillna(False).astype(bool)
    if items is not None:
        chance = items[["item_id"]].assign(chance=[1 / len(o) for o in items["options"]])
        out = out.merge(chance, on="item_id", how="left", validate="one_to_one")
    return out.sort_values(keys).reset_index(drop=True)


def gain_interval(
    none: np.ndarray, clue: np.ndarray, oracle: np.ndarray, n_boot: int, seed: int
) -> tuple[float, tuple[float, float], float]:
    """Clue gain (clue − none)/(oracle − none), its paired bootstrap interval, undefined share.

    Resamples where naming the province adds nothing (oracle = none) have no gain; their share
    is returned so a reader sees when the interval rests on few resamples.
    """
    denominator = float(oracle.mean() - none.mean()) if none.size else math.nan
    point = float(clue.mean() - none.mean()) / denominator if denominator else math.nan
    means = bootstrap_means([none, clue, oracle], n_boot, seed)
    below = means[2] - means[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        gains = np.where(below != 0, (means[1] - means[0]) / below, np.nan)
    undefined = float(np.mean(~np.isfinite(gains))) if gains.size else math.nan
    return point, percentile_interval(gains), undefined


DIFFERENCES = {
    "clue_minus_none": ("clue", "none"),
    "oracle_minus_none": ("oracle", "none"),
    "oracle_minus_clue": ("oracle", "clue"),
}


def cell_stats(items: pd.DataFrame, config: HopConfig) -> dict[str, Any]:
    """Every number of one (language, clue type) cell but the table-wide reading."""
    arrays = {c: items[c].to_numpy(dtype=bool) for c in (*CONDITIONS, "first_hop")}
    out: dict[str, Any] = {"n": len(items)}
    for name, values in arrays.items():
        share = proportion(values)
        out.update({name: share.value, f"{name}_low": share.low, f"{name}_high": share.high})
    for label, (a, b) in DIFFERENCES.items():
        value, (low, high) = paired_difference(arrays[a], arrays[b], config.bootstrap, config.seed)
        out.update({label: value, f"{label}_low": low, f"{label}_high": high})
    gain, (g_low, g_high), undefined = gain_interval(
        arrays["none"], arrays["clue"], arrays["oracle"], config.bootstrap, config.seed
    )
    out.update({"gain": gain, "gain_low": g_low, "gain_high": g_high})
    out["gain_undefined_share"] = undefined
    for key, (a, b) in COMPARISONS.items():
        out[f"p_{key}"] = mcnemar_p(arrays[a], arrays[b])
        only_a, only_b = discordant(arrays[a], arrays[b])
        out[f"discordant_{key}"] = (only_a + only_b) / len(items) if len(items) else math.nan
        out[f"p_{key}_equivalence"] = float(
            equivalence_p(only_a, only_b, len(items), config.margin)
        )
    chances = items["chance"].to_numpy(dtype=float)
    if np.isnan(chances).any():
        raise ValueError("hop items without a chance (1 / options): every item needs its options")
    correct = int(arrays["none"].sum())
    out["chance"] = float(chances.mean()) if chances.size else math.nan
    out["p_above_chance"] = float(above_chance_p(correct, chances))
    out["p_at_chance"] = float(below_chance_margin_p(correct, chances, config.margin))
    return out


def hop_table(paired: pd.DataFrame, config: HopConfig, chance_model: bool) -> pd.DataFrame:
    """One row per language × clue type, plus an ``all`` row per language, read as one family.

    Holm runs on the unrounded p-values; the table is rounded afterwards.
    """
    rows = []
    for language, by_language in paired.groupby("language", sort=True):
        groups = [*by_language.groupby("clue_type", sort=True), ("all", by_language)]
        for clue_type, items in groups:
            stats = cell_stats(items, config)
            rows.append({"language": language, "clue_type": clue_type, **stats})
    table = read_table(pd.DataFrame(rows), chance_model, config.alpha, config.margin)
    p_values = [c for c in table.columns if c.startswith("p_")]
    numeric = [c for c in table.select_dtypes("number").columns if c not in p_values]
    table[numeric] = table[numeric].round(4)
    table[p_values] = table[p_values].map(lambda v: float(f"{v:.4g}"))  # keep tiny p visible
    return table


def run_hop(
    dataset: pd.DataFrame,
    model_cfg: Mapping[str, Any],
    config: HopConfig,
    root: Path,
    store_path: StoreLocation,
    kb: KnowledgeBase,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """(table, all predictions with a ``condition`` column, summary metrics)."""
    items = balanced_subset(dataset, config.limit)
    languages = tuple(sorted(items["language"].unique()))
    run = RunSpec(config.model, model_cfg, store_path, max_error_share=1.0, prompt=config.prompt)
    predictions, dropped = {}, {}
    for condition in CONDITIONS:
        frame, dropped[condition] = ablate(items, condition)
        eval_cfg = EvalConfig(config.prompt, languages, template_dir=config.prompts[condition])
        record, preds = evaluate(MocqaFamily(frame, eval_cfg, root, kb), run)
        if (reason := stopped_reason(record.api)) is not None:
            raise ApiStopped(reason)  # refused requests are not wrong answers; skip the rest
        predictions[condition] = preds.assign(condition=condition)
    chance_model = str(model_cfg.get("backend")) in CHANCE_BACKENDS
    paired = paired_items(predictions, items)
    table = hop_table(paired, config, chance_model)
    summary = _summary(model_cfg, config, items, paired, predictions, dropped, table)
    summary["chance_model"] = chance_model
    return table, pd.concat(predictions.values(), ignore_index=True), summary


def _summary(
    model_cfg: Mapping[str, Any],
    config: HopConfig,
    items: pd.DataFrame,
    paired: pd.DataFrame,
    predictions: Mapping[str, pd.DataFrame],
    dropped: Mapping[str, int],
    table: pd.DataFrame,
) -> dict[str, Any]:
    records = [
        {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
        for r in table.to_dict(orient="records")
    ]
    accuracy = {c: round(float(paired[c].mean()), 4) for c in CONDITIONS} if len(paired) else {}
    return {
        "model": str(model_cfg.get("id")),
        "roster_entry": config.model,
        "prompt": config.prompt,
        "items": len(items),
        "paired_items": len(paired),
        "dropped_clue_not_found": max(dropped.values()),
        "bootstrap": {"resamples": config.bootstrap, "seed": config.seed},
        "prompts": dict(config.prompts),
        "alpha": config.alpha,
        "margin": config.margin,
        "rule": RULE.format(alpha=config.alpha, margin=config.margin, pct=100 * config.alpha),
        "accuracy": accuracy,
        "errors": {c: int((p["status"] == "error").sum()) for c, p in predictions.items()},
        "readings": READINGS,
        "table": records,
        "by_cell": {f"{r['clue_type']}.{r['language']}": r for r in records},
    }
