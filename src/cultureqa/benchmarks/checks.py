"""Checks a benchmark must pass before any model is called (run by ``validate`` and the CLI).

Slice names, prompt templates per language and DVC tracking of the sources are config facts: a
typo there used to surface only after every model had run, or never (an English template quietly
standing in for Swahili). Here each is an error naming the key and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cultureqa.benchmarks.load import LoadCounts, items_frame, load_items, load_source_frame
from cultureqa.benchmarks.spec import BenchmarkSpec, SpecError
from cultureqa.benchmarks.tracking import check_tracked
from cultureqa.evaluation.prompts import Template, find_template
from cultureqa.records import McqItem


@dataclass
class Loaded:
    """Items per language, their validation frame, the raw source rows and what loading changed."""

    items: dict[str, list[McqItem]]
    frame: pd.DataFrame
    source: pd.DataFrame
    origin: str
    counts: LoadCounts


def check_slices(spec: BenchmarkSpec) -> None:
    """Every slice column is a declared metadata field."""
    known = set(spec.columns.metadata)
    for group in spec.slices:
        unknown = [c for c in group if c not in known]
        if unknown:
            raise SpecError(
                f"benchmark '{spec.name}': slice {list(group)} names {unknown}, which are not "
                f"metadata (columns.metadata: {sorted(known)})"
            )


def check_templates(spec: BenchmarkSpec, root: Path, style: str) -> dict[str, Template]:
    """The template of every setting in ``style``; a missing language is a TemplateError."""
    return {
        s.name: find_template(
            root, spec.name, s.scoring, style, s.language, spec.prompt_fallback.get(s.language)
        )
        for s in spec.settings
    }


def preflight(spec: BenchmarkSpec, root: Path, style: str) -> dict[str, Template]:
    """Config-level checks, cheapest first; returns the templates that will be used."""
    check_slices(spec)
    templates = check_templates(spec, root, style)
    check_tracked(spec, root)
    return templates


def load_checked(spec: BenchmarkSpec, root: Path) -> Loaded:
    """Load every language the settings use, counting label strips and filtered rows."""
    source, origin = load_source_frame(spec, root)
    normalizer = None
    if spec.normalize_region:
        from cultureqa.knowledge.gazetteer import normalize_province

        normalizer = normalize_province
    counts = LoadCounts()
    items = {
        lang: load_items(spec, source, lang, origin, normalizer, counts)
        for lang in sorted({s.language for s in spec.settings})
    }
    frame = items_frame([i for lang in sorted(items) for i in items[lang]])
    return Loaded(items, frame, source, origin, counts)
