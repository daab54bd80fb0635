"""Ingest: IndoCulture-format rows → one province-specific source item per row (DESIGN.md §5.1).

Reading, option splitting, answer parsing and province normalisation reuse the benchmark loader
(``cultureqa.benchmarks.load``), so a malformed cell fails with the same file/row/column message
the evaluation pipeline gives. Only ``is_province_specific == True`` rows can become two-hop
questions: a general Indonesian practice has no province to identify.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cultureqa.benchmarks.load import load_items
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.io import SourceError
from cultureqa.mocqa_shared.schema import LANGUAGES, SOURCE_COLUMNS
from cultureqa.records import McqItem

_TRUE = {"true", "1", "yes"}


@dataclass
class IngestResult:
    """Source items plus what was dropped and why."""

    items: pd.DataFrame
    metrics: dict[str, Any] = field(default_factory=dict)


def _language_columns(spec: BenchmarkSpec, language: str) -> list[str]:
    over = spec.languages.get(language)
    if over is None:
        return []
    question = over.question or spec.columns.question
    options = over.options or spec.columns.options
    return [question, *([options] if isinstance(options, str) else options)]


def _is_specific(value: Any) -> bool:
    return value is True or str(value).strip().lower() in _TRUE


def ingest(
    spec: BenchmarkSpec,
    frame: pd.DataFrame,
    origin: str,
    normalizer: Callable[[str], str | None],
) -> IngestResult:
    """Load every language the source carries and keep province-specific rows.

    Args:
        spec: Benchmark spec whose column mapping reads the source (``benchmarks.indoculture``).
        frame: The raw source rows.
        origin: Where the rows came from (named in errors).
        normalizer: Maps a province label to one of the 11 canonical names (the gazetteer).

    Returns:
        Items with :data:`~cultureqa.mocqa_shared.schema.SOURCE_COLUMNS`; a language the source
        lacks has empty text (rebalance later drops or translates those pairs).

    Raises:
        SourceError: A row is malformed or names an unknown province.
    """
    if "id" not in spec.languages:
        raise SourceError(origin, f"benchmark '{spec.name}' declares no Indonesian ('id') columns")
    by_language: dict[str, dict[str, McqItem]] = {}
    for language in LANGUAGES:
        if not all(c in frame.columns for c in _language_columns(spec, language)):
            continue
        loaded = load_items(spec, frame, language, origin, normalizer)
        by_language[language] = {item.id: item for item in loaded}
    sources: dict[str, str] = {}
    if "source" in frame.columns:
        sources = dict(
            zip(frame[spec.columns.id].astype(str), frame["source"].astype(str), strict=True)
        )
    rows = [_row(item, by_language, sources) for item in by_language["id"].values()]
    everything = pd.DataFrame(rows)
    specific = everything["is_province_specific"].map(_is_specific)
    kept = everything.loc[specific, list(SOURCE_COLUMNS)].sort_values("source_id")
    metrics = _metrics(origin, len(everything), kept, sorted(by_language))
    return IngestResult(kept.reset_index(drop=True), metrics)


def _metrics(origin: str, n_input: int, kept: pd.DataFrame, languages: list[str]) -> dict[str, Any]:
    removed = n_input - len(kept)
    by_province = kept["province"].value_counts().sort_index()
    return {
        "stage": "ingest",
        "origin": origin,
        "input": n_input,
        "kept": len(kept),
        "removed": removed,
        "removed_by_reason": {"not province-specific": removed} if removed else {},
        "languages_in_source": languages,
        "by_province": {str(k): int(v) for k, v in by_province.items()},
    }


def _row(
    item: McqItem, by_language: dict[str, dict[str, McqItem]], sources: dict[str, str]
) -> dict[str, Any]:
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
        "source": sources.get(item.id, ""),
    }
