"""Check what an LLM-written clue claims against the knowledge base, where the KB can tell.

Comparison claims name a statistic and a direction; when at least two of the provinces in the
VERIFY data are KB provinces, the KB's own values must agree that the target holds the extreme.
Named clues are checked for KB items or features they mention: naming only another province's
items is a contradiction. Everything else is recorded as ``unverifiable`` (the rules judge gives
it partial credit), never silently as verified.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from cultureqa.knowledge.provinces import KnowledgeBase
from cultureqa.mocqa.claims import stat_value
from cultureqa.mocqa.llm_parse import Reply, split_names
from cultureqa.mocqa.textchecks import tokens

Normalizer = Callable[[str], str | None]
_STATISTICS = (  # order matters: "population growth" before "population"
    ("growth", ("growth", "grew", "tumbuh", "pertumbuhan")),
    ("density", ("densit", "padat", "per km")),
    ("population", ("popul", "penduduk", "inhabitant", "people")),
    ("area_km2", ("area", "luas", "km", "largest province", "smallest province")),
    ("regencies_count", ("regenc", "kabupaten")),
    ("cities_count", ("cities", "city", "kota")),
)
_MAX = re.compile(
    r"\b(most|largest|highest|biggest|greatest|terbesar|tertinggi|terbanyak|terluas|terpadat)\b"
)
_MIN = re.compile(r"\b(least|smallest|lowest|fewest|terkecil|terendah|tersedikit|tersempit)\b")


def claimed_statistic(claim: str) -> tuple[str | None, str | None]:
    """(KB statistic, 'max'|'min') a claim text refers to; None for what it cannot tell."""
    lowered = claim.lower()
    statistic = next((name for name, keys in _STATISTICS if any(k in lowered for k in keys)), None)
    direction = "max" if _MAX.search(lowered) else ("min" if _MIN.search(lowered) else None)
    return statistic, direction


def check_comparison(
    kb: KnowledgeBase, evidence: Mapping[str, Any], province: str, normalize: Normalizer
) -> tuple[str, str]:
    """``agrees`` / ``disagrees`` / ``unverifiable`` plus a note saying why."""
    statistic, direction = claimed_statistic(str(evidence.get("claim_text", "")))
    if statistic is None or direction is None:
        return "unverifiable", "claim names no statistic and direction the KB holds"
    named = {normalize(name) for name in dict(evidence.get("data") or {})}
    compared = sorted(n for n in named if n is not None)
    if province not in compared:
        compared.append(province)
    values = {n: v.value for n in compared if (v := stat_value(kb[n], statistic)) is not None}
    if len(values) < 2:
        return "unverifiable", f"fewer than two KB provinces with {statistic} in the VERIFY data"
    best = (max if direction == "max" else min)(values, key=lambda n: values[n])
    ties = [n for n, v in values.items() if v == values[best]]
    if best == province and len(ties) == 1:
        return "agrees", f"KB {statistic} puts {province} at the {direction} of {sorted(values)}"
    return "disagrees", f"KB {statistic} puts {best} at the {direction} of {sorted(values)}"


def intersection_problem(reply: Reply, province: str, normalize: Normalizer) -> str:
    """Why an intersection reply breaks the paper's rule ('' when it follows it)."""
    if not all(reply.get(k) for k in ("S1", "S1_PROVINCES", "S2", "INTERSECTION")):
        return "intersection reply lacks S1, S1_PROVINCES, S2 or INTERSECTION"
    s1 = {normalize(n) for n in split_names(reply.get("S1_PROVINCES"))} - {None}
    if len(s1) < 3:
        return f"S1 lists {len(s1)} known provinces; it must hold for at least 3"
    target = {normalize(n) for n in split_names(reply.get("INTERSECTION"))} - {None}
    if target != {province}:
        return f"INTERSECTION names {sorted(t for t in target if t)}, not exactly {province}"
    if province not in s1:
        return f"{province} is not among the S1 provinces"
    return ""


def check_named(kb: KnowledgeBase, text: str, province: str) -> tuple[str, str]:
    """Whether the KB items/features a clue names belong to ``province``."""
    words = f" {' '.join(tokens(text))} "
    owners: dict[str, set[str]] = {}
    for p in kb:
        names = [i.name for items in p.cultural_items.values() for i in items]
        for name in names + [g.name for g in p.geography]:
            folded = " ".join(tokens(name))
            if len(folded) >= 4 and f" {folded} " in words:
                owners.setdefault(name, set()).add(p.name)
    if not owners:
        return "unverifiable", "the clue names no KB item or feature"
    own = sorted(name for name, o in owners.items() if province in o)
    if own:
        return "agrees", f"names KB entries of {province}: {own}"
    return "disagrees", f"names only other provinces' entries: {sorted(owners)}"
