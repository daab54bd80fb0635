"""Named KB facts behind entity, geographical, temporal and commonsense clues.

Each fact records whether it is unique in the knowledge base (``evidence["unique"]``): a dish or
weapon listed for two provinces (keris) cannot identify one of them. The generator then checks
every fact against its national claim (:mod:`cultureqa.knowledge.national_clues`) and refuses,
with the reason counted, any that is shared, unknown or unchecked. Facts come back in a fixed,
kind-interleaved order that the generator rotates through, so consecutive items of one province
get different clues.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any

from cultureqa.knowledge.provinces import KnowledgeBase, Province
from cultureqa.mocqa_build.templates import TemplateBook
from cultureqa.mocqa_build.textchecks import tokens


@dataclass(frozen=True)
class Fact:
    """One verified fact about a province, ready to fill a clue template in either language."""

    key: str
    clue_type: str
    group: str
    """Template group, e.g. ``geographical.feature``."""
    slots: Mapping[str, Mapping[str, str]]
    """Per language, the template slot values."""
    evidence: Mapping[str, Any]
    terms: tuple[str, ...] = field(default=())
    """Names the clue shows (checked against the options for shortcuts)."""


def _fold(text: str) -> str:
    return " ".join(tokens(text))


_INDEXES: dict[int, tuple[KnowledgeBase, Mapping[str, frozenset[str]]]] = {}


def _owners_index(kb: KnowledgeBase) -> Mapping[str, frozenset[str]]:
    """Folded item/feature name → provinces listing it (built once per KB object).

    Keyed by object identity: KB records hold mappings and are not hashable.
    """
    cached = _INDEXES.get(id(kb))
    if cached is not None and cached[0] is kb:
        return cached[1]
    index: dict[str, set[str]] = {}
    for province in kb:
        names = [i.name for items in province.cultural_items.values() for i in items]
        names += [g.name for g in province.geography]
        for name in names:
            index.setdefault(_fold(name), set()).add(province.name)
    frozen = {k: frozenset(v) for k, v in index.items()}
    _INDEXES[id(kb)] = (kb, frozen)
    return frozen


def name_owners(kb: KnowledgeBase, name: str) -> list[str]:
    """Provinces whose KB lists an item or feature called ``name`` (sorted)."""
    return sorted(_owners_index(kb).get(_fold(name), frozenset()))


def _base_evidence(kb: KnowledgeBase, province: Province, kind: str, name: str) -> dict[str, Any]:
    owners = name_owners(kb, name)
    return {
        "kind": kind,
        "name": name,
        "province": province.name,
        "kb_owners": owners,
        "unique": owners == [province.name],
        "source": province.sources[0] if province.sources else "",
    }


def _interleave(groups: Iterable[list[Fact]]) -> list[Fact]:
    """Round-robin over kinds: dance, textile, house, …, then the second dance, and so on."""
    return [f for batch in zip_longest(*groups) for f in batch if f is not None]


SlotMaker = Callable[[Any, str, Any], dict[str, str]]
"""Builds one language's template slots from (KB item, language, the kind's table entry)."""


def _item_facts(
    kb: KnowledgeBase,
    province: Province,
    book: TemplateBook,
    clue_type: str,
    kinds_table: str,
    make_slots: SlotMaker,
) -> list[Fact]:
    """Facts from the province's items of each kind listed in ``kinds_table``."""
    groups = []
    for kind, entry in book.tables[kinds_table].items():
        batch = []
        for item in province.items(kind):
            evidence = _base_evidence(kb, province, kind, item.name)
            slots = {lang: make_slots(item, lang, entry) for lang in ("en", "id")}
            fact_id = f"{clue_type}:{kind}:{item.name}"
            template = f"{clue_type}.default"
            batch.append(Fact(fact_id, clue_type, template, slots, evidence, (item.name,)))
        groups.append(batch)
    return _interleave(groups)


def entity_facts(kb: KnowledgeBase, province: Province, book: TemplateBook) -> list[Fact]:
    """Cultural items (dances, textiles, houses, instruments, weapons, landmarks)."""

    def slots(item: Any, lang: str, label: Any) -> dict[str, str]:
        return {
            "name": book.localize(item.name, lang),
            "kind": label[lang],
            "description": getattr(item, f"description_{lang}"),
        }

    return _item_facts(kb, province, book, "entity", "entity_kinds", slots)


def geographical_facts(kb: KnowledgeBase, province: Province, book: TemplateBook) -> list[Fact]:
    """Geographic features, self-describing positions, and foreign land borders."""
    positional = set(book.tables["position_kinds"])
    features: list[Fact] = []
    positions: list[Fact] = []
    for feature in province.geography:
        evidence = _base_evidence(kb, province, feature.kind, feature.name)
        group = "position" if feature.kind in positional else "feature"
        slots = {
            lang: {
                "name": book.localize(feature.name, lang),
                "description": getattr(feature, f"fact_{lang}"),
            }
            for lang in ("en", "id")
        }
        fact = Fact(
            f"geographical:{feature.kind}:{feature.name}",
            "geographical",
            f"geographical.{group}",
            slots,
            evidence,
            (feature.name,),
        )
        (positions if group == "position" else features).append(fact)
    return _interleave([features, positions, _border_facts(kb, province, book)])


def _border_facts(kb: KnowledgeBase, province: Province, book: TemplateBook) -> list[Fact]:
    out = []
    for country in province.border_countries:
        owners = sorted(p.name for p in kb if country in p.border_countries)
        evidence = {
            "kind": "border_country",
            "name": country,
            "province": province.name,
            "kb_owners": owners,
            "unique": owners == [province.name],
            "source": province.sources[0] if province.sources else "",
        }
        slots = {lang: {"country": book.localize(country, lang)} for lang in ("en", "id")}
        key = f"geographical:border:{country}"
        out.append(Fact(key, "geographical", "geographical.border", slots, evidence, (country,)))
    return out


def temporal_facts(kb: KnowledgeBase, province: Province, book: TemplateBook) -> list[Fact]:
    """Dated events with their source (newest first: better known, easier to verify)."""
    out = []
    for event in sorted(province.events, key=lambda e: -e.year):
        slots = {
            "en": {"year": str(event.year), "text": event.text_en},
            "id": {"year": str(event.year), "text": event.text_id},
        }
        evidence = {
            "kind": "event",
            "year": event.year,
            "province": province.name,
            "kb_owners": [province.name],
            "unique": True,
            "source": event.source,
        }
        out.append(
            Fact(f"temporal:{event.year}", "temporal", "temporal.default", slots, evidence, ())
        )
    return out


def commonsense_facts(kb: KnowledgeBase, province: Province, book: TemplateBook) -> list[Fact]:
    """Everyday scenes (ceremonies one witnesses, dishes one is served) of a province."""

    def slots(item: Any, lang: str, scenario: Any) -> dict[str, str]:
        return {
            "scenario": scenario[lang].format(name=item.name),
            "description": getattr(item, f"description_{lang}"),
        }

    return _item_facts(kb, province, book, "commonsense", "commonsense_kinds", slots)


NAMED_FACTS = {
    "entity": entity_facts,
    "geographical": geographical_facts,
    "temporal": temporal_facts,
    "commonsense": commonsense_facts,
}
