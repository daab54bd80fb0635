"""Normalize free-text case tags into unified topic categories (DESIGN.md §6).

Case exports carry tags as people typed them: compound tags with mixed delimiters, stray
punctuation, synonyms and one-letter fragments. Analysis by topic needs stable categories, and the
mapping must be auditable and editable without code, so every rule lives in
``conf/cases/topic_rules.yaml``: split on delimiters, strip punctuation, drop short fragments, then
assign each fragment to every category whose keywords or regexes match and whose exclusions do
not. One tag may map to several categories; only categories with at least ``min_category_n``
cases enter the analysis.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

TOPIC_COLUMNS: tuple[str, ...] = ("topic_fragments", "topic_categories", "topic_unmatched")
"""Columns added by :func:`annotate_topics`, each a JSON list of strings."""


class TopicRulesError(ValueError):
    """The rules file is malformed; the message names the file and the offending key."""


@dataclass(frozen=True)
class CategoryRule:
    """One unified category: what a fragment must match, and what disqualifies it."""

    name: str
    patterns: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...] = ()

    def matches(self, fragment: str) -> bool:
        """Whether a normalized fragment belongs to this category."""
        if any(p.search(fragment) for p in self.exclude):
            return False
        return any(p.search(fragment) for p in self.patterns)


@dataclass(frozen=True)
class TopicRules:
    """Compiled normalization rules."""

    delimiters: re.Pattern[str]
    strip: re.Pattern[str]
    min_fragment_length: int
    categories: tuple[CategoryRule, ...]
    min_category_n: int = 50
    fallback_category: str | None = None


@dataclass(frozen=True)
class TagResult:
    """What one raw tag string normalizes to."""

    fragments: tuple[str, ...]
    categories: tuple[str, ...]
    unmatched: tuple[str, ...]


def keyword_pattern(keyword: str) -> re.Pattern[str]:
    """A whole-word, case-insensitive match for a keyword, allowing a plural ``s``/``es``."""
    core = r"\s+".join(re.escape(part) for part in keyword.lower().split())
    return re.compile(rf"(?<!\w){core}(?:s|es)?(?!\w)", re.I)


def load_topic_rules(path: str | Path) -> TopicRules:
    """Read and compile the rules YAML.

    Raises:
        TopicRulesError: naming the file and key that is missing or not a valid regex.
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise TopicRulesError(f"{path}: cannot read topic rules ({exc})") from exc
    return rules_from_mapping(data, source=str(path))


def rules_from_mapping(data: Any, source: str = "<rules>") -> TopicRules:
    """Compile rules from an already-parsed mapping (the YAML layout)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("categories"), Mapping):
        raise TopicRulesError(f"{source}: expected a mapping with a 'categories' mapping")
    delimiters = [str(d) for d in data.get("delimiters") or [";", "|", "/", ","]]
    split = re.compile("|".join(re.escape(d) for d in delimiters))
    strip = _compile(source, "strip_pattern", str(data.get("strip_pattern", r"[^\w\s-]")))
    categories = tuple(
        _category(source, str(name), spec or {}) for name, spec in data["categories"].items()
    )
    fallback = data.get("fallback_category")
    return TopicRules(
        delimiters=split,
        strip=strip,
        min_fragment_length=int(data.get("min_fragment_length", 2)),
        categories=categories,
        min_category_n=int(data.get("min_category_n", 50)),
        fallback_category=str(fallback) if fallback else None,
    )


def _category(source: str, name: str, spec: Mapping[str, Any]) -> CategoryRule:
    where = f"categories.{name}"
    keywords = [keyword_pattern(str(k)) for k in spec.get("keywords") or []]
    regexes = [_compile(source, f"{where}.regexes", str(r)) for r in spec.get("regexes") or []]
    exclude = [_compile(source, f"{where}.exclude", str(r)) for r in spec.get("exclude") or []]
    if not keywords and not regexes:
        raise TopicRulesError(f"{source}: {where} has neither keywords nor regexes")
    return CategoryRule(name, tuple(keywords + regexes), tuple(exclude))


def _compile(source: str, key: str, pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.I)
    except re.error as exc:
        raise TopicRulesError(f"{source}: {key}: invalid regex {pattern!r} ({exc})") from exc


def split_tags(raw: str | None, rules: TopicRules) -> tuple[str, ...]:
    """Normalized fragments of one raw tag string, deduplicated in first-seen order.

    Fragments are lower-cased, punctuation becomes a space, whitespace collapses, edge hyphens
    go, and fragments shorter than ``min_fragment_length`` characters are dropped.
    """
    fragments: list[str] = []
    for piece in rules.delimiters.split(raw or ""):
        text = " ".join(rules.strip.sub(" ", piece.lower()).split()).strip("-_ ")
        if len(text) >= rules.min_fragment_length and text not in fragments:
            fragments.append(text)
    return tuple(fragments)


def categorize(fragment: str, rules: TopicRules) -> tuple[str, ...]:
    """Every category a single normalized fragment maps to (rule order)."""
    return tuple(rule.name for rule in rules.categories if rule.matches(fragment))


def normalize_tags(raw: str | None, rules: TopicRules) -> TagResult:
    """Fragments, categories (rule order, union over fragments) and unmatched fragments."""
    fragments = split_tags(raw, rules)
    per_fragment = {f: set(categorize(f, rules)) for f in fragments}
    found = set().union(*per_fragment.values()) if per_fragment else set()
    categories = tuple(r.name for r in rules.categories if r.name in found)
    if not categories and rules.fallback_category:
        categories = (rules.fallback_category,)
    unmatched = tuple(f for f, cats in per_fragment.items() if not cats)
    return TagResult(fragments, categories, unmatched)


def annotate_topics(
    cases: pd.DataFrame, rules: TopicRules, column: str = "topic_tags"
) -> pd.DataFrame:
    """Add :data:`TOPIC_COLUMNS` (JSON lists) to a copy of ``cases``."""
    results = [
        normalize_tags(raw if isinstance(raw, str) else None, rules) for raw in cases[column]
    ]
    out = cases.copy()
    for name, attr in zip(TOPIC_COLUMNS, ("fragments", "categories", "unmatched"), strict=True):
        out[name] = [json.dumps(list(getattr(r, attr)), ensure_ascii=False) for r in results]
    return out


def explode_categories(cases: pd.DataFrame) -> pd.DataFrame:
    """One row per (case, category), with a ``topic_category`` column, for per-topic slices."""
    lists = cases["topic_categories"].map(json.loads)
    return (
        cases.assign(topic_category=lists)
        .explode("topic_category")
        .dropna(subset=["topic_category"])
        .reset_index(drop=True)
    )


def category_counts(cases: pd.DataFrame) -> dict[str, int]:
    """Cases per category, most frequent first (a case counts once per category)."""
    counts: Counter[str] = Counter()
    for value in cases["topic_categories"]:
        counts.update(set(json.loads(value)))
    return dict(counts.most_common())


def analysis_categories(cases: pd.DataFrame, min_n: int, exclude: Iterable[str] = ()) -> list[str]:
    """Categories with at least ``min_n`` cases (the ones analysis reports), minus ``exclude``.

    The fallback category is usually passed in ``exclude``: it is a residue, not a topic.
    """
    skip = set(exclude)
    return [c for c, n in category_counts(cases).items() if n >= min_n and c not in skip]
