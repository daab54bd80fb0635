"""Judge stage: the rules judge (offline default) or a three-model LLM panel (DESIGN.md §5.3).

Both write one record per (variant, judge) into a judgements table and apply the same keep rule
(:func:`.judging.keep`). Removed variants carry the vote counts as their reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.evaluation.parsing import EMPTY, EMPTY_ERROR, is_empty_reply
from cultureqa.knowledge.national_clues import ClueFactTable
from cultureqa.knowledge.provinces import KnowledgeBase
from cultureqa.llm.store import StoreLocation
from cultureqa.mocqa_build.judge_rules import RulesConfig, judge_rules
from cultureqa.mocqa_build.judging import Judgement, decide, parse_reply
from cultureqa.mocqa_build.stage import StageResult, required, stage_metrics
from cultureqa.mocqa_shared.models import load_prompt, run_models
from cultureqa.mocqa_shared.schema import (
    LETTERS,
    VARIANT_COLUMNS,
    as_options,
    removed_rows,
    require_columns,
)

LANGUAGE_NAMES = {"en": "English", "id": "Indonesian"}
PANEL_SLOTS = ("question", "options", "answer", "province", "clue_type", "language")


@dataclass(frozen=True)
class JudgeConfig:
    """``conf/judge/{rules,panel}.yaml``."""

    kind: str = "rules"
    min_acceptable: int = 1
    rules: RulesConfig = field(default_factory=RulesConfig)
    judges: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    prompt: Path | None = None

    @classmethod
    def from_params(cls, cfg: Mapping[str, Any], root: Path) -> JudgeConfig:
        """Parse the ``judge`` params section; a panel needs judges and a prompt."""
        kind = str(required(cfg, "kind", "judge"))
        if kind not in ("rules", "panel"):
            raise ValueError(f"judge.kind must be 'rules' or 'panel', got {kind!r}")
        rules = RulesConfig(**dict(cfg.get("rules") or {}))
        judges = {str(k): dict(v) for k, v in dict(cfg.get("judges") or {}).items()}
        if kind == "panel" and (not judges or not cfg.get("prompt")):
            raise ValueError("judge.kind=panel needs judge.judges and judge.prompt")
        prompt = root / str(cfg["prompt"]) if cfg.get("prompt") else None
        return cls(kind, int(required(cfg, "min_acceptable", "judge")), rules, judges, prompt)


def format_options(options: Sequence[str]) -> str:
    """Options as lettered lines, the way judges and annotators see them."""
    return "\n".join(f"{letter}. {text}" for letter, text in zip(LETTERS, options, strict=False))


def judge_panel(
    variants: pd.DataFrame, config: JudgeConfig, store_path: StoreLocation
) -> list[Judgement]:
    """Ask every panel model about every variant; parse replies, record malformed ones."""
    assert config.prompt is not None
    prompt = load_prompt(config.prompt, PANEL_SLOTS)
    rows = variants.to_dict(orient="records")
    jobs = {}
    for name, model_cfg in config.judges.items():
        requests = [
            prompt.request(
                model_cfg,
                question=r["question"],
                options=format_options(as_options(r["options"])),
                answer=r["answer"],
                province=r["province"],
                clue_type=r["clue_type"],
                language=LANGUAGE_NAMES.get(str(r["language"]), r["language"]),
            )
            for r in rows
        ]
        jobs[name] = (model_cfg, requests)
    answers = run_models(jobs, store_path)
    out = []
    for name, responses in answers.items():
        for row, response in zip(rows, responses, strict=True):
            vid = str(row["variant_id"])
            if response.status != "ok" or response.text is None:
                out.append(Judgement(vid, name, status="error", error=response.error or "no reply"))
            elif is_empty_reply(response.status, response.text):  # neither valid nor an error
                out.append(Judgement(vid, name, status=EMPTY, error=EMPTY_ERROR))
            else:
                out.append(parse_reply(vid, name, response.text))
    return out


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
    by_variant: dict[str, list[Judgement]] = {}
    for j in judgements:
        by_variant.setdefault(j.variant_id, []).append(j)
    decisions = pd.DataFrame(
        [{"variant_id": v, **decide(js, config.min_acceptable)} for v, js in by_variant.items()]
    )
    merged = variants.merge(decisions, on="variant_id", how="left")
    kept_mask = merged["keep"].fillna(False).astype(bool)
    dropped = merged.loc[~kept_mask]
    reasons = dropped.apply(_reason, axis=1) if len(dropped) else pd.Series([], dtype="str")
    detail = (
        dropped.apply(
            lambda r: (
                f"{r['n_acceptable']}/{r['n_judges']} acceptable, {r['n_significant']} significant"
            ),
            axis=1,
        )
        if len(dropped)
        else ""
    )
    why = _failures(judgements)
    if len(dropped):
        detail = detail + dropped["variant_id"].map(lambda v: f"; {why[v]}" if why.get(v) else "")
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
        **_judge_counts(judgements),
    )
    return StageResult(kept, removed, metrics, {"judgements": table})


def _failures(judgements: Sequence[Judgement]) -> dict[str, str]:
    """Per variant, the rationale of each judge that did not find it Acceptable."""
    out: dict[str, list[str]] = {}
    for j in judgements:
        if not j.acceptable and j.rationale:
            out.setdefault(j.variant_id, []).append(f"{j.judge}: {j.rationale[:300]}")
    return {k: " / ".join(v) for k, v in out.items()}


def _reason(row: pd.Series) -> str:
    if row["n_significant"] > 0:
        return "a judge rated it Significant"
    return "too few judges rated it Acceptable"


def _judge_counts(judgements: Sequence[Judgement]) -> dict[str, Any]:
    categories: dict[str, Counter[str]] = {}
    status: dict[str, Counter[str]] = {}
    for j in judgements:
        categories.setdefault(j.judge, Counter())[j.category or "none"] += 1
        status.setdefault(j.judge, Counter())[j.status] += 1
    return {
        "categories_by_judge": {k: dict(sorted(v.items())) for k, v in categories.items()},
        "reply_status_by_judge": {k: dict(sorted(v.items())) for k, v in status.items()},
    }
