"""Dataset card (markdown + JSON): what was built, from what, and what each stage removed.

Researchers reading a benchmark need the funnel as much as the final counts: how many candidate
questions each stage dropped and why, and how the survivors spread over clue types, languages,
provinces and topics (DESIGN.md §5.6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

STAGE_ORDER = ("ingest", "expand", "judge", "verify", "rebalance", "finalize")


def _counts(frame: pd.DataFrame, columns: Sequence[str]) -> dict[str, int]:
    grouped = frame.groupby(list(columns)).size()
    return {
        ".".join(str(k) for k in (key if isinstance(key, tuple) else (key,))): int(n)
        for key, n in grouped.items()
    }


def words_table(dataset: pd.DataFrame) -> pd.DataFrame:
    """Words per question by clue type × language (mean, median, min, max)."""
    stats = dataset.groupby(["clue_type", "language"])["n_words"].agg(
        ["mean", "median", "min", "max"]
    )
    return stats.round(1).reset_index()


def card_json(
    dataset: pd.DataFrame, stages: Mapping[str, Mapping[str, Any]], info: Mapping[str, Any]
) -> dict[str, Any]:
    """Machine-readable card: stage funnel, counts by every slice, words, gold positions."""
    full = ["clue_type", "language", "province", "topic"]
    return {
        **info,
        "rows": len(dataset),
        "pairs": int(dataset["pair_id"].nunique()) if len(dataset) else 0,
        "source_items": int(dataset["source_id"].nunique()) if len(dataset) else 0,
        "stages": [dict(stages[s]) for s in STAGE_ORDER if s in stages],
        "counts": {
            "clue_type_x_language": _counts(dataset, ["clue_type", "language"]),
            "province": _counts(dataset, ["province"]),
            "topic": _counts(dataset, ["topic"]),
            "clue_type_x_language_x_province_x_topic": _counts(dataset, full),
        },
        "words_per_question": words_table(dataset).to_dict(orient="records"),
        "gold_positions": _counts(dataset, ["answer"]),
    }


def _md_table(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def _funnel(stages: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for s in stages:
        reasons = "; ".join(f"{r} ({n})" for r, n in s.get("removed_by_reason", {}).items()) or "—"
        rows.append(
            {
                "stage": s["stage"],
                "in": s.get("input", ""),
                "kept": s.get("kept", ""),
                "removed": s.get("removed", ""),
                "why removed": reasons,
            }
        )
    return _md_table(pd.DataFrame(rows)) if rows else "(no stage metrics found)"


def card_markdown(dataset: pd.DataFrame, card: Mapping[str, Any]) -> str:
    """Human-readable card with the funnel and the main cross-tables."""
    by_type = pd.crosstab(dataset["clue_type"], dataset["language"]).reset_index()
    by_province = pd.crosstab(dataset["province"], dataset["clue_type"]).reset_index()
    by_topic = pd.crosstab(dataset["topic"], dataset["clue_type"]).reset_index()
    parts = [
        f"# {card.get('name', 'ID-MoCQA')} — dataset card",
        "",
        str(card.get("description", "")),
        "",
        f"- rows: {card['rows']} ({card['pairs']} English/Indonesian pairs from "
        f"{card['source_items']} source items)",
        f"- generator: {card.get('generator')}; judge: {card.get('judge')}",
        f"- option shuffle seed: {card.get('seed')}; gold positions: {card['gold_positions']}",
        f"- source: {card.get('source')}",
        "",
        "## Stages (kept / removed and why)",
        "",
        _funnel(card["stages"]),
        "",
        "## Clue type × language",
        "",
        _md_table(by_type),
        "",
        "## Province × clue type",
        "",
        _md_table(by_province),
        "",
        "## Topic × clue type",
        "",
        _md_table(by_topic),
        "",
        "## Words per question",
        "",
        _md_table(words_table(dataset)),
        "",
        "The full clue type × language × province × topic counts are in card.json.",
    ]
    return "\n".join(parts) + "\n"
