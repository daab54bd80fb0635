"""Hop necessity (issue 11, item 4): can a question be answered without its first hop?

A two-hop question is only two-hop if the clue is needed. The diagnostic asks one configured
model the same items three ways and compares answer accuracy per clue type × language:

* ``full``: the question as built;
* ``statement_only``: the clue removed, so the statement's "this province" points nowhere;
* ``options_only``: no question at all, only the three options (a prior or position bias).

A statement-only accuracy close to the full accuracy means the clue adds nothing (the statement
or the options give the answer away); near chance (1/3) means the first hop is needed. The rules
already rewrite or remove statements that name the province's people; this measures what rules
cannot see. Items are the finalized ones (options shuffled with the build's seed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.evaluation.engine import RunSpec, evaluate
from cultureqa.knowledge.provinces import KnowledgeBase
from cultureqa.mocqa.evaluate import EvalConfig, MocqaFamily, balanced_subset
from cultureqa.spend import ApiStopped, stopped_reason

CONDITIONS = ("full", "statement_only", "options_only")
NEUTRAL = {"en": "Which of the options is correct?", "id": "Manakah pilihan yang benar?"}
CHANCE = 1 / 3


@dataclass(frozen=True)
class HopConfig:
    """``mocqa.hop``: which model (a param path), prompt style and items per language."""

    model: str = "model"
    prompt: str = "zero_shot"
    limit: int | None = 12


def without_clue(question: str, clue: str) -> str | None:
    """The question with its clue removed, or None when the clue is not found verbatim."""
    if not clue.strip() or clue not in question:
        return None
    rest = " ".join(question.replace(clue, " ", 1).split()).lstrip(" .,;:")
    return rest[:1].upper() + rest[1:]


def ablate(dataset: pd.DataFrame, condition: str) -> tuple[pd.DataFrame, int]:
    """The items under one condition, and how many had to be dropped (clue not found)."""
    if condition == "full":
        return dataset, 0
    if condition == "options_only":
        return dataset.assign(question=dataset["language"].map(NEUTRAL)), 0
    if condition != "statement_only":
        raise ValueError(f"unknown hop condition {condition!r}; known: {CONDITIONS}")
    pairs = zip(dataset["question"], dataset["clue"], strict=True)
    stripped = [without_clue(str(q), str(c)) for q, c in pairs]
    keep = pd.Series([s is not None for s in stripped], index=dataset.index)
    frame = dataset.assign(question=[s or "" for s in stripped])[keep]
    return frame, int((~keep).sum())


def hop_table(predictions: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Accuracy per clue type × language under each condition, with n and the chance level."""
    parts = []
    for condition, frame in predictions.items():
        grouped = frame.groupby(["clue_type", "language"])["correct"]
        parts.append(grouped.mean().rename(condition))
        if condition == "full":
            parts.append(grouped.size().rename("n"))
    table = pd.concat(parts, axis=1).reset_index()
    table["chance"] = round(CHANCE, 3)
    return table.round(3)


def run_hop(
    dataset: pd.DataFrame,
    model_cfg: Mapping[str, Any],
    config: HopConfig,
    root: Path,
    store_path: Path,
    kb: KnowledgeBase,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """(table, all predictions with a ``condition`` column, summary metrics)."""
    items = balanced_subset(dataset, config.limit)
    eval_cfg = EvalConfig(style=config.prompt, languages=tuple(sorted(items["language"].unique())))
    run = RunSpec(config.model, model_cfg, store_path, max_error_share=1.0, prompt=config.prompt)
    predictions, dropped = {}, {}
    for condition in CONDITIONS:
        frame, dropped[condition] = ablate(items, condition)
        record, preds = evaluate(MocqaFamily(frame, eval_cfg, root, kb), run)
        if (reason := stopped_reason(record.api)) is not None:
            raise ApiStopped(reason)  # refused requests are not wrong answers; skip the rest
        predictions[condition] = preds.assign(condition=condition)
    table = hop_table(predictions)
    summary = {
        "model": str(model_cfg.get("id")),
        "roster_entry": config.model,
        "prompt": config.prompt,
        "items": len(items),
        "dropped_clue_not_found": dropped["statement_only"],
        "accuracy": {c: round(float(p["correct"].mean()), 3) for c, p in predictions.items()},
        "errors": {c: int((p["status"] == "error").sum()) for c, p in predictions.items()},
        "table": table.to_dict(orient="records"),
        "by_cell": {
            f"{r['clue_type']}.{r['language']}": {c: r[c] for c in (*CONDITIONS, "n")}
            for r in table.to_dict(orient="records")
        },
    }
    return table, pd.concat(predictions.values(), ignore_index=True), summary
