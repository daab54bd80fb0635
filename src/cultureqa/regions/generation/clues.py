"""Clues that single out one region of the universe, proved from tables (docs/region-sets.md §3).

Every candidate is decided over the whole universe (:func:`.conditions.decide`)
and kept only if exactly the target holds, nobody is undecided and no figure sits within the
indicator's margin of what decides it. Refused candidates are returned with their reason, so the
card can say how many of each type were tried and why they failed.

* comparison: in the target's group, its figure lies strictly between its two rank neighbours'
  (named regions X and Y); both gaps at least the indicator's ``min_gap_share``. The highest
  (lowest) of a group of at least ``min_condition_holders`` is "higher (lower) than its
  runner-up's", where the set words it (``comparison_above`` / ``comparison_below``).
* intersection: the group and two or three indicator ranges from the declared thresholds; every
  condition is needed (dropping one admits another region) and the group with the first range
  admits at least ``min_condition_holders`` regions (the first step narrows, the second decides).
* geographical: one to three facts of the categories declared geographical, each needed.
* entity, temporal, commonsense: one to three named facts, at least one of the type's own kinds,
  each needed.
* intersection of named facts: two or three facts of at least two different non-geographical
  named types (a currency and an independence year), places narrowing, each needed.

A candidate whose own words name a term of its target (a currency called the Japanese yen, a
neighbour whose name contains the target's) is refused with :data:`CLUE_LEAK_REASON`, except the
kinds the set lets a clue state (``clue_may_name``: the language or currency it rests on).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cultureqa.regions.config import NAMED_TYPES, RegionSet
from cultureqa.regions.generation.conditions import Condition, decide, near_bound, relative_gap
from cultureqa.regions.generation.tables import Knowledge
from cultureqa.regions.scrub import leaks

GAP_REASON = "deciding gap under the knowable-gap rule"
"""A comparison whose figure is closer than the indicator's ``min_gap_share`` to a neighbour's:
true, but no reader could know it (docs/twohop-engine.md §3)."""


CLUE_LEAK_REASON = "the clue names a term of its region"
"""A candidate whose text points at its target beyond what ``clue_may_name`` allows."""


@dataclass(frozen=True)
class Clue:
    """A verified clue: its conditions, text per language and evidence."""

    clue_type: str
    target: str
    conditions: tuple[Condition, ...]
    text: Mapping[str, str]
    evidence: Mapping[str, Any]

    @property
    def key(self) -> str:
        """A stable identity (which facts the clue uses), for rotation and dedup."""
        parts = []
        for c in self.conditions:
            parts.append("|".join(f"{k}={c[k]}" for k in sorted(c)))
        return f"{self.clue_type}:" + ";".join(parts)


@dataclass
class ClueBook:
    """Every clue of a region set, by target and type, and the refusals with reasons."""

    clues: dict[tuple[str, str], list[Clue]] = field(default_factory=dict)
    refused: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    """Candidates refused, by (target, clue type, reason): candidates, not items."""

    def get(self, target: str, clue_type: str) -> list[Clue]:
        """The verified clues of one target and type (may be empty)."""
        return self.clues.get((target, clue_type), [])


class Clues:
    """Build the clues of one region set from its loaded knowledge."""

    def __init__(self, region_set: RegionSet, kb: Knowledge) -> None:
        self.rs = region_set
        self.kb = kb
        self.complete = frozenset(
            c.table.id for c in region_set.categories if c.table.reader == "membership"
        )
        self.indicators = {i.table.id: i for i in region_set.indicators}
        self.margins = {i.table.id: i.min_gap_share for i in region_set.indicators}

    # -- rendering -------------------------------------------------------------------------
    def _number(self, indicator: str, value: float) -> str:
        return f"{value:,.{self.indicators[indicator].decimals}f}"

    def running_name(self, rid: str, language: str) -> str:
        """The region's name as running text has it.

        With the set's article where the regions table lists the article form among the
        region's terms ("bordering the Netherlands", not "bordering Netherlands").
        """
        name = self.kb.name(rid, language)
        article = self.rs.templates[language].get("article")
        if article:
            with_article = f"{article} {name}"
            if any(t.text == with_article for t in self.kb.regions[rid].terms):
                return with_article
        return name

    def phrase(self, cond: Condition, language: str) -> str:
        """One condition in words."""
        t = self.rs.templates[language]
        if cond["kind"] == "category":
            cat = self.rs.category(cond["category"])
            value = (
                self.running_name(cond["value"], language)
                if cat.value_is_region
                else self.kb.label(cond["category"], cond["value"], language)
            )
            words = cat.phrase[language]
            if isinstance(words, Mapping):  # words per value: {"true": …, "false": …}
                return str(words[str(cond["value"])])
            return str(words).format(value=value)
        ind = self.indicators[cond["indicator"]]
        words = {"indicator": ind.label[language], "year": ind.table.year}
        if cond["kind"] == "between":
            low, high = cond.get("low_region"), cond.get("high_region")
            key = {
                (True, True): "comparison_condition",
                (True, False): "comparison_above",
                (False, True): "comparison_below",
            }[(low is not None, high is not None)]
            below = "" if low is None else self.running_name(low, language)
            above = "" if high is None else self.running_name(high, language)
            return t[key].format(
                **words,
                low=below,
                high=above,
                low_s=possessive(below) if below else "",
                high_s=possessive(above) if above else "",
            )
        low, high = cond.get("low"), cond.get("high")
        key = (
            "range_between"
            if low is not None and high is not None
            else ("range_above" if low is not None else "range_below")
        )
        return t[key].format(
            **words,
            low="" if low is None else self._number(ind.table.id, low),
            high="" if high is None else self._number(ind.table.id, high),
        )

    def render(self, clue_type: str, conditions: Sequence[Condition], language: str) -> str:
        """The type's template: category facts fill ``{scope}``, figures fill ``{conditions}``."""
        t = self.rs.templates[language]
        # places first ("in Western Africa and whose currency is …"), then the other facts
        facts = sorted(
            (c for c in conditions if c["kind"] == "category"),
            key=lambda c: not self.rs.category(c["category"]).geographical,
        )
        scope = [self.phrase(c, language) for c in facts]
        figures = [self.phrase(c, language) for c in conditions if c["kind"] != "category"]
        if not figures:  # an intersection of named facts reads as a named clue
            clue_type = "geographical"
        openers = tuple(f"{w} " for w in str(t.get("clause_openers", "")).split())
        if figures and scope and openers and scope[-1].startswith(openers):
            # "… whose official language is English and whose mean years …", not "… English
            # whose mean years …": the set's words for figures after a relative clause
            clue_type = f"{clue_type}_after_clause"
        return (
            t[clue_type]
            .format(
                noun=self.rs.noun[language],
                scope=_join(scope, t["and"]),
                conditions=f" {t['and']} ".join(figures),
            )
            .strip()
        )

    # -- evidence --------------------------------------------------------------------------
    def _cells(self, cond: Condition, target: str) -> dict[str, Any]:
        if cond["kind"] == "category":
            cells = self.kb.categories[cond["category"]].get(target, [])
            cell = next(c for c in cells if c.value == cond["value"])
            held: dict[str, Any] = {"value": cell.value, "file": cell.file, "row": cell.row}
            if cell.source:  # a named fact: the package or file it cites, and its year
                held |= {"source": cell.source, "year": cell.year}
            return {**cond, "target": held}
        table = self.kb.indicators[cond["indicator"]]
        ind = self.indicators[cond["indicator"]]
        out = {**cond, "year": ind.table.year, "unit": ind.unit}
        names = ["target"] + (["low_region", "high_region"] if cond["kind"] == "between" else [])
        for name in names:
            rid = target if name == "target" else cond[name]
            if rid is None:  # the open side of the highest or lowest of a scope
                continue
            cell = table[rid]
            out[name.replace("_region", "")] = {
                "id": rid, "value": cell.value, "file": cell.file, "row": cell.row,
            }  # fmt: skip
        if cond["kind"] == "between":
            out["low_id"], out["high_id"] = cond["low_region"], cond["high_region"]
        return out

    def _make(
        self, clue_type: str, target: str, conditions: Sequence[Condition], extra: dict[str, Any]
    ) -> Clue:
        decision = decide(conditions, self.kb, self.complete)
        evidence = {
            "clue_type": clue_type,
            "target": target,
            "conditions": [dict(c) for c in conditions],
            "cells": [self._cells(c, target) for c in conditions],
            "holders": list(decision.holders),
            "unknown": list(decision.unknown),
            "universe": len(self.kb.universe),
            **extra,
        }
        text = {lang: self.render(clue_type, conditions, lang) for lang in self.rs.languages}
        if decision.unknown:  # regions without a figure are outside the claim, and it says so
            text = {lang: v + self.rs.templates[lang]["coverage"] for lang, v in text.items()}
            evidence["no_figure"] = list(decision.unknown)
        return Clue(clue_type, target, tuple(conditions), text, evidence)

    def _refuse(self, clue_type: str, target: str, reason: str, detail: str = "") -> None:
        del detail  # the reason is the count's key; details would make every candidate unique
        self.book.refused[(target, clue_type, reason)] += 1

    # -- generation ------------------------------------------------------------------------
    def build(self, targets: Sequence[str]) -> ClueBook:
        """Every clue type the set declares, for each target."""
        self.book = ClueBook()
        makers = {
            "comparison": self._comparisons,
            "intersection": self._intersections,
            **{t: self._named_maker(t) for t in NAMED_TYPES},
        }
        for target in sorted(set(targets)):
            for clue_type in self.rs.clue_types:
                found = []
                for clue in makers[clue_type](target):
                    if named := self._names_target(clue):
                        self._refuse(clue_type, target, CLUE_LEAK_REASON, named)
                    else:
                        found.append(clue)
                self.book.clues[(target, clue_type)] = found
        return self.book

    def _names_target(self, clue: Clue) -> str:
        """The target's terms the clue's words name, in any of its languages ('' if none)."""
        region = self.kb.regions[clue.target]
        found = [
            t
            for lang, text in clue.text.items()
            for t in leaks([text], region, self.rs.clue_may_name, lang)
        ]
        return "; ".join(found)

    def _facts(self, target: str, categories: Sequence[str]) -> list[Condition]:
        """The target's facts in the named categories (one per value it has)."""
        return [
            {"kind": "category", "category": cid, "value": cell.value}
            for cid in categories
            for cell in self.kb.categories[cid].get(target, [])
        ]

    def _scopes(self, target: str) -> list[list[Condition]]:
        """Each group fact alone, then with one more fact of another category (a finer scope).

        A group every region of the universe is in (the whole country) narrows nothing: it is a
        scope alone, never joined to another fact ("in X and bordering Y" says no more than
        "bordering Y").
        """
        groups = self._facts(target, self.rs.groups)
        others = self._facts(
            target, [c.table.id for c in self.rs.categories if c.table.id not in self.rs.groups]
        )
        everyone = len(self.kb.universe)
        narrowing = [
            g for g in groups if len(decide([g], self.kb, self.complete).holders) < everyone
        ]
        return [[g] for g in groups] + [[g, o] for g in narrowing for o in others]

    def _comparisons(self, target: str) -> Iterator[Clue]:
        scopes = self._scopes(target)
        if not scopes:
            self._refuse("comparison", target, "target has no group")
        for scope in scopes:
            members = decide(scope, self.kb, self.complete).holders
            for ind_id, table in self.kb.indicators.items():
                if target not in table:
                    self._refuse("comparison", target, "target has no value", ind_id)
                    continue
                ordered = sorted(
                    (m for m in members if m in table), key=lambda m: float(table[m].value)
                )
                k = ordered.index(target)
                low = ordered[k - 1] if k > 0 else None
                high = ordered[k + 1] if k < len(ordered) - 1 else None
                if (low is None or high is None) and not self._extreme(len(ordered), low, high):
                    self._refuse("comparison", target, "target at the end of its scope", ind_id)
                    continue
                value = float(table[target].value)
                gap = min(
                    relative_gap(value, float(table[side].value))
                    for side in (low, high)
                    if side is not None
                )
                if gap < self.margins[ind_id]:
                    self._refuse("comparison", target, GAP_REASON, ind_id)
                    continue
                cond = {
                    "kind": "between",
                    "indicator": ind_id,
                    "low_region": low,
                    "high_region": high,
                }
                clue = self._make(
                    "comparison", target, [*scope, cond],
                    {"gap_share": round(gap, 6), "min_gap_share": self.margins[ind_id],
                     "scope_size": len(ordered)},
                )  # fmt: skip
                if clue.evidence["holders"] == [target]:
                    yield clue
                else:
                    self._refuse("comparison", target, "not unique", ind_id)

    def _extreme(self, scope_size: int, low: str | None, high: str | None) -> bool:
        """Whether the highest (lowest) of a scope may be a clue: "higher than R's".

        Only where every language of the set words it (``comparison_above`` /
        ``comparison_below`` templates) and the scope holds at least ``min_condition_holders``
        regions (the highest of two is a coin toss).
        """
        key = "comparison_above" if high is None else "comparison_below"
        return (
            scope_size >= self.rs.min_condition_holders
            and (low is not None or high is not None)
            and all(key in self.rs.templates[lang] for lang in self.rs.languages)
        )

    def _ranges(self, ind_id: str, value: float) -> list[Condition]:
        """Ranges from the declared thresholds that contain ``value``: open ends first."""
        ts = sorted(self.indicators[ind_id].thresholds)
        lows = [t for t in ts if t < value]
        highs = [t for t in ts if t > value]
        out: list[Condition] = []
        for low in lows[-2:]:
            out.append({"kind": "range", "indicator": ind_id, "low": low, "high": None})
        for high in highs[:2]:
            out.append({"kind": "range", "indicator": ind_id, "low": None, "high": high})
        for low, high in itertools.product(lows[-2:], highs[:2]):
            out.append({"kind": "range", "indicator": ind_id, "low": low, "high": high})
        return out

    def _intersections(self, target: str) -> Iterator[Clue]:
        """Indicator ranges within a group, then intersections of named facts."""
        yield from self._range_intersections(target)
        yield from self._fact_intersections(target)

    def _fact_intersections(self, target: str) -> Iterator[Clue]:
        """Two or three named facts spanning two non-geographical named types, each needed.

        "The country in Western Africa whose currency is the West African CFA franc and that
        became independent in 1960": neither kind of knowledge alone decides it.
        """
        typed = [c for c in self.rs.categories if c.clue_type in NAMED_TYPES]
        if len({c.clue_type for c in typed if not c.geographical}) < 2:
            return
        facts = [
            ({"kind": "category", "category": c.table.id, "value": cell.value}, c.clue_type)
            for c in typed
            for cell in self.kb.categories[c.table.id].get(target, [])
        ]
        for size in (2, 3):
            for combo in itertools.combinations(facts, size):
                kinds = {t for _, t in combo if t != "geographical"}
                if len(kinds) < 2:
                    continue
                conds = [c for c, _ in combo]
                if not decide(conds, self.kb, self.complete).unique_for(target):
                    continue
                if any(
                    decide(conds[:i] + conds[i + 1 :], self.kb, self.complete).unique_for(target)
                    for i in range(len(conds))
                ):
                    continue
                yield self._make("intersection", target, conds, {"named_facts": True})

    def _range_intersections(self, target: str) -> Iterator[Clue]:
        groups = self._facts(target, self.rs.groups)
        options = {
            i: self._ranges(i, float(t[target].value))
            for i, t in self.kb.indicators.items()
            if target in t
        }
        if not groups or len(options) < 2:
            self._refuse("intersection", target, "no group or fewer than two indicators")
            return
        for group in groups:
            for size in (2, 3):
                for combo in itertools.combinations(sorted(options), size):
                    for ranges in itertools.product(*(options[i] for i in combo)):
                        clue = self._intersection(target, [group, *ranges])
                        if clue is not None:
                            yield clue

    def _intersection(self, target: str, conditions: list[Condition]) -> Clue | None:
        decision = decide(conditions, self.kb, self.complete)
        if not decision.unique_for(target, allow_no_figure=True):
            self._refuse("intersection", target, "not unique" if decision.holders else "no holder")
            return None
        for i in range(1, len(conditions)):
            if decide(conditions[:i] + conditions[i + 1 :], self.kb, self.complete).unique_for(
                target, allow_no_figure=True
            ):
                self._refuse("intersection", target, "a condition is not needed")
                return None
        first = decide(conditions[:2], self.kb, self.complete)
        if len(first.holders) < self.rs.min_condition_holders:
            self._refuse("intersection", target, "first step admits too few regions")
            return None
        if near := near_bound(conditions, self.kb, self.complete, self.margins):
            self._refuse(
                "intersection",
                target,
                "a figure within the knowable-gap rule of a bound",
                str(near[0]),
            )
            return None
        return self._make(
            "intersection", target, conditions,
            {"first_step_holders": len(first.holders), "margins": dict(self.margins)},
        )  # fmt: skip

    def _named_maker(self, clue_type: str) -> Callable[[str], Iterator[Clue]]:
        return lambda target: self._named(target, clue_type)

    def _named(self, target: str, clue_type: str) -> Iterator[Clue]:
        """One to three facts, at least one of ``clue_type``, each needed, unique together.

        Facts of the type's own kind, of geographical kinds (the place narrows any clue) and of
        untyped classifications may combine; facts of another named type may not, so an entity
        clue rests on an entity fact and a geographical clue on places alone.
        """
        facts: list[Condition] = []
        for cat in self.rs.categories:
            if cat.clue_type not in (clue_type, "geographical", ""):
                continue
            for cell in self.kb.categories[cat.table.id].get(target, []):
                facts.append({"kind": "category", "category": cat.table.id, "value": cell.value})
        own = {c.table.id for c in self.rs.categories if c.clue_type == clue_type}
        found = False
        for size in (1, 2, 3):
            for combo in itertools.combinations(facts, size):
                conds = list(combo)
                if not any(c["category"] in own for c in conds):
                    continue  # at least one fact of the clue's own type
                if not decide(conds, self.kb, self.complete).unique_for(target):
                    continue
                if any(
                    decide(conds[:i] + conds[i + 1 :], self.kb, self.complete).unique_for(target)
                    for i in range(len(conds))
                    if len(conds) > 1
                ):
                    continue
                found = True
                yield self._make(clue_type, target, conds, {})
        if not found:
            self._refuse(clue_type, target, f"no combination of {clue_type} facts is unique")


def _join(parts: Sequence[str], conjunction: str) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(parts) <= 1:
        return "".join(parts)
    return f"{', '.join(parts[:-1])} {conjunction} {parts[-1]}"


def possessive(name: str) -> str:
    """The English possessive of a name: "Austria's", "the United States'" (a plural -s name).

    Templates use it as ``{low_s}`` / ``{high_s}``; ``{low}'s`` stays available for other
    languages' templates.
    """
    return f"{name}'" if name.endswith("s") else f"{name}'s"
