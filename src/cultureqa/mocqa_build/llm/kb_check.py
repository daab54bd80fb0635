"""Check what an LLM-written clue claims against the knowledge base, where the KB can tell.

Comparison claims name a statistic and a direction; when at least two of the provinces in the
VERIFY data are KB provinces, the KB's own values must agree that the target holds the extreme.
Named clues are checked for KB items or features they mention: naming only another province's
items is a contradiction. Everything else is recorded as ``unverifiable`` (the rules judge gives
it partial credit), never silently as verified.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cultureqa.knowledge.provinces import KnowledgeBase
from cultureqa.mocqa_build.claims import stat_value
from cultureqa.mocqa_build.textchecks import tokens
from cultureqa.regions.llm.parse import Reply, split_names

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


_ISLANDS = {
    "Sumatra": ("sumatra", "sumatera"),
    "Java": ("java", "jawa"),
    "Borneo": ("borneo", "kalimantan"),
    "Sulawesi": ("sulawesi", "celebes"),
}
_OUTSIDE = re.compile(r"\b(outside|except|luar|selain)\b")


def claimed_scope(claim: str, province_names: Sequence[str] = ()) -> str | None:
    """``all`` (Indonesia), one island, or None when the claim's scope cannot be read.

    Province names are taken out first: "West Java" or "Sulawesi Selatan" names a province,
    not the island scope of the claim.
    """
    lowered = claim.lower()
    for name in sorted(province_names, key=len, reverse=True):
        lowered = lowered.replace(name.lower(), " ")
    if _OUTSIDE.search(lowered):
        return None  # "outside Java": which islands are excluded is too loose to recompute
    islands = [name for name, keys in _ISLANDS.items() if any(k in lowered for k in keys)]
    return islands[0] if len(islands) == 1 else ("all" if not islands else None)


def check_comparison_nationally(
    national: KnowledgeBase, evidence: Mapping[str, Any], province: str
) -> tuple[str, str]:
    """Recompute a superlative claim over every province in its scope.

    The scope is all of Indonesia or one island, never only the provinces the model listed.
    Returns ``agrees`` / ``disagrees`` / ``unverifiable`` and a note.
    """
    from cultureqa.mocqa_build.claims import comparison_evidence

    claim = str(evidence.get("claim_text", ""))
    statistic, direction = claimed_statistic(claim)
    scope = claimed_scope(claim, [n for p in national for n in (p.name, p.name_id)])
    if statistic is None or direction is None or scope is None:
        return "unverifiable", "claim names no statistic, direction and scope to recompute"
    if scope != "all" and not any(p.island == scope for p in national):
        return "unverifiable", f"no provinces on {scope} in the national table"
    again = comparison_evidence(national, statistic, f"{direction}1", scope)
    where = "Indonesia" if scope == "all" else scope
    data = dict(again["data"])
    members = [p.name for p in national if scope == "all" or p.island == scope]
    if again["holder"] is None and len(data) == len(members) and province in data:
        extreme = (max if direction == "max" else min)(data.values())
        top = sorted(n for n, v in data.items() if v == extreme)
        if province not in top:  # a tie elsewhere cannot rescue a false claim
            return "disagrees", f"national {statistic} puts {top} at the {direction} of {where}"
    if again["holder"] is None:
        return "unverifiable", f"national {statistic} has gaps or ties in scope {scope}"
    if again["holder"] == province:
        return "agrees", f"national {statistic} puts {province} at the {direction} of {where}"
    return "disagrees", f"national {statistic} puts {again['holder']} at the {direction} of {where}"


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
