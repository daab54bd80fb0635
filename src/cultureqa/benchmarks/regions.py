"""How a benchmark names its regions in each prompt language.

IndoCulture rows carry canonical English province names; Indonesian prompts should say
"Sumatera Utara", not "North Sumatra". Resolvers are registered by name so a benchmark config
picks one with ``location.region_names``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

RegionNamer = Callable[[str, str], str]


@cache
def _province_names_id() -> dict[str, str]:
    from cultureqa.knowledge import load_knowledge_base

    return {p.name: p.name_id for p in load_knowledge_base().provinces}


def _kb_provinces(region: str, language: str) -> str:
    if language == "id":
        return _province_names_id().get(region, region)
    return region


def _as_is(region: str, language: str) -> str:
    return region


REGION_NAMERS: dict[str, RegionNamer] = {"kb_provinces": _kb_provinces, "as_is": _as_is}


def region_namer(name: str | None) -> RegionNamer:
    """The resolver registered under ``name`` (default: the value as written in the source)."""
    key = name or "as_is"
    if key not in REGION_NAMERS:
        raise ValueError(f"unknown region_names '{key}' (known: {sorted(REGION_NAMERS)})")
    return REGION_NAMERS[key]
