"""Comparison and intersection claims, computed from KB statistics and verified (DESIGN.md §5).

The paper asks its LLM generator to write out a VERIFY block (claim, data, source/year, unique).
The template generator does the same arithmetic for real: a comparison claim is offered only if
exactly one province holds the stated rank within its scope (no ties), and an intersection only
if its first condition holds for at least three provinces and both conditions together for
exactly the target. The evidence dicts stored with each item let :func:`verify_evidence` redo
the check later (the rules judge does) against the same or an updated KB.

A true claim can still rest on a razor-thin margin (NTT's population is 0.10% above NTB's): a
reader cannot know it, and the next census may flip it. With ``min_gap_share`` set, a measured
statistic (population, area, density, growth; not the legal counts of regencies and cities)
must clear it: a comparison whose deciding gap to a rank neighbour is smaller, or an
intersection with a province that close to a threshold, is refused with that reason.

Counts of regencies and cities follow BPS, which counts Jakarta's administrative regency and
five administrative cities; a reader who counts only autonomous ones (Law 29/2007 gives Jakarta's
none) reads "fewer than 2 cities" differently. A claim on a count must therefore name the same
single province under both readings, or it is refused as :data:`ADMIN_REASON` (issue 34).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from cultureqa.knowledge.provinces import KnowledgeBase, Province

RANKS = ("max1", "min1", "max2", "min2", "max3", "min3")
MIN_SCOPE = 3
"""A superlative among fewer than three provinces is too easy to guess; S1 needs ≥ 3 too."""

THRESHOLDS: dict[str, tuple[float, ...]] = {
    "population": (3, 5, 10, 20, 40),  # millions
    "area_km2": (10_000, 40_000, 50_000, 100_000),
    "density": (100, 500, 1_000),
    "growth": (10, 15, 20),  # percent, 2010 → 2020
    "regencies_count": (10, 15, 20, 25),
    "cities_count": (2, 3, 5, 6, 8),
}
MEASURED = frozenset({"population", "area_km2", "density", "growth"})
"""Statistics with measurement error, where a margin applies (counts are exact by law)."""
_SCALE = {"population": 1e6}
_AT_LEAST = {"regencies_count", "cities_count"}  # "at least t" rather than "more than t"
_SIMPLE_NAME = re.compile(r"^[A-Za-z][A-Za-z \-]*$")
COUNTS = ("regencies_count", "cities_count")
ADMIN_REASON = "holds only if Jakarta's administrative regency and cities count"
"""Refusal of a count claim whose province changes when only autonomous units are counted."""


@dataclass(frozen=True)
class StatValue:
    """A statistic of one province with its provenance."""

    value: float
    year: int
    source: str


def stat_value(province: Province, name: str) -> StatValue | None:
    """A KB statistic, or one derived from two (density, growth); None when not available."""
    stats = province.statistics
    if name == "density":
        pop, area = stats.get("population"), stats.get("area_km2")
        if pop is None or area is None or not area.value:
            return None
        return StatValue(pop.value / area.value, pop.year, f"{pop.source}; {area.source}")
    if name == "growth":
        new, old = stats.get("population"), stats.get("population_2010")
        if new is None or old is None or not old.value:
            return None
        return StatValue(
            100 * (new.value - old.value) / old.value, new.year, f"{new.source}; {old.source}"
        )
    entry = stats.get(name)
    return None if entry is None else StatValue(float(entry.value), entry.year, entry.source)


def rank_holder(values: Mapping[str, float], rank: str) -> str | None:
    """The single province at ``rank`` (max1 = highest …), or None on a tie or too few."""
    ordered = _ordered(values, rank)
    k = int(rank[-1]) - 1
    if ordered is None or k >= len(ordered):
        return None
    neighbours = [ordered[i][1] for i in (k - 1, k + 1) if 0 <= i < len(ordered)]
    return None if ordered[k][1] in neighbours else ordered[k][0]


def _ordered(values: Mapping[str, float], rank: str) -> list[tuple[str, float]] | None:
    if len(values) < MIN_SCOPE:
        return None
    return sorted(values.items(), key=lambda kv: kv[1], reverse=rank.startswith("max"))


def deciding_gap(values: Mapping[str, float], rank: str) -> float | None:
    """Smallest relative gap between the rank holder and its rank neighbours (0.001 = 0.1%)."""
    ordered = _ordered(values, rank)
    k = int(rank[-1]) - 1
    if ordered is None or k >= len(ordered):
        return None
    value = ordered[k][1]
    gaps = [
        abs(value - other) / max(abs(value), abs(other))
        for other in (ordered[i][1] for i in (k - 1, k + 1) if 0 <= i < len(ordered))
        if max(abs(value), abs(other)) > 0
    ]
    return min(gaps) if gaps else None


def margin_reason(min_gap_share: float) -> str:
    """The refusal reason of a claim decided by less than ``min_gap_share``."""
    return f"deciding gap under {min_gap_share:.2%} of the figure"


OUTSIDE = "outside"
"""Scope of the provinces not on any island that forms its own scope (Bali, Papua, …)."""


def scopes(kb: KnowledgeBase) -> dict[str, list[str]]:
    """Scope name → provinces: ``all``, every island holding ≥ 3 KB provinces, and the rest."""
    out = {"all": [p.name for p in kb]}
    for island in sorted({p.island for p in kb}):
        members = [p.name for p in kb if p.island == island]
        if len(members) >= MIN_SCOPE and _SIMPLE_NAME.match(island):
            out[island] = members
    rest = [p.name for p in kb if p.island not in out]
    if len(out) > 1 and len(rest) >= MIN_SCOPE:
        out[OUTSIDE] = rest
    return out


def scope_islands(kb: KnowledgeBase) -> list[str]:
    """Islands with their own scope (what the ``outside`` scope excludes)."""
    return [s for s in scopes(kb) if s not in ("all", OUTSIDE)]


_AUTONOMOUS: dict[int, tuple[KnowledgeBase, KnowledgeBase | None]] = {}


def autonomous_reading(kb: KnowledgeBase) -> KnowledgeBase | None:
    """``kb`` with regency and city counts of autonomous units only; None when nothing differs.

    The national table records them as ``autonomous_<count>`` (Jakarta: 0 and 0); the
    eleven-province files do not, and there the readings agree.
    """
    cached = _AUTONOMOUS.get(id(kb))
    if cached is None or cached[0] is not kb:
        changed, provinces = False, []
        for province in kb:
            stats = dict(province.statistics)
            for name in COUNTS:
                alt = stats.get(f"autonomous_{name}")
                if alt is not None and name in stats and alt.value != stats[name].value:
                    stats[name], changed = alt, True
            provinces.append(dataclasses.replace(province, statistics=MappingProxyType(stats)))
        other = KnowledgeBase(tuple(provinces), kb.source_dir) if changed else None
        cached = _AUTONOMOUS[id(kb)] = (kb, other)
    return cached[1]


def comparison_evidence(
    kb: KnowledgeBase, statistic: str, rank: str, scope: str, min_gap_share: float = 0.0
) -> dict[str, Any]:
    """The VERIFY record of one claim: data with values, source/year, holder, gap, unique."""
    members = scopes(kb).get(scope, [])
    found = {name: stat_value(kb[name], statistic) for name in members}
    values = {k: round(v.value, 3) for k, v in found.items() if v is not None}
    holder = rank_holder(values, rank) if len(values) == len(members) else None
    gap = deciding_gap(values, rank) if holder is not None else None
    thin = gap is not None and statistic in MEASURED and gap < min_gap_share
    first = next((v for v in found.values() if v is not None), None)
    alt = autonomous_reading(kb) if statistic in COUNTS and holder is not None else None
    alt_holder = holder
    if alt is not None:
        alt_holder = comparison_evidence(alt, statistic, rank, scope, min_gap_share)["holder"]
    admin = alt_holder != holder
    return {
        "claim": "comparison",
        "statistic": statistic,
        "rank": rank,
        "scope": scope,
        "data": values,
        "year": first.year if first else None,
        "source": first.source if first else "",
        "holder": holder,
        "gap_share": None if gap is None else round(gap, 6),
        "min_gap_share": min_gap_share,
        "unique": holder is not None and not thin and not admin,
        "refusal": margin_reason(min_gap_share) if thin else (ADMIN_REASON if admin else ""),
        **({"autonomous_holder": alt_holder} if admin else {}),
    }


def comparison_claims(
    kb: KnowledgeBase, province: str, min_gap_share: float = 0.0
) -> list[dict[str, Any]]:
    """Every comparison whose single holder is ``province`` (top ranks first).

    Claims refused for a thin margin are included with their ``refusal`` reason (the generator
    counts and skips them).
    """
    out = []
    for rank in RANKS:
        for scope, members in scopes(kb).items():
            if len(members) < 2 * int(rank[-1]) + 1:  # a rank must sit in the outer third
                continue
            for statistic in THRESHOLDS:
                evidence = comparison_evidence(kb, statistic, rank, scope, min_gap_share)
                if evidence["holder"] == province:
                    out.append(evidence)
    return _spread(out, lambda e: str(e["statistic"]))


@dataclass(frozen=True)
class Predicate:
    """A condition over provinces with a phrase key and its parameters."""

    id: str
    family: str
    params: Mapping[str, Any]
    test: Callable[[Province], bool | None]
    """True/False, or None when the province lacks the data to decide (an unchecked cell)."""


def _threshold_predicates(statistic: str, min_gap_share: float = 0.0) -> list[Predicate]:
    out = []
    scale = _SCALE.get(statistic, 1.0)
    margin = min_gap_share if statistic in MEASURED else 0.0
    for t in THRESHOLDS[statistic]:

        def above(p: Province, s: str = statistic, v: float = t * scale) -> bool | None:
            got = stat_value(p, s)
            if got is None or abs(got.value - v) < margin * v:
                return None  # no figure, or too close to the threshold to decide
            return got.value >= v if s in _AT_LEAST else got.value > v

        def below(p: Province, s: str = statistic, v: float = t * scale) -> bool | None:
            got = stat_value(p, s)
            if got is None or abs(got.value - v) < margin * v:
                return None
            return got.value < v

        out.append(Predicate(f"{statistic}_above:{t:g}", f"{statistic}_above", {"t": t}, above))
        out.append(Predicate(f"{statistic}_below:{t:g}", f"{statistic}_below", {"t": t}, below))
    return out


_LIBRARY: dict[tuple[int, float], tuple[KnowledgeBase, list[Predicate]]] = {}


def predicates(kb: KnowledgeBase, min_gap_share: float = 0.0) -> list[Predicate]:
    """The condition library intersections are built from (built once per KB and margin)."""
    key = (id(kb), min_gap_share)
    cached = _LIBRARY.get(key)
    if cached is None or cached[0] is not kb:
        cached = _LIBRARY[key] = (kb, _build_predicates(kb, min_gap_share))
    return cached[1]


def _on_island(island: str) -> Callable[[Province], bool]:
    return lambda p: p.island == island


def _on_coast(sea: str) -> Callable[[Province], bool]:
    return lambda p: sea in p.coast


def _build_predicates(kb: KnowledgeBase, min_gap_share: float = 0.0) -> list[Predicate]:
    out = [
        Predicate(f"island:{i}", "island", {"island": i}, _on_island(i))
        for i in sorted({p.island for p in kb})
        # an island of one province ("on the island of Bali") would name it: not a condition
        if _SIMPLE_NAME.match(i) and sum(p.island == i for p in kb) >= 2
    ]
    out += [
        Predicate(f"coast:{s}", "coast", {"sea": s}, _on_coast(s))
        for s in sorted({s for p in kb for s in p.coast})
    ]
    out.append(Predicate("no_land_border", "no_land_border", {}, lambda p: not p.neighbours))
    out.append(
        Predicate("border_country", "border_country", {}, lambda p: bool(p.border_countries))
    )
    out.append(
        Predicate("single_neighbour", "single_neighbour", {}, lambda p: len(p.neighbours) == 1)
    )
    for statistic in THRESHOLDS:
        # a province lacking the statistic is undecided (None), never silently "no": the
        # intersection check below refuses any claim that depends on an undecided province
        if sum(stat_value(p, statistic) is not None for p in kb) >= MIN_SCOPE:
            out += _threshold_predicates(statistic, min_gap_share)
    return out


def _members(kb: KnowledgeBase, predicate: Predicate) -> list[str]:
    return [p.name for p in kb if predicate.test(p) is True]


def _undecided(
    kb: KnowledgeBase, predicate: Predicate, among: list[str] | None = None
) -> list[str]:
    """Provinces (of ``among``, default all) for which ``predicate`` lacks the data."""
    names = [p.name for p in kb if among is None or p.name in among]
    return [name for name in names if predicate.test(kb[name]) is None]


def intersection_evidence(
    kb: KnowledgeBase,
    s1: Predicate,
    s2: Predicate,
    exact: tuple[Predicate, Predicate] | None = None,
) -> dict[str, Any]:
    """The S1/S2/intersection record of one claim, with membership computed from the KB.

    S1 must be decidable for every province (its size is part of the claim); S2 only for the
    S1 provinces, since only they can be in the intersection. ``exact`` are the same two
    predicates without a margin: provinces they decide but ``s1``/``s2`` do not are listed as
    ``near_threshold`` (a thin-margin refusal) rather than ``undecided`` (a missing figure).
    """
    m1, m2 = _members(kb, s1), _members(kb, s2)
    undecided = _undecided(kb, s1) + _undecided(kb, s2, m1)
    missing = undecided
    if exact is not None:
        missing = _undecided(kb, exact[0]) + _undecided(kb, exact[1], _members(kb, exact[0]))
    both = [name for name in m1 if name in m2]
    return {
        "claim": "intersection",
        "s1": {"id": s1.id, "provinces": m1},
        "s2": {"id": s2.id, "provinces": m2},
        "intersection": both,
        "undecided": [n for n in undecided if n in missing],
        "near_threshold": [n for n in undecided if n not in missing],
        "unique": len(m1) >= MIN_SCOPE and len(both) == 1 and not undecided,
        "source": "; ".join(sorted({s.source for p in kb for s in p.statistics.values()})),
    }


def intersection_claims(
    kb: KnowledgeBase, province: str, min_gap_share: float = 0.0
) -> list[dict[str, Any]]:
    """Verified (S1, S2) pairs narrowing to ``province``; real intersections (|S2| ≥ 2) first.

    Pairs that hold exactly but not with the margin are included with their ``refusal``.
    """
    exact, margined = predicates(kb), predicates(kb, min_gap_share)
    found = []
    for i, s1 in enumerate(exact):
        if len(_members(kb, s1)) < MIN_SCOPE or not s1.test(kb[province]):
            continue
        for j, s2 in enumerate(exact):
            if s2.family.split("_")[0] == s1.family.split("_")[0] or not s2.test(kb[province]):
                continue
            if not intersection_evidence(kb, s1, s2)["unique"]:
                continue
            evidence = intersection_evidence(kb, margined[i], margined[j], (s1, s2))
            evidence["min_gap_share"] = min_gap_share
            evidence["refusal"] = "" if evidence["unique"] else margin_reason(min_gap_share)
            alt = _autonomous_intersection(kb, s1.id, s2.id, min_gap_share)
            if alt is not None and alt != [province]:
                evidence["autonomous_intersection"] = alt
                evidence["refusal"] = evidence["refusal"] or ADMIN_REASON
                evidence["unique"] = False
            found.append(evidence)
    return _spread(sorted(found, key=_intersection_rank), lambda e: e["s1"]["id"].split(":")[0])


def _autonomous_intersection(
    kb: KnowledgeBase, s1_id: str, s2_id: str, min_gap_share: float
) -> list[str] | None:
    """The provinces S1 ∩ S2 names when only autonomous units count.

    None when the readings cannot differ (no count condition, or no administrative units in
    ``kb``); an S1 that falls under three provinces or an undecided cell reads as no single
    province (``[]``).
    """
    alt = autonomous_reading(kb)
    families = (i.split(":")[0].rsplit("_", 1)[0] for i in (s1_id, s2_id))  # cities_count_above
    if alt is None or not any(f in COUNTS for f in families):
        return None
    p1, p2 = predicate_by_id(alt, s1_id, min_gap_share), predicate_by_id(alt, s2_id, min_gap_share)
    if p1 is None or p2 is None:
        return []
    again = intersection_evidence(alt, p1, p2)
    return list(again["intersection"]) if again["unique"] else []


def _intersection_rank(evidence: Mapping[str, Any]) -> tuple[bool, bool, str, str]:
    """Real intersections first (S2 alone is not unique), then a small S1 (3–6 provinces)."""
    return (
        len(evidence["s2"]["provinces"]) < 2,
        len(evidence["s1"]["provinces"]) > 6,
        evidence["s1"]["id"],
        evidence["s2"]["id"],
    )


def _spread(
    ranked: list[dict[str, Any]], family: Callable[[dict[str, Any]], str]
) -> list[dict[str, Any]]:
    """Round-robin over families, keeping the rank order within each.

    Consecutive items of one province then get claims about different statistics rather than
    ten variants of one.
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for evidence in ranked:
        groups.setdefault(family(evidence), []).append(evidence)
    out = []
    for depth in range(max((len(g) for g in groups.values()), default=0)):
        out += [g[depth] for g in groups.values() if depth < len(g)]
    return out


