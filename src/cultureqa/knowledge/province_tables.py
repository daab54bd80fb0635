"""Indonesia's province knowledge as the two-hop engine's tables (docs/twohop-engine.md §2, §8).

The engine (:mod:`cultureqa.regions`) reads any region set from a few flat tables: regions, leak
terms, named facts and indicators. Indonesia's knowledge was written for the province build
(one YAML per benchmark province, ``peoples.yaml``, ``polities.yaml``, the national table and
the national claims of ``clue_facts.csv``); this module writes those same facts in the engine's
shape, through the loaders that validate them, so both readings rest on one set of files::

    python -m cultureqa.knowledge.province_tables build [--out DIR]

Nothing is added or judged here: a named fact is written for exactly the provinces its national
claim lists (read on the 2020 map, as :class:`~cultureqa.knowledge.national_clues.NationalClaim`
does), so the engine's proof over the universe refuses a shared fact as the province build did.
A claim whose set is unknown is written to ``omitted.csv`` with its note, never as a fact. The
output is deterministic (sorted rows, fixed number formats): a test rebuilds it byte for byte.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from cultureqa.core.io import write_text
from cultureqa.knowledge.gazetteer import (
    CUE_REQUIRED_NAMES,
    CULTURAL_HEAD_NOUNS,
    EN_CUE_PAIRS,
    EN_CUES,
    EN_NEXT_CUES,
    ID_CUES,
    PEOPLE_HEADS_ID,
    PEOPLE_TAILS_EN,
    POLITY_HEADS_ID,
)
from cultureqa.knowledge.national import default_national_path, load_national
from cultureqa.knowledge.national_clues import (
    NationalClaim,
    default_clue_facts_path,
    load_clue_facts,
)
from cultureqa.knowledge.peoples import load_peoples
from cultureqa.knowledge.polities import load_polities
from cultureqa.knowledge.provinces import (
    KnowledgeBase,
    KnowledgeBaseError,
    Province,
    default_knowledge_dir,
    load_knowledge_base,
)
from cultureqa.mocqa_shared.templates import TemplateBook, load_templates

DEFAULT_OUT = Path("data") / "knowledge" / "provinces_tables"
MAPS = ("2020", "2022")
"""The national table's maps: 2020 (the 34 provinces claims range over) and 2022 (four more)."""
ITEM_KINDS: Mapping[str, tuple[str, str]] = {
    "dances": ("dance", "entity"),
    "textiles": ("textile", "entity"),
    "houses": ("house", "entity"),
    "instruments": ("instrument", "entity"),
    "weapons": ("weapon", "entity"),
    "landmarks": ("landmark", "entity"),
    "dishes": ("dish", "commonsense"),
    "ceremonies": ("ceremony", "commonsense"),
}
"""Cultural-item kind of ``clue_facts.csv`` → (fact kind, clue type), as the province build
types them (``clue_templates.yaml``: entity_kinds, commonsense_kinds)."""
POSITION = "position"
COUNTRY = "Indonesia"
"""The value of every province's ``country`` fact: the scope "in Indonesia" (all 34)."""
ENTITY_OR_PLACE = frozenset(
    {kind for kind, clue_type in ITEM_KINDS.values() if clue_type == "entity"} | {"feature"}
)
"""Fact kinds whose names read in Indonesian through ``clue_templates.yaml``'s name rules."""
LEAK_KINDS = (
    "name", "alias", "capital", "city", "regency", "place_phrase", "people", "people_phrase",
    "polity", "polity_phrase",
)  # fmt: skip
"""Leak-term kinds in the order a repeated term keeps the first (a capital is not a city)."""
POLITY_NOUNS_AFTER = ("kingdom", "sultanate", "kings", "sultans", "court", "royal court")
"""English words after a polity's bare name that make it the polity ("the Bone kingdom")."""
MAP_NOTE = {
    "en": " (on the map before the 2022 split)",
    "id": " (menurut peta sebelum pemekaran 2022)",
}
"""Appended to a fact that today's map puts in a province created in 2022 (the Baliem Valley)."""
FACT_COLUMNS = (
    "province", "fact", "value", "label_en", "label_id", "source", "source_version", "year",
    "fact_key", "clue_facts_row",
)  # fmt: skip


@dataclass(frozen=True)
class Sources:
    """Where the builder reads: the province directory and the national files beside it."""

    provinces: Path
    national: Path
    clue_facts: Path
    templates: Path

    @classmethod
    def default(cls) -> Sources:
        """The committed knowledge base."""
        kb = default_knowledge_dir()
        return cls(kb, default_national_path(), default_clue_facts_path(),
                   kb.parent / "clue_templates.yaml")  # fmt: skip


def _csv(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def _rel(path: Path) -> str:
    """A path as the project names it (relative to the repository root when inside it)."""
    root = default_knowledge_dir().parents[2]
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path)


