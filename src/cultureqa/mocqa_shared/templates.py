"""Bilingual clue and question templates (``data/knowledge/clue_templates.yaml``).

Templates are data so wording can be reviewed and changed without touching code; like
inspect_ai's multiple-choice templates they are checked on load for the placeholders their group
needs, so a typo fails at start-up instead of a literal ``{name}``. The province tables
(:mod:`cultureqa.knowledge.province_tables`) read their name rules to label Indonesia's facts in
both languages.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from cultureqa.mocqa_shared.schema import CLUE_TYPES, LANGUAGES

MIN_TEMPLATES = 3
"""Every clue group and the question frames need at least this many templates per language."""


class TemplateError(ValueError):
    """The templates file is malformed; the message names the group and template."""


@dataclass(frozen=True)
class TemplateBook:
    """Parsed templates plus the label tables the generator needs."""

    frames: Mapping[str, tuple[str, ...]]
    clues: Mapping[str, Mapping[str, tuple[str, ...]]]
    """``clues["entity.default"]["en"]`` → templates."""
    tables: Mapping[str, Any]
    """Everything else in the file (kinds, statistics, ranks, scopes, predicates, names)."""
    digest: str
    """sha256 of the file: recorded with each item, it says which wording produced it."""

    def clue(self, group: str, language: str, index: int) -> tuple[str, str]:
        """The template at ``index`` (wrapping) of ``group`` in ``language``, with its id."""
        options = self.clues[group][language]
        k = index % len(options)
        return options[k], f"{group}.{language}.{k}"

    def frame(self, language: str, index: int) -> tuple[str, str]:
        """The question frame at ``index`` (wrapping), with its id."""
        options = self.frames[language]
        k = index % len(options)
        return options[k], f"frame.{language}.{k}"

    def localize(self, name: str, language: str) -> str:
        """An English place or feature name in ``language`` (Indonesian via the name rules)."""
        if language != "id":
            return name
        exact = self.tables.get("names_id", {})
        if name in exact:
            return str(exact[name])
        for pattern, replacement in self.tables.get("name_patterns_id", []):
            if re.match(pattern, name):
                inner = re.sub(pattern, r"\1", name)
                return re.sub(pattern, replacement, name).replace(inner, exact.get(inner, inner))
        return name


def render(template: str, **slots: object) -> str:
    """Fill a template; a missing slot raises with the template text (never a silent blank)."""
    try:
        text = template.format(**slots)
    except KeyError as exc:
        raise TemplateError(f"template {template!r} needs slot {exc}") from exc
    return " ".join(text.split())


def placeholders(template: str) -> set[str]:
    """Slot names used by a template."""
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def _check_group(group: str, by_lang: Any, required: set[str]) -> dict[str, tuple[str, ...]]:
    if not isinstance(by_lang, Mapping):
        raise TemplateError(f"templates '{group}': expected a mapping of languages")
    out = {}
    for language in LANGUAGES:
        items = by_lang.get(language)
        if not isinstance(items, list) or len(items) < MIN_TEMPLATES:
            raise TemplateError(
                f"templates '{group}.{language}': need at least {MIN_TEMPLATES} templates"
            )
        for i, text in enumerate(items):
            missing = required - placeholders(str(text))
            if missing:
                raise TemplateError(f"templates '{group}.{language}[{i}]' lacks {sorted(missing)}")
        out[language] = tuple(str(t) for t in items)
    return out


def _parse(data: Mapping[str, Any], digest: str) -> TemplateBook:
    required = {k: set(v) for k, v in data.get("required", {}).items()}
    frames = _check_group("frames", data.get("frames"), required.get("frames", set()))
    clues: dict[str, dict[str, tuple[str, ...]]] = {}
    for clue_type in CLUE_TYPES:
        groups = data.get("clues", {}).get(clue_type)
        if not isinstance(groups, Mapping) or not groups:
            raise TemplateError(f"templates: clue type '{clue_type}' has no templates")
        for name, by_lang in groups.items():
            key = f"{clue_type}.{name}"
            clues[key] = _check_group(key, by_lang, required.get(key, set()))
    tables = {k: v for k, v in data.items() if k not in ("frames", "clues", "required")}
    return TemplateBook(frames, clues, tables, digest)


@lru_cache(maxsize=4)
def load_templates(path: Path) -> TemplateBook:
    """Read and check the templates file (cached per path).

    Raises:
        TemplateError: A group lacks templates, a language, or a required placeholder.
    """
    raw = Path(path).read_bytes()
    data = yaml.safe_load(raw)
    if not isinstance(data, Mapping):
        raise TemplateError(f"{path}: expected a mapping at the top level")
    try:
        return _parse(data, hashlib.sha256(raw).hexdigest()[:16])
    except TemplateError as exc:
        raise TemplateError(f"{path}: {exc}") from exc


def format_number(value: float, language: str, decimals: int = 0) -> str:
    """Thousands separators as each language writes them (40,000 vs 40.000)."""
    text = f"{value:,.{decimals}f}"
    if language == "id":
        text = text.replace(",", "\0").replace(".", ",").replace("\0", ".")
    return text