def predicate_by_id(
    kb: KnowledgeBase, predicate_id: str, min_gap_share: float = 0.0
) -> Predicate | None:
    """Look a predicate up by the id stored in evidence."""
    return next((p for p in predicates(kb, min_gap_share) if p.id == predicate_id), None)


def verify_evidence(
    kb: KnowledgeBase, evidence: Mapping[str, Any], province: str, min_gap_share: float = 0.0
) -> bool:
    """Recompute a stored comparison or intersection claim against ``kb``.

    Returns True iff the claim still identifies exactly ``province``, by at least
    ``min_gap_share`` on measured statistics.
    """
    if evidence.get("claim") == "comparison":
        again = comparison_evidence(
            kb,
            str(evidence.get("statistic")),
            str(evidence.get("rank")),
            str(evidence.get("scope")),
            min_gap_share,
        )
        return bool(again["unique"]) and again["holder"] == province
    if evidence.get("claim") == "intersection":
        s1 = predicate_by_id(kb, str(evidence.get("s1", {}).get("id")), min_gap_share)
        s2 = predicate_by_id(kb, str(evidence.get("s2", {}).get("id")), min_gap_share)
        if s1 is None or s2 is None:
            return False
        again = intersection_evidence(kb, s1, s2)
        alt = _autonomous_intersection(kb, s1.id, s2.id, min_gap_share)
        held = bool(again["unique"]) and bool(again["intersection"] == [province])
        return held and alt in (None, [province])
    return False