def _yaml_file(kb: KnowledgeBase, province: Province) -> Path:
    path = kb.source_dir / f"{province.name.lower().replace(' ', '_')}.yaml"
    if not path.exists():
        raise KnowledgeBaseError(f"{kb.source_dir}: no file for '{province.name}' at {path.name}")
    return path


def _national(src: Sources) -> list[Province]:
    """The 38 provinces of the national table, 2020 map first, in the file's order."""
    return [p for year in MAPS for p in load_national(src.national, year)]


def regions_table(src: Sources) -> str:
    """``province,name_en,name_id,aliases,capital,map``: the 38 provinces."""
    kb = {p.name: p for p in load_knowledge_base(src.provinces)}
    rows = []
    for year in MAPS:
        for p in load_national(src.national, year):
            own = kb.get(p.name)
            aliases = ";".join(own.aliases) if own else ""
            rows.append((p.name, p.name, p.name_id, aliases, own.capital if own else "", year))
    return _csv(("province", "name_en", "name_id", "aliases", "capital", "map"), rows)


def _phrases(bare: str, heads_before: Iterable[str], words_after: Iterable[str]) -> list[str]:
    """A bare name in the phrases that make it a people or a polity ("orang Sumba")."""
    # the head as it stands mid-sentence; the engine keeps one spelling of a term per region
    # (its loader folds case), and a term with a capital matches only as written
    return [f"{head} {bare}" for head in sorted(heads_before)] + [
        f"{bare} {word}" for word in sorted(words_after)
    ]


def _place_phrases(name: str) -> list[str]:
    """A place name that is also a word, people or kingdom, in the phrases that make it the place.

    The gazetteer counts such a name (``CUE_REQUIRED_NAMES``) only after a locative cue ("in
    Malang", "di Padang", "Kabupaten Karo", "Banjar Regency", "Medan's") or a cultural head
    noun ("Nasi Padang", "Soto Banjar"); the engine matches terms without context, so these
    phrases are the terms.
    """
    titled = {"kota", "kabupaten", "kab", "provinsi", "prov", "pulau", "daerah", "wilayah"}
    before = [*EN_CUES, *EN_CUE_PAIRS, *(c.capitalize() if c in titled else c for c in ID_CUES)]
    out = [f"{cue} {name}" for cue in sorted(before)]
    out += [f"{name} {cue.capitalize()}" for cue in sorted(EN_NEXT_CUES)]
    out += [f"{head.capitalize()} {name}" for head in sorted(CULTURAL_HEAD_NOUNS)]
    return [*out, f"{name}'s"]


def leak_table(src: Sources) -> str:
    """``province,term,kind,lang,source,source_version``: every term that points at a province.

    Names (English and Indonesian) of all 38; aliases, capital, cities, city aliases and
    regencies from the province files (one that is also a word, a people or a kingdom as the
    phrases that make it the place, kind ``place_phrase``); peoples (``peoples.yaml``) and
    historic polities (``polities.yaml``). A people's or polity's *bare* name (Sumba, Bone: also
    an island, a regency, a word) counts only in a people or polity phrase, so it is written as
    those phrases (the gazetteer's head words: a people's after a people or a cultural head,
    "suku Tengger", "adat Sunda"), kind ``people_phrase`` / ``polity_phrase``.
    """
    kb = load_knowledge_base(src.provinces)
    national = _rel(src.national)
    rows: list[tuple[str, str, str, str, str, str]] = []
    for p in _national(src):
        if p.name == p.name_id:
            rows.append((p.name, p.name, "name", "und", national, ""))
        else:
            rows += [(p.name, p.name, "name", "en", national, ""),
                     (p.name, p.name_id, "name", "id", national, "")]  # fmt: skip
    for p in kb:
        here = _rel(_yaml_file(kb, p))
        rows += [(p.name, a, "alias", "und", f"{here} (aliases)", "") for a in p.aliases]
        for kind, key, names in (
            ("capital", "capital", (p.capital,)), ("city", "cities", p.cities),
            ("city", "city_aliases", p.city_aliases), ("regency", "regencies", p.regencies),
        ):  # fmt: skip
            for name in names:
                if name.casefold() in CUE_REQUIRED_NAMES:  # Padang, Malang, Banjar, Karo, …
                    rows += [(p.name, t, "place_phrase", "und", f"{here} ({key})", "")
                             for t in _place_phrases(name)]  # fmt: skip
                else:
                    rows.append((p.name, name, kind, "und", f"{here} ({key})", ""))
    for people in load_peoples(src.provinces.parent / "peoples.yaml"):
        terms = [(f, "people") for f in people.forms] + [
            (t, "people_phrase")
            for b in people.bare
            for t in _phrases(b, PEOPLE_HEADS_ID | CULTURAL_HEAD_NOUNS, PEOPLE_TAILS_EN)
        ]
        for province in people.provinces:
            rows += [(province, t, k, "und", people.source, "") for t, k in terms]
    for polity in load_polities(src.provinces.parent / "polities.yaml"):
        terms = [(f, "polity") for f in polity.forms] + [
            (t, "polity_phrase")
            for b in polity.bare
            for t in [
                *_phrases(b, POLITY_HEADS_ID, POLITY_NOUNS_AFTER),
                f"Kingdom of {b}",
                f"Sultanate of {b}",
            ]
        ]
        rows += [(polity.province, t, k, "und", polity.source, str(polity.year)) for t, k in terms]
    order = {name: i for i, name in enumerate(p.name for p in _national(src))}
    rank = {k: i for i, k in enumerate(LEAK_KINDS)}
    rows.sort(key=lambda r: (order[r[0]], rank[r[2]], r[1], r[3], r[4]))
    seen: set[tuple[str, str]] = set()
    kept = []
    for row in rows:  # a term twice for one province keeps its first (highest-ranked) kind
        held = (row[0], row[1].casefold())
        if held not in seen:
            seen.add(held)
            kept.append(row)
    return _csv(("province", "term", "kind", "lang", "source", "source_version"), kept)


