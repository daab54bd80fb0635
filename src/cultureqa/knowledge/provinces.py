"""Typed loader for the province knowledge base (``data/knowledge/provinces/*.yaml``).

The template clue generator, the verifier and the gazetteer all read the same facts, so they are
parsed once into frozen records and every malformed value fails loudly with the file and the key
path, instead of surfacing later as a wrong clue (DESIGN.md §5, §9).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

CANONICAL_PROVINCES: tuple[str, ...] = (
    "Aceh", "North Sumatra", "West Sumatra", "West Java", "Central Java", "East Java", "Bali",
    "East Nusa Tenggara", "South Kalimantan", "South Sulawesi", "Papua",
)  # fmt: skip
"""The 11 IndoCulture provinces, in the paper's order; every artifact uses these spellings."""

CULTURAL_KINDS: tuple[str, ...] = (
    "dances", "dishes", "textiles", "houses", "ceremonies", "instruments", "landmarks", "weapons",
)  # fmt: skip
"""Kinds a province file may list under ``cultural_items``; weapons are optional."""
REQUIRED_STATISTICS: tuple[str, ...] = ("area_km2", "population")
_PROVINCES_SUBDIR = Path("data") / "knowledge" / "provinces"
_Data = Mapping[str, Any]


class KnowledgeBaseError(ValueError):
    """A knowledge-base file is missing or malformed; the message names file and key."""


@dataclass(frozen=True)
class CulturalItem:
    """A named cultural item with bilingual descriptions free of place names."""

    name: str
    description_en: str
    description_id: str


@dataclass(frozen=True)
class GeographyFeature:
    """A physical feature usable as an indirect geographical clue."""

    kind: str
    name: str
    fact_en: str
    fact_id: str


@dataclass(frozen=True)
class Event:
    """A dated event or calendar fact, with its source, for temporal clues."""

    year: int
    text_en: str
    text_id: str
    source: str


@dataclass(frozen=True)
class Statistic:
    """A numeric fact; comparison clues must cite its year and source."""

    value: float
    year: int
    source: str


@dataclass(frozen=True)
class Province:
    """Everything the pipeline knows about one province."""

    name: str
    name_id: str
    aliases: tuple[str, ...]
    capital: str
    cities: tuple[str, ...]
    city_aliases: tuple[str, ...]
    """Other names of cities (Solo for Surakarta); they count as city mentions."""
    regencies: tuple[str, ...]
    island: str
    neighbours: tuple[str, ...]
    border_countries: tuple[str, ...]
    coast: tuple[str, ...]
    ethnic_groups: tuple[str, ...]
    cultural_items: Mapping[str, tuple[CulturalItem, ...]]
    geography: tuple[GeographyFeature, ...]
    events: tuple[Event, ...]
    statistics: Mapping[str, Statistic]
    sources: tuple[str, ...]
    notes: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        """English name, Indonesian name and aliases: every way to name the province itself."""
        return (self.name, self.name_id, *self.aliases)

    def items(self, kind: str) -> tuple[CulturalItem, ...]:
        """Cultural items of one kind (empty when the province has none of that kind)."""
        return self.cultural_items.get(kind, ())


@dataclass(frozen=True)
class KnowledgeBase:
    """The 11 provinces in canonical order."""

    provinces: tuple[Province, ...]
    source_dir: Path

    def __getitem__(self, name: str) -> Province:
        for province in self.provinces:
            if province.name == name:
                return province
        raise KeyError(f"no province '{name}' in {self.source_dir}")

    def __iter__(self) -> Iterator[Province]:
        return iter(self.provinces)

    def __len__(self) -> int:
        return len(self.provinces)


@dataclass(frozen=True)
class _Ctx:
    """Where a value sits (file and dotted key), so every error says exactly what to fix."""

    path: Path
    key: str = ""

    def at(self, key: str | int) -> _Ctx:
        sub = f"[{key}]" if isinstance(key, int) else (f".{key}" if self.key else key)
        return _Ctx(self.path, f"{self.key}{sub}")

    def error(self, message: str) -> KnowledgeBaseError:
        return KnowledgeBaseError(f"{self.path}: key '{self.key or '<root>'}': {message}")


def _mapping(value: Any, ctx: _Ctx) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ctx.error(f"expected a mapping, got {type(value).__name__}")
    return value


def _get(data: _Data, key: str, ctx: _Ctx, default: Any = ...) -> Any:
    if key in data and data[key] is not None:
        return data[key]
    if default is ...:
        raise ctx.at(key).error("missing")
    return default


def _str(data: _Data, key: str, ctx: _Ctx, default: Any = ...) -> str:
    value = _get(data, key, ctx, default)
    if not isinstance(value, str) or (default is ... and not value.strip()):
        raise ctx.at(key).error(f"expected a non-empty string, got {value!r}")
    return value.strip()


def _number(data: _Data, key: str, ctx: _Ctx, integer: bool = True) -> Any:
    value = _get(data, key, ctx)
    if isinstance(value, bool) or not isinstance(value, int if integer else int | float):
        raise ctx.at(key).error(f"expected {'an integer' if integer else 'a number'}: {value!r}")
    return value


def _strings(data: _Data, key: str, ctx: _Ctx, required: bool = True) -> tuple[str, ...]:
    values = _get(data, key, ctx, ... if required else [])
    if not isinstance(values, list):
        raise ctx.at(key).error(f"expected a list of strings, got {type(values).__name__}")
    for i, value in enumerate(values):
        if not isinstance(value, str) or not value.strip():
            raise ctx.at(key).at(i).error(f"expected a non-empty string, got {value!r}")
    return tuple(v.strip() for v in values)


