"""Ingest: IndoCulture-format rows → one province-specific source item per row (DESIGN.md §5.1).

The rows come through the one benchmark loader (:func:`~cultureqa.benchmarks.load.load_benchmark`)
that ``validate`` and ``evaluate`` use, so a malformed cell fails with the same file/row/column
message, the row policy is the benchmark's, and a declared ``sample`` is drawn from valid rows.
Every language the build asks for is mapped in one pass: a row whose English side is empty or
broken is dropped whole, with its reason counted, never kept with an empty English column. A
language whose columns the source does not have at all (the published Indonesian-only file) is
left out and named; rebalance translates or drops those pairs. Only ``is_province_specific ==
True`` rows can become two-hop questions: a general Indonesian practice has no province to identify.
The flag's reading and the drop reasons are the two-hop engine's
(:mod:`cultureqa.regions.sources.benchmark`), whose benchmark reader serves every region set.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cultureqa.benchmarks.load import LoadedSource
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.io import SourceError
from cultureqa.mocqa_shared.schema import SOURCE_COLUMNS
from cultureqa.records import McqItem
from cultureqa.regions.sources.benchmark import drop_reasons, is_specific


@dataclass
class IngestResult:
    """Source items plus what was dropped and why."""

    items: pd.DataFrame
    metrics: dict[str, Any] = field(default_factory=dict)


def ingest(spec: BenchmarkSpec, loaded: LoadedSource) -> IngestResult:
    """Keep the province-specific items of a loaded IndoCulture-format benchmark.

    Args:
        spec: Benchmark spec whose column mapping read the source (``benchmarks.indoculture``).
        loaded: The benchmark loaded in the build's languages (``absent="skip"``).

    Returns:
        Items with :data:`~cultureqa.mocqa_shared.schema.SOURCE_COLUMNS`; a language the source
        lacks has empty text (rebalance later drops or translates those pairs).

    Raises:
        SourceError: The source has no Indonesian side, or lacks ``is_province_specific``.
    """
    origin = loaded.origin
    if "id" not in loaded.items:
        raise SourceError(origin, f"benchmark '{spec.name}' has no Indonesian ('id') columns")
    by_language = {lang: {i.id: i for i in batch} for lang, batch in loaded.items.items()}
    frame = loaded.source
    sources = frame["source"].astype(str).tolist() if "source" in frame else [""] * len(frame)
    rows = [
        _row(item, by_language, source)
        for item, source in zip(loaded.items["id"], sources, strict=True)
    ]
    everything = pd.DataFrame(rows, columns=[*SOURCE_COLUMNS, "is_province_specific"])
    specific = everything["is_province_specific"].map(is_specific).astype(bool)
    kept = everything.loc[specific, list(SOURCE_COLUMNS)].sort_values("source_id")
    drops = drop_reasons(spec, loaded.counts.dropped)
    metrics = _metrics(loaded, len(everything), kept, drops)
    return IngestResult(kept.reset_index(drop=True), metrics)


def _metrics(
    loaded: LoadedSource, n_items: int, kept: pd.DataFrame, drops: Counter[str]
) -> dict[str, Any]:
    counts = loaded.counts
    not_specific = n_items - len(kept)
    reasons = dict(drops)
    if not_specific:
        reasons["not province-specific"] = not_specific
    not_drawn = counts.loaded - n_items  # valid rows the declared sample did not draw
    if not_drawn:
        reasons["not in the declared sample"] = not_drawn
    by_province = kept["province"].value_counts().sort_index()
    return {
        "stage": "ingest",
        "origin": loaded.origin,
        "input": counts.rows_read - counts.skipped,
        "rows_read": counts.rows_read,
        "rows_skipped": counts.skipped,
        "sampled": loaded.sampled,
        "kept": len(kept),
        "removed": sum(reasons.values()),
        "removed_by_reason": dict(sorted(reasons.items())),
        "load": counts.record(),
        "languages_in_source": sorted(loaded.items),
        "languages_absent": list(loaded.languages_absent),
        "by_province": {str(k): int(v) for k, v in by_province.items()},
    }


def _row(item: McqItem, by_language: dict[str, dict[str, McqItem]], source: str) -> dict[str, Any]:
    if "is_province_specific" not in item.metadata:
        raise SourceError(item.id, "ingest needs the metadata column 'is_province_specific'")
    english = by_language.get("en", {}).get(item.id)
    if english is not None and english.answer_index != item.answer_index:
        raise SourceError(item.id, "English and Indonesian answers differ")
    return {
        "source_id": item.id,
        "province": str(item.metadata.get("province", "")),
        "topic": str(item.metadata.get("topic", "")),
        "is_province_specific": item.metadata.get("is_province_specific", False),
        "context_id": item.question,
        "options_id": list(item.options),
        "context_en": english.question if english else "",
        "options_en": list(english.options) if english else [],
        "answer": item.answer_letter,
        "source": source,
    }
