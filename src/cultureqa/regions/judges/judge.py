"""The engine's judge step: the rule judge's record, then the panel over the built items.

The rule judge is :mod:`.checks` (structure, leaks, the clue decided again); its verdict on each
item is written as a :class:`.judging.Judgement` (``rules``: OK, or Significant with every
reason), so the judgements table has the panel's shape. When ``judge: panel`` the three models of
:mod:`.panel` then judge every item the rules kept, and the keep rule removes the rest, each
with the votes and the dissenting rationales.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from cultureqa.llm.store import StoreLocation
from cultureqa.regions.build import REMOVED_COLUMNS
from cultureqa.regions.judges.checks import item_options
from cultureqa.regions.judges.judging import Judgement
from cultureqa.regions.judges.panel import (
    PanelConfig,
    ask_panel,
    decisions,
    failures,
    format_options,
    language_name,
    removal_detail,
    removal_reason,
)

PANEL_SLOTS = ("noun", "region", "clue_type", "language", "question", "options", "answer")


def _fill(item: Mapping[str, Any], noun: str, region: str) -> dict[str, Any]:
    """The item as the model under test reads it: background (clue first), question, options."""
    lang = str(item["language"])
    options, _ = item_options(item)
    # a statement item's question opens with its clue sentence; a case item's background does
    question, narrative = str(item["question"]), str(item["narrative"])
    reads = question if question.startswith(narrative) else f"{narrative}\n\n{question}"
    return {
        "noun": noun,
        "region": region,
        "clue_type": item["clue_type"],
        "language": language_name(lang),
        "question": reads,
        "options": format_options(options),
        "answer": str(item["answer"]),  # the source's gold letter (before finalize moves it)
    }


def judge_items(
    items: pd.DataFrame,
    config: PanelConfig,
    noun: str,
    names: Mapping[str, str],
    store_path: StoreLocation,
) -> tuple[pd.DataFrame, pd.DataFrame, list[Judgement]]:
    """The panel over built items: (kept, removal records, every judgement).

    ``noun`` and ``names`` (region id → name): the words the judges are told, in the prompt's
    language (the set's first), whatever the item's language.
    """
    records = items.to_dict("records")
    ids = [str(r["item_id"]) for r in records]
    fills = [_fill(r, noun, names[str(r["region"])]) for r in records]
    judgements = ask_panel(ids, fills, config, PANEL_SLOTS, store_path) if records else []
    verdicts = decisions(judgements, config.min_acceptable).set_index("variant_id")
    why = failures(judgements)
    keep, removed = [], []
    for record, vid in zip(records, ids, strict=True):
        row = {"variant_id": vid, **verdicts.loc[vid].to_dict()}
        keep.append(bool(row["keep"]))
        if not row["keep"]:
            removed.append(
                {
                    **{c: record[c] for c in REMOVED_COLUMNS if c in record},
                    "stage": "judge", "reason": removal_reason(row),
                    "detail": removal_detail(row, why),
                }
            )  # fmt: skip
    kept = items[pd.Series(keep, index=items.index, dtype=bool)].reset_index(drop=True)
    return kept, pd.DataFrame(removed, columns=list(REMOVED_COLUMNS)), judgements


def rule_judgements(items: pd.DataFrame, removed: pd.DataFrame) -> list[Judgement]:
    """The rule judge's verdicts in the panel's record: OK, or Significant with every reason."""
    checked = removed[removed["stage"] == "check"]
    reasons = checked.groupby("item_id")["reason"].agg(lambda r: "; ".join(sorted(set(r))))
    out = [Judgement(str(i), "rules", category="OK") for i in items["item_id"]]
    for item_id, why in reasons.items():
        out.append(Judgement(str(item_id), "rules", category="Significant", rationale=str(why)))
    return out