def _localize(book: TemplateBook, name: str) -> str:
    return book.localize(name, "id")


def _labels(claim: NationalClaim, owner: Province, book: TemplateBook) -> tuple[str, str, str, str]:
    """(fact kind, value, English label, Indonesian label) of one ``clue_facts.csv`` key."""
    clue_type, kind, name = [*claim.fact_key.split(":", 2), "", ""][:3]
    if clue_type in ("entity", "commonsense"):
        fact = ITEM_KINDS[kind][0]
        item = next((i for i in owner.items(kind) if i.name == name), None)
        if item is None:
            raise KnowledgeBaseError(f"{owner.name}: no {kind} item '{name}' for {claim.fact_key}")
        # entity names read in Indonesian as the province build writes them; dishes and
        # ceremonies keep their own names
        shown = _localize(book, name) if clue_type == "entity" else name
        return fact, name, f"{name}, {item.description_en}", f"{shown}, yaitu {item.description_id}"
    if clue_type == "geographical":
        feature = next((g for g in owner.geography if g.kind == kind and g.name == name), None)
        if feature is None:
            raise KnowledgeBaseError(f"{owner.name}: no {kind} '{name}' for {claim.fact_key}")
        if kind == POSITION:
            return POSITION, name, feature.fact_en, feature.fact_id
        en, id_ = f"{name}, {feature.fact_en}", f"{_localize(book, name)}, yaitu {feature.fact_id}"
        return "feature", name, en, id_
    if clue_type == "temporal":
        events = [e for e in owner.events if str(e.year) == kind]
        if len(events) != 1:
            raise KnowledgeBaseError(f"{owner.name}: {len(events)} events for {claim.fact_key}")
        e = events[0]
        return "event", f"{e.year}: {e.text_en}", f"{e.year}, {e.text_en}", f"{e.year}, {e.text_id}"
    raise KnowledgeBaseError(f"{claim.fact_key}: unknown clue type '{clue_type}'")


def _claims(src: Sources) -> list[tuple[int, NationalClaim]]:
    """Every claim with its row in ``clue_facts.csv`` (the loader validates them all first)."""
    table = load_clue_facts(src.clue_facts, src.national)
    with src.clue_facts.open(encoding="utf-8", newline="") as handle:
        keys = [(r["province"].strip(), r["fact_key"].strip()) for r in csv.DictReader(handle)]
    return [(i + 2, table.claims[k]) for i, k in enumerate(keys)]


def _table_facts(src: Sources, book: TemplateBook) -> list[tuple[str, ...]]:
    """Main island, land neighbours and foreign land borders of the 34, from the national table."""
    sources = yaml.safe_load((src.national.with_name("sources.yaml")).read_text(encoding="utf-8"))
    rel = _rel(src.national)
    out = []
    for p in load_national(src.national, MAPS[0]):
        cite = {c: (f"{sources[c]['source']} ({rel}: {c})", str(sources[c]["year"]))
                for c in ("map", "island", "neighbours", "border_countries")}  # fmt: skip
        s, y = cite["map"]
        out.append((p.name, "country", COUNTRY, COUNTRY, COUNTRY, s, "", y))
        if p.island:
            s, y = cite["island"]
            out.append((p.name, "island", p.island, p.island, _localize(book, p.island), s, "", y))
        for n in p.neighbours:
            s, y = cite["neighbours"]
            out.append((p.name, "neighbour", n, n, n, s, "", y))
        for c in p.border_countries:
            s, y = cite["border_countries"]
            out.append((p.name, "border_country", c, c, _localize(book, c), s, "", y))
    return [(*r, "", "") for r in out]


