"""Checks a benchmark must pass before any model is called (run by ``validate`` and the CLI).

Slice names, prompt templates per language and DVC tracking of the sources are config facts: a
typo there used to surface only after every model had run, or never (an English template quietly
standing in for Swahili). Here each is an error naming the key and the fix.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cultureqa.benchmarks.load import LoadCounts, items_frame, load_benchmark
from cultureqa.benchmarks.spec import FIXED_FIELDS, BenchmarkSpec, SpecError
from cultureqa.benchmarks.tracking import check_tracked
from cultureqa.core.records import McqItem
from cultureqa.evaluation.prompts import Template, TemplateError, find_template, style_skip_reason


@dataclass
class Loaded:
    """Items per language, their validation frames, the raw source rows and what loading changed.

    ``frame`` holds the evaluated items; ``whole_frame`` every item of the source, so a defect
    outside a declared sample is still found (it equals ``frame`` when nothing is sampled).
    """

    items: dict[str, list[McqItem]]
    frame: pd.DataFrame
    whole_frame: pd.DataFrame
    source: pd.DataFrame
    origin: str
    counts: LoadCounts
    sampled: bool


def check_slices(spec: BenchmarkSpec) -> None:
    """Every slice column is a declared metadata field."""
    known = {*spec.item_fields, "language"}  # every prediction row carries its language
    for group in spec.slices:
        unknown = [c for c in group if c not in known]
        if unknown:
            raise SpecError(
                f"benchmark '{spec.name}': slice {list(group)} names {unknown}, which are not "
                f"metadata (columns.metadata: {sorted(known)})"
            )


def check_templates(spec: BenchmarkSpec, root: Path, style: str) -> dict[str, Template]:
    """The template of every setting in ``style``; a missing language is a TemplateError.

    Placeholders may name the fixed fields or any metadata field; anything else would fail on the
    first prompt, so it fails here, before the first model call.
    """
    known = set(FIXED_FIELDS) | set(spec.item_fields)
    found = {}
    for s in spec.settings:
        if style_skip_reason(style, s.scoring):
            continue  # evaluate skips it and records why; no template is needed
        template = find_template(
            root, spec.name, s.scoring, style, s.language, spec.prompt_fallback.get(s.language)
        )
        names = {f for _, f, _, _ in string.Formatter().parse(template.text) if f}
        unknown = sorted(names - known)
        if unknown:
            raise TemplateError(
                f"{template.path}: placeholder(s) {unknown} are neither {sorted(FIXED_FIELDS)} "
                f"nor metadata of benchmark '{spec.name}' ({sorted(spec.columns.metadata)})"
            )
        found[s.name] = template
    return found


def preflight(spec: BenchmarkSpec, root: Path, style: str) -> dict[str, Template]:
    """Config-level checks, cheapest first; returns the templates that will be used."""
    check_slices(spec)
    templates = check_templates(spec, root, style)
    check_tracked(spec, root)
    return templates


def load_checked(spec: BenchmarkSpec, root: Path, keep_items: bool = True) -> Loaded:
    """Load every language the settings use: the whole source and the evaluated sample.

    ``keep_items=False`` keeps only the frames (``items`` is empty, ``source`` has no columns):
    ``validate`` checks frames, and a million items held through the expectation suite cost over
    a gigabyte, the source rows' cells another 330 MB.
    """
    loaded = load_benchmark(spec, root, as_frames=not keep_items)
    source = loaded.source
    if loaded.frames is not None:
        whole, frame = loaded.frames
        source = source[[]]  # its length and attrs (the sample record), not a copy of the cells
    else:
        whole = items_frame([i for lang in sorted(loaded.whole) for i in loaded.whole[lang]])
        frame = (
            items_frame([i for lang in sorted(loaded.items) for i in loaded.items[lang]])
            if loaded.sampled
            else whole  # one frame, not two copies of a million rows
        )
    return Loaded(loaded.items, frame, whole, source, loaded.origin, loaded.counts, loaded.sampled)