def _records(data: _Data, key: str, ctx: _Ctx) -> list[tuple[_Data, _Ctx]]:
    values = _get(data, key, ctx)
    if not isinstance(values, list):
        raise ctx.at(key).error(f"expected a list, got {type(values).__name__}")
    return [(_mapping(v, ctx.at(key).at(i)), ctx.at(key).at(i)) for i, v in enumerate(values)]


def _cultural_items(data: _Data, ctx: _Ctx) -> Mapping[str, tuple[CulturalItem, ...]]:
    section = _mapping(_get(data, "cultural_items", ctx), ctx.at("cultural_items"))
    if unknown := sorted(set(section) - set(CULTURAL_KINDS)):
        raise ctx.at("cultural_items").error(f"unknown kinds {unknown}; known: {CULTURAL_KINDS}")
    items = {}
    for kind in section:
        records = _records(section, kind, ctx.at("cultural_items"))
        fields = ("name", "description_en", "description_id")
        items[kind] = tuple(CulturalItem(*(_str(r, f, c) for f in fields)) for r, c in records)
    return MappingProxyType(items)


def _statistics(data: _Data, ctx: _Ctx) -> Mapping[str, Statistic]:
    section = _mapping(_get(data, "statistics", ctx), ctx.at("statistics"))
    stats = {}
    for key in section:
        sub = ctx.at("statistics").at(key)
        entry = _mapping(section[key], sub)
        value = _number(entry, "value", sub, integer=False)
        stats[key] = Statistic(value, _number(entry, "year", sub), _str(entry, "source", sub))
    if missing := [k for k in REQUIRED_STATISTICS if k not in stats]:
        raise ctx.at("statistics").error(f"missing required statistics {missing}")
    return MappingProxyType(stats)


def _province(data: _Data, ctx: _Ctx) -> Province:
    geo_fields = ("kind", "name", "fact_en", "fact_id")
    return Province(
        name=_str(data, "name", ctx),
        name_id=_str(data, "name_id", ctx),
        aliases=_strings(data, "aliases", ctx),
        capital=_str(data, "capital", ctx),
        cities=_strings(data, "cities", ctx),
        city_aliases=_strings(data, "city_aliases", ctx, required=False),
        regencies=_strings(data, "regencies", ctx),
        island=_str(data, "island", ctx),
        neighbours=_strings(data, "neighbours", ctx),
        border_countries=_strings(data, "border_countries", ctx, required=False),
        coast=_strings(data, "coast", ctx),
        ethnic_groups=_strings(data, "ethnic_groups", ctx),
        cultural_items=_cultural_items(data, ctx),
        geography=tuple(
            GeographyFeature(*(_str(r, f, c) for f in geo_fields))
            for r, c in _records(data, "geography", ctx)
        ),
        events=tuple(
            Event(_number(r, "year", c), *(_str(r, f, c) for f in ("text_en", "text_id", "source")))
            for r, c in _records(data, "events", ctx)
        ),
        statistics=_statistics(data, ctx),
        sources=_strings(data, "sources", ctx),
        notes=_str(data, "notes", ctx, default=""),
    )


def _read_province(path: Path) -> Province:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise KnowledgeBaseError(f"{path}: invalid YAML: {exc}") from exc
    ctx = _Ctx(path)
    province = _province(_mapping(data, ctx), ctx)
    if province.name not in CANONICAL_PROVINCES:
        raise ctx.at("name").error(f"'{province.name}' is not one of {CANONICAL_PROVINCES}")
    if province.capital not in province.cities:
        raise ctx.at("capital").error(f"'{province.capital}' is not listed under 'cities'")
    return province


def default_knowledge_dir() -> Path:
    """``data/knowledge/provinces`` under ``DVC_ROOT``, else under the repo holding this file.

    DVC runs queued experiments in a temp copy and points ``DVC_ROOT`` at it; outside DVC the
    nearest ``pyproject.toml`` above this module marks the repository root.
    """
    if env := os.environ.get("DVC_ROOT"):
        return Path(env).resolve() / _PROVINCES_SUBDIR
    for parent in Path(__file__).resolve().parents:
        if (parent / "pyproject.toml").is_file():
            return parent / _PROVINCES_SUBDIR
    raise KnowledgeBaseError(f"no pyproject.toml above {__file__}; set DVC_ROOT or pass a path")


@lru_cache(maxsize=8)
def _load_dir(directory: Path) -> KnowledgeBase:
    by_name: dict[str, Province] = {}
    for path in sorted(directory.glob("*.yaml")):
        province = _read_province(path)
        if province.name in by_name:
            raise KnowledgeBaseError(f"{path}: key 'name': province '{province.name}' twice")
        by_name[province.name] = province
    if missing := [name for name in CANONICAL_PROVINCES if name not in by_name]:
        raise KnowledgeBaseError(f"{directory}: no file for provinces {missing}")
    return KnowledgeBase(tuple(by_name[n] for n in CANONICAL_PROVINCES), directory)


def load_knowledge_base(path: Path | None = None) -> KnowledgeBase:
    """Load and validate every province file; parsed once per directory and then cached.

    Args:
        path: Directory of province YAML files; defaults to :func:`default_knowledge_dir`.

    Returns:
        The knowledge base with provinces in :data:`CANONICAL_PROVINCES` order.

    Raises:
        KnowledgeBaseError: A file is missing, is not valid YAML, or has a malformed key.
    """
    return _load_dir(Path(path or default_knowledge_dir()).resolve())
