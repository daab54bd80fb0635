"""Peoples and demonyms that point to a benchmark province (``data/knowledge/peoples.yaml``).

"Batak wedding", "Acehnese", "suku Makassar" name no place, yet each tells a reader which
province a question is about. The gazetteer uses these entries to flag a question that gives
away its own province through its people (issue 11); they are data so a reviewer can see,
source by source, which term counts for which province and why shared terms are decided as
they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from cultureqa.knowledge.provinces import (
    CANONICAL_PROVINCES,
    KnowledgeBaseError,
    default_knowledge_dir,
)


@dataclass(frozen=True)
class People:
    """One people (or group of closely related ones) and the forms that name it."""

    term: str
    provinces: tuple[str, ...]
    """Benchmark provinces for which a mention is a leak."""
    forms: tuple[str, ...]
    """Forms that always count (whole words, capitalised)."""
    bare: tuple[str, ...]
    """Names that count only in a people phrase or after a cultural head noun."""
    also: tuple[str, ...]
    source: str


def default_peoples_path() -> Path:
    """``data/knowledge/peoples.yaml`` beside the province directory."""
    return default_knowledge_dir().parent / "peoples.yaml"


def _strings(entry: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    values = entry.get(key) or []
    if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
        raise KnowledgeBaseError(f"{where}: key '{key}': expected a list of non-empty strings")
    return tuple(v.strip() for v in values)


def _people(entry: Any, where: str) -> People:
    if not isinstance(entry, dict):
        raise KnowledgeBaseError(f"{where}: expected a mapping, got {type(entry).__name__}")
    term, source = entry.get("term"), entry.get("source")
    if not isinstance(term, str) or not term.strip():
        raise KnowledgeBaseError(f"{where}: key 'term': expected a non-empty string")
    if not isinstance(source, str) or not source.strip():
        raise KnowledgeBaseError(f"{where}: key 'source': every entry needs a source")
    provinces = _strings(entry, "provinces", where)
    if not provinces or any(p not in CANONICAL_PROVINCES for p in provinces):
        raise KnowledgeBaseError(
            f"{where}: key 'provinces': need benchmark provinces, got {list(provinces)}"
        )
    forms, bare = _strings(entry, "forms", where), _strings(entry, "bare", where)
    if not forms and not bare:
        raise KnowledgeBaseError(f"{where}: entry '{term}' has neither 'forms' nor 'bare'")
    return People(term, provinces, forms, bare, _strings(entry, "also", where), source)


@lru_cache(maxsize=4)
def load_peoples(path: Path | None = None) -> tuple[People, ...]:
    """Parse the peoples file; a malformed entry raises naming file, entry and key."""
    path = Path(path or default_peoples_path())
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise KnowledgeBaseError(f"{path}: cannot read: {exc}") from exc
    entries = data.get("peoples") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise KnowledgeBaseError(f"{path}: key 'peoples': expected a list")
    return tuple(_people(e, f"{path}: peoples[{i}]") for i, e in enumerate(entries))
