"""Template clue generator: deterministic first-hop clues grounded in the knowledge base.

For one source item and clue type, candidate facts are tried in a rotated order (the item's
position among its province's items), so a province does not always get the same clue. A candidate
is used only if, in both languages, its clue names no place as a location (gazetteer), repeats no
distinctive option word (a shortcut past the second hop), and its evidence is unique in all of
Indonesia: named facts by their national claim (``data/knowledge/national/clue_facts.csv``),
comparison and intersection claims by the national table with a margin. Facts refused on that
ground are kept per (province, clue type) with the reason, for the card.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cultureqa.knowledge.gazetteer import find_own_province_leaks, has_location_leak
from cultureqa.knowledge.national_clues import KB_SHARED, ClueFactTable, load_clue_facts
from cultureqa.knowledge.provinces import KnowledgeBase
from cultureqa.mocqa_build import claims
from cultureqa.mocqa_build.facts import NAMED_FACTS, Fact
from cultureqa.mocqa_build.templates import TemplateBook, format_number, render
from cultureqa.mocqa_build.textchecks import shortcut_terms
from cultureqa.mocqa_shared.schema import CLUE_TYPES, LANGUAGES


@dataclass(frozen=True)
class Clue:
    """A first-hop clue in every language, with the fact and evidence behind it."""

    text: Mapping[str, str]
    template_id: str
    fact_key: str
    evidence: Mapping[str, Any]


@lru_cache(maxsize=65536)
def leaks(text: str, language: str) -> bool:
    """Gazetteer leak check, memoised: clue texts repeat across items of one province."""
    return has_location_leak(text, language)  # type: ignore[arg-type]


@lru_cache(maxsize=65536)
def names_province(text: str, language: str, province: str) -> bool:
    """Whether a clue names its own province, a place in it or its people ("Rumoh Aceh")."""
    return bool(find_own_province_leaks(text, language, province))  # type: ignore[arg-type]


@dataclass(frozen=True)
class RefusedFact:
    """A candidate fact never offered as a clue, and why (listed in the dataset card)."""

    province: str
    clue_type: str
    fact_key: str
    reason: str


class ClueGenerator:
    """Candidate facts per (province, clue type), computed once; clues rendered on demand."""

    def __init__(
        self,
        kb: KnowledgeBase,
        book: TemplateBook,
        national: KnowledgeBase | None = None,
        clue_facts: ClueFactTable | None = None,
        min_gap_share: float = 0.0,
    ) -> None:
        self.kb = kb
        self.book = book
        self.universe = national if national is not None else kb
        """Provinces comparison and intersection claims range over (all of Indonesia)."""
        self.clue_facts = clue_facts if clue_facts is not None else load_clue_facts()
        """National claims of named facts (the default table unless one is given)."""
        self.min_gap_share = min_gap_share
        """Smallest deciding gap a comparison or intersection may rest on (0.01 = 1%)."""
        self._candidates: dict[tuple[str, str], list[Fact]] = {}
        self._refused: dict[tuple[str, str], list[RefusedFact]] = {}
        self.rejections: Counter[str] = Counter()
        """Candidate facts passed over, by reason (reported in the expand metrics)."""

    def candidates(self, province: str, clue_type: str) -> list[Fact]:
        """Verified facts for ``clue_type`` about ``province``, in rotation order."""
        key = (province, clue_type)
        if key not in self._candidates:
            facts = self._build(province, clue_type)
            usable = [f for f in facts if not f.evidence.get("refusal")]
            self._candidates[key] = usable
            self._refused[key] = [
                RefusedFact(province, clue_type, f.key, str(f.evidence["refusal"]))
                for f in facts
                if f.evidence.get("refusal")
            ]
        return self._candidates[key]

    def refused(self) -> list[RefusedFact]:
        """Every fact refused so far (the provinces and clue types built), in a stable order."""
        found = [r for key in sorted(self._refused) for r in self._refused[key]]
        return sorted(found, key=lambda r: (r.province, r.clue_type, r.reason, r.fact_key))

    def _build(self, province: str, clue_type: str) -> list[Fact]:
        if clue_type in NAMED_FACTS:
            facts = NAMED_FACTS[clue_type](self.kb, self.kb[province], self.book)
            return [self._national(province, f) for f in facts]
        if clue_type == "comparison":
            found = claims.comparison_claims(self.universe, province, self.min_gap_share)
            return [self._comparison_fact(e) for e in found]
        if clue_type == "intersection":
            pairs = claims.intersection_claims(self.universe, province, self.min_gap_share)
            return [self._intersection_fact(e) for e in pairs]
        raise ValueError(f"unknown clue type '{clue_type}' (known: {CLUE_TYPES})")

    def _national(self, province: str, fact: Fact) -> Fact:
        """The fact with its national claim in the evidence, and a refusal reason if any."""
        verdict = self.clue_facts.verdict(province, fact.key)
        evidence = dict(fact.evidence)
        evidence["national"] = verdict.claim.as_evidence() if verdict.claim else None
        evidence["refusal"] = KB_SHARED if not evidence.get("unique") else verdict.reason
        evidence["unique"] = not evidence["refusal"]
        return Fact(fact.key, fact.clue_type, fact.group, fact.slots, evidence, fact.terms)

    def clue_for(
        self,
        province: str,
        clue_type: str,
        rotation: int,
        options: Mapping[str, Sequence[str]],
        exclude: frozenset[str] = frozenset(),
    ) -> tuple[Clue | None, str]:
        """The first usable clue from position ``rotation`` on, or None and the reason why.

        Args:
            province: Canonical province the clue must identify.
            clue_type: One of :data:`~cultureqa.mocqa_shared.schema.CLUE_TYPES`.
            rotation: The item's index among its province's items (picks fact and wording).
            options: Options per language (a clue must not repeat their distinctive words).
            exclude: Fact keys already tried (verify regenerates with the next fact).
        """
        facts = self.candidates(province, clue_type)
        if not facts:
            refused = Counter(r.reason for r in self._refused[(province, clue_type)])
            summary = ", ".join(f"{n}× {reason}" for reason, n in sorted(refused.items()))
            return None, f"no usable {clue_type} fact" + (
                f" (refused: {summary})" if summary else ""
            )
        rejected: dict[str, int] = {}
        template_index = rotation + CLUE_TYPES.index(clue_type)
        for step in range(len(facts)):
            fact = facts[(rotation + step) % len(facts)]
            if fact.key in exclude:
                rejected["already tried"] = rejected.get("already tried", 0) + 1
                continue
            clue, why = self._try(fact, template_index, options, province)
            if clue is not None:
                return clue, ""
            rejected[why] = rejected.get(why, 0) + 1
            self.rejections[f"{clue_type}: {why}"] += 1
        summary = ", ".join(f"{n}× {why}" for why, n in sorted(rejected.items()))
        return None, f"all {len(facts)} {clue_type} facts rejected ({summary})"

    def _try(
        self,
        fact: Fact,
        template_index: int,
        options: Mapping[str, Sequence[str]],
        province: str,
    ) -> tuple[Clue | None, str]:
        if not fact.evidence.get("unique", False):
            return None, str(fact.evidence.get("refusal") or "not unique")
        texts, template_id = {}, ""
        split = bool((fact.evidence.get("national") or {}).get("before_2022_split"))
        for language in LANGUAGES:
            template, template_id = self.book.clue(fact.group, language, template_index)
            text = render(template, **fact.slots[language])
            text = text[:1].upper() + text[1:]
            if split:  # the fact lies in a province created in 2022: say which map is meant
                text = f"{text} {self.book.tables['map_note'][language]}"
            if leaks(text, language):
                return None, "names a place as a location"
            if names_province(text, language, province):
                return None, "names its province, a place in it or its people"
            if shortcut_terms(text, options.get(language, ())):
                return None, "repeats an option word"
            texts[language] = text
        template_id = template_id.replace(".id.", ".*.")
        return Clue(texts, template_id, fact.key, dict(fact.evidence)), ""

    def _comparison_fact(self, evidence: dict[str, Any]) -> Fact:
        tables = self.book.tables
        slots = {}
        for lang in LANGUAGES:
            stat = tables["statistics"][evidence["statistic"]][lang]
            slots[lang] = {
                "rank": tables["ranks"][evidence["rank"]][lang].format(stat=stat),
                "scope": self._scope_phrase(evidence["scope"], lang),
                "source": evidence["source"].split(";")[0].strip(),
                "year": str(evidence["year"]),
            }
        key = f"comparison:{evidence['statistic']}:{evidence['rank']}:{evidence['scope']}"
        return Fact(key, "comparison", "comparison.default", slots, evidence)

    def _scope_phrase(self, scope: str, lang: str) -> str:
        phrases = self.book.tables["scopes"]
        if scope == "all":
            return str(phrases["all"][lang])
        if scope == claims.OUTSIDE:
            islands = [self.book.localize(i, lang) for i in claims.scope_islands(self.universe)]
            joined = ", ".join(islands[:-1]) + f" {phrases['conjunction'][lang]} " + islands[-1]
            return str(phrases["outside"][lang]).format(islands=joined)
        return str(phrases["island"][lang]).format(island=self.book.localize(scope, lang))

    def _intersection_fact(self, evidence: dict[str, Any]) -> Fact:
        slots = {
            lang: {
                "s1": self.predicate_phrase(evidence["s1"]["id"], lang),
                "s2": self.predicate_phrase(evidence["s2"]["id"], lang),
            }
            for lang in LANGUAGES
        }
        key = f"intersection:{evidence['s1']['id']}&{evidence['s2']['id']}"
        return Fact(key, "intersection", "intersection.default", slots, evidence)

    def predicate_phrase(self, predicate_id: str, lang: str) -> str:
        """The phrase of one predicate in ``lang`` (thresholds formatted per language)."""
        predicate = claims.predicate_by_id(self.universe, predicate_id)
        if predicate is None:
            raise KeyError(f"unknown predicate '{predicate_id}'")
        params = dict(predicate.params)
        if "t" in params:
            params["t"] = format_number(float(params["t"]), lang)
        for name in ("island", "sea"):
            if name in params:
                params[name] = self.book.localize(str(params[name]), lang)
        params.setdefault("year", self._stat_year(predicate.family))
        return str(self.book.tables["predicates"][predicate.family][lang]).format(**params)

    def _stat_year(self, family: str) -> str:
        statistic = family.rsplit("_", 1)[0]
        for province in self.universe:
            value = claims.stat_value(province, statistic)
            if value is not None:
                return str(value.year)
        return ""
