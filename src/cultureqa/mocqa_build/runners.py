"""One function per ID-MoCQA stage: read the previous stage, build, return a StageResult.

The stage scripts call exactly one of these; choosing between the template and LLM generator, or
the rules judge and the panel, happens here from the composed params, never in the scripts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from cultureqa.benchmarks.load import load_source_frame
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.knowledge.gazetteer import normalize_province
from cultureqa.mocqa_build.card import card_json, card_markdown
from cultureqa.mocqa_build.clues import ClueGenerator
from cultureqa.mocqa_build.expand import expand_template
from cultureqa.mocqa_build.finalize import finalize
from cultureqa.mocqa_build.ingest import ingest
from cultureqa.mocqa_build.judge import judge_variants
from cultureqa.mocqa_build.pipeline import MocqaSettings
from cultureqa.mocqa_build.rebalance import rebalance
from cultureqa.mocqa_build.stage import StageResult
from cultureqa.mocqa_build.templates import load_templates
from cultureqa.mocqa_build.verify import template_repairer, verify_variants


def _template_generator(settings: MocqaSettings) -> ClueGenerator:
    return ClueGenerator(
        settings.kb(),
        load_templates(settings.templates),
        settings.national(),
        settings.clue_facts(),
        settings.min_gap_share,
    )


def _llm_steps(settings: MocqaSettings) -> Any:
    from cultureqa.mocqa_build.llm.repair import LlmSteps

    g = settings.generator
    assert g.model is not None and g.prompts_dir is not None  # kind llm: parsed in settings
    return LlmSteps(dict(g.model), g.prompts_dir, settings.store_path)


def run_ingest(settings: MocqaSettings, benchmark_cfg: dict[str, Any]) -> StageResult:
    """Read the configured IndoCulture source and keep province-specific items."""
    spec = BenchmarkSpec.from_config(benchmark_cfg)
    frame, origin = load_source_frame(spec, settings.root)
    result = ingest(spec, frame, origin, normalize_province)
    return StageResult(result.items, metrics=result.metrics)


def run_expand(settings: MocqaSettings) -> StageResult:
    """Every item × clue type × language with the configured generator."""
    items = settings.read("ingest")
    if settings.generator_kind == "template":
        return expand_template(
            items, _template_generator(settings), settings.clue_types, settings.languages
        )
    from cultureqa.mocqa_build.llm.generator import LlmGeneratorConfig, generate_llm

    g = settings.generator
    assert g.model is not None and g.prompts_dir is not None  # kind llm: parsed in settings
    config = LlmGeneratorConfig(dict(g.model), g.prompts_dir, g.max_revisions)
    return generate_llm(
        items,
        settings.kb(),
        config,
        settings.store_path,
        settings.clue_types,
        settings.languages,
        settings.national(),
    )


def run_judge(settings: MocqaSettings) -> StageResult:
    """Rules judge or LLM panel over the expanded variants."""
    return judge_variants(
        settings.read("expand"),
        settings.judge,
        settings.kb(),
        settings.languages,
        settings.store_path,
        settings.national(),
        settings.read("ingest"),
        settings.clue_facts(),
        settings.min_gap_share,
    )


def run_verify(settings: MocqaSettings) -> StageResult:
    """Phase 1 repair (regenerate or rewrite) and phase 2 structure check."""
    frame = settings.read("judge")
    if settings.generator_kind == "template":
        repairer = template_repairer(settings.read("ingest"), _template_generator(settings))
        return verify_variants(frame, settings.verify, repairer)
    from cultureqa.mocqa_build.llm.repair import llm_repairer, llm_reviewer

    steps = _llm_steps(settings)
    return verify_variants(frame, settings.verify, llm_repairer(steps), llm_reviewer(steps))


def run_rebalance(settings: MocqaSettings) -> StageResult:
    """Both languages for every pair: translate (LLM) or drop (template)."""
    translator = None
    if settings.generator_kind != "template":
        from cultureqa.mocqa_build.llm.repair import translate

        steps = _llm_steps(settings)
        translator = lambda rows, targets: translate(steps, rows, targets)  # noqa: E731
    return rebalance(
        settings.read("verify"),
        settings.languages,
        settings.read("ingest"),
        translator,
        settings.read_removed(("expand", "judge", "verify")),
        settings.verify.copy_ngram,
    )


def run_finalize(
    settings: MocqaSettings,
    stage_metrics: dict[str, dict[str, Any]],
    source: str,
    hop_summary: Mapping[str, Any] | None = None,
) -> tuple[StageResult, dict[str, Any], str]:
    """Dataset with balanced gold positions, plus the card (JSON and markdown)."""
    result = finalize(settings.read("rebalance"), settings.seed)
    info = {
        "name": "ID-MoCQA (cultureqa build)",
        "description": "Two-hop cultural questions built from IndoCulture-format items "
        "(first hop: identify the province from an indirect clue; second hop: "
        "complete the province-specific statement).",
        "generator": settings.generator_kind
        if settings.generator_kind == "template"
        else f"llm:{dict(settings.generator.model or {}).get('id')}",
        "judge": settings.judge.kind,
        "seed": settings.seed,
        "source": source,
        "languages": list(settings.languages),
        "clue_types": list(settings.clue_types),
        "hop_necessity": dict(hop_summary) if hop_summary else None,
    }
    stages = {**stage_metrics, "finalize": result.metrics}
    removed = settings.read_removed(("expand", "judge", "verify", "rebalance"))
    expanded = settings.out_dir("expand") / "variants.parquet"
    variants = pd.read_parquet(expanded) if expanded.exists() else None
    refused_path = settings.out_dir("expand") / "refused_facts.parquet"
    refused = pd.read_parquet(refused_path) if refused_path.exists() else None
    card = card_json(result.frame, stages, info, removed, variants, refused)
    return result, card, card_markdown(result.frame, card)


def validate_frame(settings: MocqaSettings) -> pd.DataFrame:
    """The finalized dataset, as the validate stage checks it."""
    return settings.read("finalize")