def _one_label_per_value(rows: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """A value the claims word differently (two provinces' descriptions) shows its name alone.

    The engine words a fact by its value, whichever province holds it, so each value keeps one
    label per language.
    """
    labels: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for r in rows:
        labels.setdefault((r[1], r[2]), set()).add((r[3], r[4]))
    return [r if len(labels[(r[1], r[2])]) == 1 else (*r[:3], r[2], r[2], *r[5:]) for r in rows]


def facts_table(src: Sources) -> tuple[str, str]:
    """The named facts (``facts.csv``) and the claims left out with their reason (``omitted.csv``).

    Each claim of ``clue_facts.csv`` with a known set becomes one row per province of that set
    on the 2020 map; the value and its words per language come from the claiming province's
    file. A set that today's map puts in a 2022 province says which map it means.
    """
    kb = load_knowledge_base(src.provinces)
    book = load_templates(src.templates)
    rows: list[tuple[str, ...]] = []
    omitted = []
    for row, claim in _claims(src):
        if not claim.provinces:
            omitted.append((claim.province, claim.fact_key, row, f"set unknown: {claim.notes}"))
            continue
        fact, value, en, id_ = _labels(claim, kb[claim.province], book)
        if len(claim.on_2020_map) > 1 and fact != "event":
            # a shared item's description is its claiming province's ("in the former royal
            # city"): the other provinces' rows, and so every clue, show the name alone
            en, id_ = value, _localize(book, value) if fact in ENTITY_OR_PLACE else value
        if claim.before_2022_split:
            en, id_ = en + MAP_NOTE["en"], id_ + MAP_NOTE["id"]
        for member in claim.on_2020_map:
            rows.append((member, fact, value, en, id_, claim.source, "", str(claim.year or ""),
                         claim.fact_key, str(row)))  # fmt: skip
    rows = _one_label_per_value(rows) + _table_facts(src, book)
    order = {p.name: i for i, p in enumerate(_national(src))}
    rows.sort(key=lambda r: (order[r[0]], r[1], r[2]))
    return (
        _csv(FACT_COLUMNS, rows),
        _csv(("province", "fact_key", "clue_facts_row", "reason"), omitted),
    )


STATISTICS = (("population_2020", "population"), ("area_km2", "area_km2"))


def indicators_table(src: Sources) -> tuple[str, str]:
    """Population, land area and density of the 34 (``indicators.csv``) and each one's source.

    Density is population over land area, both of 2020 (BPS), as the province build derives it;
    a blank area (two published values) leaves area and density blank. Growth needs the 2010
    census, which the national table does not hold: it is not an indicator of this set.
    """
    rows, cited = [], {}
    for p in load_national(src.national, MAPS[0]):
        pop, area = p.statistics.get("population"), p.statistics.get("area_km2")
        density = pop.value / area.value if pop and area and area.value else None
        rows.append((
            p.name,
            "" if pop is None else f"{pop.value:.0f}",
            "" if area is None else f"{area.value:.2f}",
            "" if density is None else f"{density:.2f}",
        ))  # fmt: skip
        for column, stat in (("population_2020", pop), ("area_km2", area)):
            if stat is not None:
                cited[column] = (stat.source, str(stat.year))
        if pop and area:
            cited["density_2020"] = (
                f"{pop.source}; {area.source} (population / area)",
                str(pop.year),
            )
    sources = [(c, *cited[c]) for c in ("population_2020", "area_km2", "density_2020")]
    return (
        _csv(("province", "population_2020", "area_km2", "density_2020"), rows),
        _csv(("indicator", "source", "year"), sources),
    )


def build(out: Path, src: Sources | None = None) -> dict[str, Path]:
    """Write every table under ``out`` (each file atomically); returns name → path."""
    src = src or Sources.default()
    facts, omitted = facts_table(src)
    indicators, indicator_sources = indicators_table(src)
    texts = {
        "regions.csv": regions_table(src),
        "leak_terms.csv": leak_table(src),
        "facts.csv": facts,
        "omitted.csv": omitted,
        "indicators.csv": indicators,
        "indicator_sources.csv": indicator_sources,
    }
    out.mkdir(parents=True, exist_ok=True)
    return {name: write_text(out / name, text) for name, text in texts.items()}


def main(argv: Sequence[str] | None = None) -> int:
    """``build [--out DIR]``: one error line and exit 2 on a malformed knowledge file."""
    parser = argparse.ArgumentParser(prog="python -m cultureqa.knowledge.province_tables")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("build", help="write the Indonesian region set's tables")
    cmd.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    try:
        written = build(args.out)
    except (KnowledgeBaseError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name, path in written.items():
        print(f"{path}: {sum(1 for _ in path.open(encoding='utf-8')) - 1} rows ({name})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
