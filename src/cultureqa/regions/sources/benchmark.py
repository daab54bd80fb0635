"""Single-hop source rows from any benchmark with a region column (docs/twohop-engine.md §1).

The rows come through the one benchmark loader (:func:`~cultureqa.benchmarks.load.load_benchmark`)
that ``validate`` and ``evaluate`` use, so a malformed cell fails with the same file/row/column
message, the row policy is the benchmark's (its drops keep their reasons here), and a declared
``sample`` is drawn from valid rows. Every language of the set the benchmark maps is read in one
pass: a row broken in one language is dropped whole by the loader, never kept half. A language
whose columns the source lacks altogether is left out and named.

Only rows the benchmark marks specific to one region (``specific_column``: IndoCulture's
``is_province_specific``) can become two-hop questions: a practice common to the whole country has
no region to identify. The others are dropped and counted with the reason ``not specific to one
region``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cultureqa.benchmarks.load import Drop, load_benchmark
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.io import SourceError

_TRUE = {"true", "1", "yes"}
NOT_SPECIFIC = "not specific to one region"
NOT_SAMPLED = "not in the declared sample"


def is_specific(value: Any) -> bool:
    """The benchmark's region-specific flag as read from CSV, parquet or JSON."""
    return value is True or str(value).strip().lower() in _TRUE


def drop_reasons(spec: BenchmarkSpec, dropped: list[Drop]) -> Counter[str]:
    """Load drops by reason; one whose column is a language's own reads "no usable <lang> text"."""
    own: dict[str, str] = {}
    for lang, over in spec.languages.items():
        for column in (over.question, *([over.options] if isinstance(over.options, str)
                                        else over.options or [])):  # fmt: skip
            if column:
                own[column] = lang
    return Counter(
        f"no usable {own[d.column]} text ({d.reason})" if d.column in own else d.reason
        for d in dropped
    )


@dataclass
class BenchmarkRows:
    """One row per (benchmark row, language), and every row not used with its reason."""

    rows: list[dict[str, Any]]
    dropped: Counter[str] = field(default_factory=Counter)
    languages_absent: tuple[str, ...] = ()


def benchmark_rows(
    config: Mapping[str, Any],
    source: Mapping[str, Any],
    index: Mapping[str, str],
    root: Path,
    languages: tuple[str, ...],
) -> BenchmarkRows:
    """The benchmark's region-specific rows in every set language it maps.

    Args:
        config: The benchmark config (``benchmarks.<name>``).
        source: The set's ``source`` mapping: ``region_column`` (default: the benchmark's
            ``location.region_column``), ``specific_column`` (optional), ``topic_column``.
        index: Lower-cased region name, alias or id → region id (the set's regions table).
        root: Project root the benchmark's source path resolves from.
        languages: The set's languages.

    Raises:
        SourceError: the benchmark cannot be read, maps none of the set's languages, has no region
            column, names a region outside the set (file, row, column), or its languages disagree
            on a row's answer.
    """
    spec = BenchmarkSpec.from_config(config)
    loaded = load_benchmark(spec, root, languages=languages, absent="skip")
    origin = loaded.origin
    region_column = str(source.get("region_column") or spec.location.region_column or "")
    if not region_column:
        raise SourceError(origin, f"benchmark '{spec.name}' declares no region column")
    langs = [lang for lang in languages if lang in loaded.items]
    if not langs:
        raise SourceError(origin, f"benchmark '{spec.name}' maps none of the languages {languages}")
    specific = source.get("specific_column")
    topic = str(source.get("topic_column") or "topic")
    by_language = {lang: {i.id: i for i in loaded.items[lang]} for lang in langs}
    frame = loaded.source
    where = [
        (str(r.get("_file") or origin), int(r.get("_row") or r.get("_n") or k + 1))
        for k, r in enumerate(frame.to_dict("records"))
    ]
    dropped = drop_reasons(spec, loaded.counts.dropped)
    rows: list[dict[str, Any]] = []
    first = loaded.items[langs[0]]
    for (path, row), item in zip(where, first, strict=True):
        meta = item.metadata
        if specific:
            if specific not in meta:
                raise SourceError(path, "no region-specific flag", row, str(specific))
            if not is_specific(meta[specific]):
                dropped[NOT_SPECIFIC] += 1
                continue
        value = str(meta.get(region_column) or "").strip()
        rid = index.get(value.lower())
        if rid is None:
            raise SourceError(path, f"'{value}' is not a region of the set", row, region_column)
        sides = [by_language[lang][item.id] for lang in langs]
        if len({s.answer_index for s in sides}) != 1:
            raise SourceError(path, f"the answer differs between {langs}", row, "answer")
        for lang, side in zip(langs, sides, strict=True):
            rows.append(
                {
                    "source_id": item.id, "region": rid, "language": lang,
                    "context": side.question, "question": "", "options": list(side.options),
                    "answer": side.answer_letter, "topic": str(meta.get(topic) or ""),
                }
            )  # fmt: skip
    if not_drawn := loaded.counts.loaded - len(first):
        dropped[NOT_SAMPLED] += not_drawn
    return BenchmarkRows(rows, dropped, loaded.languages_absent)
