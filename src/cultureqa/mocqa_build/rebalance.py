"""Rebalance: every (source id, clue type) pair in every build language (DESIGN.md §5.5).

Earlier stages remove variants one language at a time, so a pair can lose one side. With the LLM
generator the missing side is translated (cultural terms and proper nouns kept, options taken
from the source item's own translation); with the template generator nothing can be translated,
so the orphan is dropped and the record says which earlier removal caused it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from cultureqa.mocqa_build.expand import source_side
from cultureqa.mocqa_build.stage import StageResult, stage_metrics
from cultureqa.mocqa_build.verify import phase1_issues
from cultureqa.mocqa_shared.schema import VARIANT_COLUMNS, removed_rows, require_columns, variant_id

Translator = Callable[[pd.DataFrame, list[str]], list[tuple[str, str] | None]]
"""(source rows, target language per row) → (question, clue) per row, or None if it failed."""


def _why_missing(pid: str, missing: Sequence[str], earlier: pd.DataFrame | None) -> str:
    if earlier is None or earlier.empty:
        return f"no {', '.join(missing)} version"
    hits = earlier[earlier["pair_id"] == pid]
    hits = hits[hits["language"].isin(missing)]
    if hits.empty:
        return f"no {', '.join(missing)} version"
    return "; ".join(f"{r.language} removed at {r.stage}: {r.reason}" for r in hits.itertuples())


def _translated_row(
    source: dict[str, Any], target: str, text: tuple[str, str], items: pd.DataFrame
) -> dict[str, Any]:
    item = items[items["source_id"] == source["source_id"]].iloc[0]
    options = source_side(item, target)[1] or list(source["options"])
    evidence = json.loads(source["clue_evidence"])
    evidence["translated_from"] = source["language"]
    return {
        **source,
        "variant_id": variant_id(source["source_id"], source["clue_type"], target),
        "language": target,
        "question": text[0],
        "clue": text[1] or "",
        "context": source_side(item, target)[0],
        "options": options,
        "clue_evidence": json.dumps(evidence, sort_keys=True, ensure_ascii=False),
        "generator": f"{source['generator']}+translate",
        "template_id": f"translate:{source['language']}->{target}",
    }


def _translate_missing(
    frame: pd.DataFrame,
    incomplete: dict[str, list[str]],
    translator: Translator,
    items: pd.DataFrame,
    copy_ngram: int,
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Translated rows that pass phase-1 checks, and why the others failed (per pair)."""
    added: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    sources = frame[frame["pair_id"].isin(incomplete)].drop_duplicates("pair_id")
    targets = [incomplete[p][0] for p in sources["pair_id"]]
    for source, target, text in zip(
        sources.to_dict("records"), targets, translator(sources, targets), strict=True
    ):
        row = _translated_row(source, target, text, items) if text else None
        issues = phase1_issues(row, copy_ngram) if row else ["translation failed"]
        if row is None or issues:
            failed[source["pair_id"]] = "; ".join(issues)
        else:
            added.append(row)
    return added, failed


def rebalance(
    frame: pd.DataFrame,
    languages: Sequence[str],
    items: pd.DataFrame,
    translator: Translator | None = None,
    earlier_removed: pd.DataFrame | None = None,
    copy_ngram: int = 4,
) -> StageResult:
    """Keep complete pairs; translate or drop incomplete ones."""
    require_columns(frame, VARIANT_COLUMNS, "rebalance")
    present = frame.groupby("pair_id")["language"].agg(set)
    incomplete = {
        pid: sorted(set(languages) - langs)
        for pid, langs in present.items()
        if set(languages) - langs
    }
    added: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    if translator is not None and incomplete:
        added, failed = _translate_missing(frame, incomplete, translator, items, copy_ngram)
    unfixed = {p for p in incomplete if p in failed or translator is None}
    drop = frame["pair_id"].isin(unfixed)
    dropped = frame[drop]
    detail = dropped["pair_id"].map(
        lambda p: failed.get(p) or _why_missing(p, incomplete[p], earlier_removed)
    )
    reason = (
        "translation of the missing side failed"
        if translator is not None
        else "counterpart language missing (template mode does not translate)"
    )
    removed = removed_rows(dropped, "rebalance", reason, detail)
    kept = (
        pd.concat(
            [frame[~drop], pd.DataFrame(added, columns=list(VARIANT_COLUMNS))], ignore_index=True
        )
        .sort_values(["pair_id", "language"])
        .reset_index(drop=True)
    )
    metrics = stage_metrics(
        "rebalance",
        len(frame),
        kept,
        removed,
        translated=len(added),
        incomplete_pairs=len(incomplete),
    )
    return StageResult(kept.loc[:, list(VARIANT_COLUMNS)], removed, metrics)
