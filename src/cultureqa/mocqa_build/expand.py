"""Expand: every source item × six clue types × two languages (DESIGN.md §5.2).

The template generator is deterministic and offline; the LLM generator (``llm_generator``) writes
the same row shape. Every attempted variant is accounted for: it either becomes a row or a removal
record saying why no question could be built (no verified fact, no source text in a language).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from cultureqa.mocqa_build.clues import Clue, ClueGenerator
from cultureqa.mocqa_build.question import build_question, clean_stem
from cultureqa.mocqa_build.stage import StageResult, stage_metrics
from cultureqa.mocqa_shared.schema import (
    CLUE_TYPES,
    VARIANT_COLUMNS,
    as_options,
    dumps_evidence,
    pair_id,
    removed_rows,
    variant_id,
)


def rotations(items: pd.DataFrame) -> pd.Series:
    """Each item's index among its province's items (sorted by id): the fact rotation."""
    ordered = items.sort_values("source_id")
    return ordered.groupby("province").cumcount().reindex(items.index)


def source_side(item: pd.Series, language: str) -> tuple[str, list[str]]:
    """The source item's context and options in ``language`` ('' and [] when it has none)."""
    suffix = "id" if language == "id" else "en"
    options = item.get(f"options_{suffix}")
    context = str(item.get(f"context_{suffix}") or "")
    return context, as_options(options if options is not None else [])


def variant_row(
    item: pd.Series,
    clue_type: str,
    language: str,
    clue_text: str,
    question: str,
    context: str,
    evidence: dict[str, Any],
    generator: str,
    template_id: str,
    fact_key: str,
) -> dict[str, Any]:
    """One row in the :data:`~cultureqa.mocqa_shared.schema.VARIANT_COLUMNS` shape."""
    return {
        "variant_id": variant_id(item["source_id"], clue_type, language),
        "pair_id": pair_id(item["source_id"], clue_type),
        "source_id": item["source_id"],
        "clue_type": clue_type,
        "language": language,
        "province": item["province"],
        "topic": item["topic"],
        "clue": clue_text,
        "context": context,
        "question": question,
        # a source without this language's options lends the other language's (LLM mode only)
        "options": source_side(item, language)[1]
        or source_side(item, "id" if language == "en" else "en")[1],
        "answer": item["answer"],
        "clue_evidence": dumps_evidence(evidence),
        "generator": generator,
        "template_id": template_id,
        "fact_key": fact_key,
    }


def template_variant(
    generator: ClueGenerator,
    item: pd.Series,
    clue: Clue,
    clue_type: str,
    language: str,
    rotation: int,
) -> dict[str, Any] | str:
    """The question for one language from a chosen clue, or why it cannot be built."""
    context, _ = source_side(item, language)
    if not context.strip():
        return f"no {language} source text"
    stem = clean_stem(context, language, str(item["province"]))
    index = rotation + CLUE_TYPES.index(clue_type)
    question, frame_id = build_question(
        clue.text[language], stem.text, language, generator.book, index
    )
    evidence = {
        **clue.evidence,
        "fact_key": clue.fact_key,
        "stem_places_removed": list(stem.removed),
        "stem_terms_rewritten": list(stem.rewritten),
    }
    return variant_row(
        item,
        clue_type,
        language,
        clue.text[language],
        question,
        stem.text,
        evidence,
        "template",
        f"{clue.template_id}|{frame_id}",
        clue.fact_key,
    )


def expand_template(
    items: pd.DataFrame,
    generator: ClueGenerator,
    clue_types: Sequence[str] = CLUE_TYPES,
    languages: Sequence[str] = ("en", "id"),
) -> StageResult:
    """Build every variant the KB and templates allow; account for the rest."""
    rows: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    rotation_of = rotations(items)
    for index, item in items.sort_values("source_id").iterrows():
        rotation = int(rotation_of[index])
        options = {lang: source_side(item, lang)[1] for lang in languages}
        for clue_type in clue_types:
            clue, why = generator.clue_for(item["province"], clue_type, rotation, options)
            for language in languages:
                made = (
                    template_variant(generator, item, clue, clue_type, language, rotation)
                    if clue is not None
                    else f"no usable {clue_type} clue"
                )
                if isinstance(made, dict):
                    rows.append(made)
                else:
                    failures.append(
                        {
                            "variant_id": variant_id(item["source_id"], clue_type, language),
                            "pair_id": pair_id(item["source_id"], clue_type),
                            "language": language,
                            "reason": made,
                            "detail": why,
                        }
                    )
    result = expand_result(items, rows, failures, clue_types, languages, "template")
    result.metrics["candidate_facts_passed_over"] = dict(sorted(generator.rejections.items()))
    result.metrics["statements_rewritten"] = rewrite_counts(rows)
    refused = refused_table(generator)
    result.metrics["clue_facts_refused"] = refusal_counts(refused)
    result.tables["refused_facts"] = refused
    return result


def refused_table(generator: ClueGenerator) -> pd.DataFrame:
    """Every distinct candidate fact refused before any item could use it, with the reason.

    Named facts shared nationally, unknown or unchecked; claims on too thin a margin. These are
    facts, not items: one refused fact would otherwise have served many items of its province.
    """
    columns = ["province", "clue_type", "fact_key", "reason"]
    rows = [(r.province, r.clue_type, r.fact_key, r.reason) for r in generator.refused()]
    return pd.DataFrame(rows, columns=columns)


def refusal_counts(refused: pd.DataFrame) -> dict[str, Any]:
    """Refused facts by reason, and by clue type × reason (for the card and MLflow)."""
    by_reason = refused.groupby("reason").size() if len(refused) else pd.Series(dtype=int)
    by_type = refused.groupby(["clue_type", "reason"]).size() if len(refused) else by_reason
    return {
        "total": len(refused),
        "by_reason": {str(k): int(v) for k, v in by_reason.items()},
        "by_clue_type_reason": {f"{c}: {r}": int(v) for (c, r), v in by_type.items()},
    }


def rewrite_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Statements whose own-province terms were rewritten, by kind of term and language.

    These are repairs (the item stays), so they are counted rather than removed; the card and
    the MLflow run report them next to the removals.
    """
    counts: dict[str, int] = {}
    for row in rows:
        for term in json.loads(str(row["clue_evidence"])).get("stem_terms_rewritten", []):
            kind = str(term).rsplit("(", 1)[-1].rstrip(")")
            key = f"{row['language']}: {kind}"
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def expand_result(
    items: pd.DataFrame,
    rows: list[dict[str, Any]],
    failures: list[dict[str, Any]],
    clue_types: Sequence[str],
    languages: Sequence[str],
    generator: str,
) -> StageResult:
    """Variants plus one removal record per attempt that produced no question."""
    frame = pd.DataFrame(rows, columns=list(VARIANT_COLUMNS))
    failed = pd.DataFrame(
        failures, columns=["variant_id", "pair_id", "language", "reason", "detail"]
    )
    removed = removed_rows(failed, "expand", failed["reason"], failed["detail"])
    attempted = len(items) * len(clue_types) * len(languages)
    metrics = stage_metrics(
        "expand", attempted, frame, removed, generator=generator, source_items=len(items)
    )
    return StageResult(frame, removed, metrics)
