"""Historic polities of the benchmark provinces (``data/knowledge/polities.yaml``, issue 34).

"A fort of the Gowa kingdom" names no province, yet Gowa is a regency of South Sulawesi and the
kingdom's seat: a question about South Sulawesi that names it gives its first hop away as surely
as a city name does. The gazetteer adds each province's polities to its own-name leak check;
they are data, each with its period and source, so a reviewer can check every name.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from cultureqa.knowledge.peoples import _strings
from cultureqa.knowledge.provinces import (
    CANONICAL_PROVINCES,
    KnowledgeBaseError,
    default_knowledge_dir,
)

KINDS = frozenset({"kingdom", "sultanate", "empire", "principality"})


@dataclass(frozen=True)
class Polity:
    """One historic polity and the names that point to it."""

    term: str
    province: str
    kind: str
    forms: tuple[str, ...]
    """Names that always count (whole words, capitalised)."""
    bare: tuple[str, ...]
    """Names that count only in a polity phrase ("Kingdom of Bone", "Kerajaan Bone")."""
    period: str
    also: tuple[str, ...]
    source: str
    year: int


def default_polities_path() -> Path:
    """``data/knowledge/polities.yaml`` beside the province directory."""
    return default_knowledge_dir().parent / "polities.yaml"


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise KnowledgeBaseError(f"{where}: key '{key}': expected a non-empty string")
    return value.strip()


def _polity(entry: Any, where: str) -> Polity:
    if not isinstance(entry, dict):
        raise KnowledgeBaseError(f"{where}: expected a mapping, got {type(entry).__name__}")
    term, province = _text(entry, "term", where), _text(entry, "province", where)
    if province not in CANONICAL_PROVINCES:
        raise KnowledgeBaseError(
            f"{where}: key 'province': '{province}' is not a benchmark province"
        )
    kind = _text(entry, "kind", where)
    if kind not in KINDS:
        raise KnowledgeBaseError(f"{where}: key 'kind': '{kind}' is not one of {sorted(KINDS)}")
    forms, bare = _strings(entry, "forms", where), _strings(entry, "bare", where)
    if not forms and not bare:
        raise KnowledgeBaseError(f"{where}: entry '{term}' has neither 'forms' nor 'bare'")
    year = entry.get("year")
    if not isinstance(year, int) or isinstance(year, bool):
        raise KnowledgeBaseError(f"{where}: key 'year': every entry needs the year of its source")
    return Polity(
        term, province, kind, forms, bare, _text(entry, "period", where),
        _strings(entry, "also", where), _text(entry, "source", where), year,
    )  # fmt: skip


@lru_cache(maxsize=4)
def load_polities(path: Path | None = None) -> tuple[Polity, ...]:
    """Parse the polities file; a malformed entry raises naming file, entry and key."""
    path = Path(path or default_polities_path())
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise KnowledgeBaseError(f"{path}: cannot read: {exc}") from exc
    entries = data.get("polities") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise KnowledgeBaseError(f"{path}: key 'polities': expected a list")
    return tuple(_polity(e, f"{path}: polities[{i}]") for i, e in enumerate(entries))
