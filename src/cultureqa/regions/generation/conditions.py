"""Conditions over regions and the one function that decides who satisfies a conjunction.

Clues are conjunctions of three kinds of condition, each a JSON-able dict so that the evidence
stored with an item can be re-evaluated later (rule judge, tests) without the code that chose it:

* ``{"kind": "category", "category": c, "value": v}``: the region has value ``v`` in ``c``;
* ``{"kind": "range", "indicator": i, "low": a, "high": b}``: ``a < value < b`` (either open);
* ``{"kind": "between", "indicator": i, "low_region": x, "high_region": y}``: the region's value
  lies strictly between region ``x``'s and region ``y``'s; one side may be None (above ``x``'s:
  the highest of a scope whose runner-up is ``x``).

A region without a figure is *unknown* for a numeric condition, never false: a clue is unique only
if exactly the target holds and every undecided region is named in its evidence and excluded by
its words. A category is a publisher's classification: a region it did not classify so is false.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cultureqa.regions.generation.tables import Knowledge

Condition = Mapping[str, Any]


def holds(cond: Condition, rid: str, kb: Knowledge, complete: frozenset[str]) -> bool | None:
    """True/False, or None when ``rid`` lacks the figure that decides it.

    ``complete`` (the membership categories) is kept in the signature and cache key so that a set
    may later declare categories whose blanks mean unknown.
    """
    kind = cond["kind"]
    if kind == "category":
        # a classification claims what the publisher classified: a region it left blank (or out)
        # is not "classified as" anything, so the fact is false for it, never undecided
        cells = kb.categories[cond["category"]].get(rid, [])
        return any(c.value == cond["value"] for c in cells)
    cell = kb.indicators[cond["indicator"]].get(rid)
    if cell is None:
        return None
    value = float(cell.value)
    if kind == "range":
        low, high = cond.get("low"), cond.get("high")
        return (low is None or value > low) and (high is None or value < high)
    if kind == "between":  # an open side (None): above the low region or below the high one
        table = kb.indicators[cond["indicator"]]
        bounds = {}
        for side in ("low_region", "high_region"):
            if cond.get(side) is not None:
                cell_ = table.get(cond[side])
                if cell_ is None:
                    return None
                bounds[side] = float(cell_.value)
        return bounds.get("low_region", -math.inf) < value < bounds.get("high_region", math.inf)
    raise ValueError(f"unknown condition kind '{kind}'")


@dataclass(frozen=True)
class Decision:
    """Who satisfies a conjunction over the universe, and who cannot be decided."""

    holders: tuple[str, ...]
    unknown: tuple[str, ...]

    def unique_for(self, target: str, allow_no_figure: bool = False) -> bool:
        """Exactly ``target`` holds; undecided regions allowed only if the clue says so.

        ``allow_no_figure``: the clue carries the set's coverage words ("of the countries with a
        figure"), so regions the files give no figure for are outside its claim (and listed in its
        evidence); without them any undecided region makes the clue unproved.
        """
        return self.holders == (target,) and (allow_no_figure or not self.unknown)


def _key(cond: Condition) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(cond.items()))


_CACHE: dict[
    tuple[int, frozenset[str], tuple[tuple[str, Any], ...]], tuple[frozenset[str], ...]
] = {}


def _sets(cond: Condition, kb: Knowledge, complete: frozenset[str]) -> tuple[frozenset[str], ...]:
    """(regions for which ``cond`` is True, regions it cannot decide), cached per knowledge."""
    key = (id(kb), complete, _key(cond))
    if key not in _CACHE:
        results = {rid: holds(cond, rid, kb, complete) for rid in kb.universe}
        _CACHE[key] = (
            frozenset(r for r, v in results.items() if v is True),
            frozenset(r for r, v in results.items() if v is None),
        )
    return _CACHE[key]


def decide(conditions: Sequence[Condition], kb: Knowledge, complete: frozenset[str]) -> Decision:
    """Evaluate the conjunction for every region of the universe (per-condition sets cached)."""
    holders = frozenset(kb.universe)
    not_false = frozenset(kb.universe)
    for cond in conditions:
        true, unknown = _sets(cond, kb, complete)
        holders &= true
        not_false &= true | unknown
    return Decision(tuple(sorted(holders)), tuple(sorted(not_false - holders)))


def relative_gap(a: float, b: float) -> float:
    """``|a − b| / max(|a|, |b|)`` (0 when both are 0): the margin unit of every clue."""
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale else 0.0


def near_bound(
    conditions: Sequence[Condition],
    kb: Knowledge,
    complete: frozenset[str],
    share: Mapping[str, float],
) -> list[dict[str, Any]]:
    """Regions within an indicator's margin of a range bound, among those the rest admits.

    A reader who misjudges such a region's figure by a few percent would count it in (or out),
    so the clue's answer set hangs on a rounding; every such region is listed.
    """
    found = []
    for index, cond in enumerate(conditions):
        if cond["kind"] != "range":
            continue
        others = [c for i, c in enumerate(conditions) if i != index]
        admitted = decide(others, kb, complete)
        for rid in (*admitted.holders, *admitted.unknown):
            cell = kb.indicators[cond["indicator"]].get(rid)
            if cell is None:
                continue
            for bound in (cond.get("low"), cond.get("high")):
                if (
                    bound is not None
                    and relative_gap(float(cell.value), bound) < share[cond["indicator"]]
                ):
                    found.append({"region": rid, "indicator": cond["indicator"], "bound": bound})
    return found
