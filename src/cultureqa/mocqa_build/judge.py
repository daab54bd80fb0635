"""Judge stage: the rules judge (offline default) or a three-model LLM panel (DESIGN.md §5.3).

Both write one record per (variant, judge) into a judgements table and apply the same keep rule
(:func:`cultureqa.regions.judges.judging.keep`); the panel itself is the two-hop engine's
(:mod:`cultureqa.regions.judges.panel`), asked with this build's slots. Removed variants carry
the vote counts as their reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.knowledge.national_clues import ClueFactTable
from cultureqa.knowledge.provinces import KnowledgeBase
from cultureqa.llm.store import StoreLocation
from cultureqa.mocqa_build.judge_rules import RulesConfig, judge_rules
from cultureqa.mocqa_build.stage import StageResult, stage_metrics
from cultureqa.mocqa_shared.schema import (
    VARIANT_COLUMNS,
    as_options,
    removed_rows,
    require_columns,
)
from cultureqa.regions.judges.judging import Judgement
from cultureqa.regions.judges.panel import (
    LANGUAGE_NAMES,
    PanelConfig,
    ask_panel,
    decisions,
    failures,
    format_options,
    judge_counts,
    language_name,
    removal_detail,
    removal_reason,
)

__all__ = ["LANGUAGE_NAMES", "PANEL_SLOTS", "JudgeConfig", "format_options", "judge_variants"]

PANEL_SLOTS = ("question", "options", "answer", "province", "clue_type", "language")


@dataclass(frozen=True)
class JudgeConfig:
    """``conf/judge/{rules,panel}.yaml``: the engine's panel settings and the ID-MoCQA rules."""

    kind: str = "rules"
    min_acceptable: int = 1
    rules: RulesConfig = field(default_factory=RulesConfig)
    judges: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    prompt: Path | None = None

    @classmethod
    def from_params(cls, cfg: Mapping[str, Any], root: Path) -> JudgeConfig:
        """Parse the ``judge`` params section (:meth:`PanelConfig.from_params`) and its rules."""
        panel = PanelConfig.from_params(cfg, root)
        rules = RulesConfig(**dict(cfg.get("rules") or {}))
        return cls(panel.kind, panel.min_acceptable, rules, panel.judges, panel.prompt)

    @property
    def panel(self) -> PanelConfig:
        """The panel part, as :func:`cultureqa.regions.judges.panel.ask_panel` takes it."""
        return PanelConfig(self.kind, self.min_acceptable, self.judges, self.prompt)


def judge_panel(
    variants: pd.DataFrame, config: JudgeConfig, store_path: StoreLocation
) -> list[Judgement]:
    """Ask every panel model about every variant; parse replies, record malformed ones."""
    rows = variants.to_dict(orient="records")
    fills = [
        {
            "question": r["question"],
            "options": format_options(as_options(r["options"])),
            "answer": r["answer"],
            "province": r["province"],
            "clue_type": r["clue_type"],
            "language": language_name(str(r["language"])),
        }
        for r in rows
    ]
    ids = [str(r["variant_id"]) for r in rows]
    return ask_panel(ids, fills, config.panel, PANEL_SLOTS, store_path)


def judge_variants(
    variants: pd.DataFrame,
    config: JudgeConfig,
    kb: KnowledgeBase,
    languages: Sequence[str],
    store_path: StoreLocation,
    national: KnowledgeBase | None = None,
    items: pd.DataFrame | None = None,
    clue_facts: ClueFactTable | None = None,
    min_gap_share: float = 0.0,
) -> StageResult:
    """Judge every variant and keep those the rule accepts.

    ``national`` (all provinces of Indonesia) is what comparison and intersection claims are
    re-verified against (by ``min_gap_share`` at least); without it they are checked against
    ``kb``. ``clue_facts`` re-checks named facts nationally. ``items`` (the ingested source
    items) lets the rules judge check that each variant still has its source answer.
    """
    require_columns(variants, VARIANT_COLUMNS, "judge")
    if config.kind == "rules":
        judgements = judge_rules(
            variants, kb, config.rules, languages, national, items, clue_facts, min_gap_share
        )
    else:
        judgements = judge_panel(variants, config, store_path)
    merged = variants.merge(
        decisions(judgements, config.min_acceptable), on="variant_id", how="left"
    )
    kept_mask = merged["keep"].fillna(False).astype(bool)
    dropped = merged.loc[~kept_mask]
    why = failures(judgements)
    records = dropped.to_dict("records")
    reasons = pd.Series([removal_reason(r) for r in records], index=dropped.index, dtype="str")
    detail = pd.Series([removal_detail(r, why) for r in records], index=dropped.index, dtype="str")
    removed = removed_rows(dropped, "judge", reasons, detail)
    kept = variants.loc[kept_mask.to_numpy()].reset_index(drop=True)
    table = pd.DataFrame([j.record() for j in judgements])
    metrics = stage_metrics(
        "judge",
        len(variants),
        kept,
        removed,
        judge=config.kind,
        min_acceptable=config.min_acceptable,
        **judge_counts(judgements),
    )
    return StageResult(kept, removed, metrics, {"judgements": table})
