"""A region set that exists only in the tests: five invented regions, two languages, ten questions.

Everything a real set provides (regions table, two indicator tables in two reader formats, two
category tables, source questions as JSONL) is written to a temporary folder; the region set is
the same mapping a ``conf/region_set/<name>.yaml`` would compose to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

REGIONS = """id,name_en,name_id,aliases,demonyms,capital,leak_terms
VEL,Veloria,Veloria,the Velorian Marches,Velorian,Castelmar,Old Velor=a former kingdom;velo=coins
QUI,Quintar,Kuintar,,Quintari,Port Amsel,
OST,Ostrabia,Ostrabia,,Ostrabian,Nerevin,Dunmark=a town there
LUM,Lumeth,Lumet,,Lumethi,Sarnhold,
DRA,Dravenna,Drawena,,Dravennese,Ilmport,
"""
# long format: one row per region (rain, mm, 2020)
RAIN = """code,rain_mm,year
VEL,1200,2020
QUI,800,2020
OST,1500,2020
LUM,400,2020
DRA,950,2020
"""
# wide format with a preamble line, as statistical offices publish
TEA = """Invented statistics office, tea consumption per person (kg)
code,2019,2020
VEL,2.0,2.1
QUI,3.5,3.9
OST,1.0,1.2
LUM,5.0,5.5
DRA,2.9,3.0
"""
ZONES = """code,zone,coast
VEL,Northern Zone,sea
QUI,Northern Zone,inland
OST,Northern Zone,sea
LUM,Southern Zone,inland
DRA,Northern Zone,inland
"""
NAMES = {
    "VEL": ("Veloria", "Velorian", "Castelmar"),
    "QUI": ("Quintar", "Quintari", "Port Amsel"),
    "OST": ("Ostrabia", "Ostrabian", "Nerevin"),
    "LUM": ("Lumeth", "Lumethi", "Sarnhold"),
    "DRA": ("Dravenna", "Dravennese", "Ilmport"),
}


SET_YAML = """
name: invented
noun: {en: land, id: negeri}
languages: [en, id]
regions:
  file: data/regions.csv
  id: id
  names: {en: name_en, id: name_id}
  aliases: aliases
  demonyms: demonyms
  capitals: capital
  leak_terms: leak_terms
replacements:
  en: {name: this land, alias: this land, demonym: local, capital: the capital,
       leak_term: a place there}
  id: {name: negeri ini, alias: negeri ini, demonym: setempat, capital: ibu kota,
       leak_term: suatu tempat di sana}
groups: [zone]
min_condition_holders: 2
indicators:
  - {id: rain, label: {en: yearly rainfall (mm), id: curah hujan tahunan (mm)}, unit: mm,
     file: data/rain.csv, reader: long, id_column: code, value_column: rain_mm, year: 2020,
     thresholds: [600, 1000, 1400], min_gap_share: 0.05, decimals: 0}
  - {id: tea, label: {en: tea per person (kg), id: teh per orang (kg)}, unit: kg,
     file: data/tea.csv, reader: wide_years, skiprows: 1, id_column: code, year: 2020,
     thresholds: [1.5, 2.5, 3.5, 4.5], min_gap_share: 0.05, decimals: 1}
categories:
  - {id: zone, phrase: {en: "in the {value}", id: "di {value}"}, geographical: true,
     file: data/zones.csv, reader: long, id_column: code, value_column: zone}
  - {id: coast, phrase: {en: "with a {value} coast", id: "berpantai {value}"},
     geographical: true, file: data/zones.csv, reader: long, id_column: code,
     value_column: coast}
clue_types: [comparison, intersection, geographical]
not_generated: {entity: no table of cultural items for invented lands}
templates:
  en:
    comparison: "the {noun} {scope} whose {conditions}"
    intersection: "the {noun} {scope} whose {conditions}"
    geographical: "the {noun} {scope}"
    comparison_condition: "{indicator} in {year} was higher than {low}'s but lower than {high}'s"
    range_between: "{indicator} in {year} was between {low} and {high}"
    range_above: "{indicator} in {year} was above {low}"
    range_below: "{indicator} in {year} was below {high}"
    and: and
    coverage: " (of the lands with a figure)"
    frame: "This scenario takes place in {clue}."
    oracle: "This scenario takes place in {name}."
  id:
    comparison: "{noun} {scope} yang {conditions}"
    intersection: "{noun} {scope} yang {conditions}"
    geographical: "{noun} {scope}"
    comparison_condition: "{indicator} pada {year} di atas {low} tetapi di bawah {high}"
    range_between: "{indicator} pada {year} antara {low} dan {high}"
    range_above: "{indicator} pada {year} di atas {low}"
    range_below: "{indicator} pada {year} di bawah {high}"
    and: dan
    coverage: " (di antara negeri yang berangka)"
    frame: "Skenario ini terjadi di {clue}."
    oracle: "Skenario ini terjadi di {name}."
source: {reader: jsonl, items: data/questions.jsonl}
"""


def _question(rid: str, language: str, index: int) -> dict[str, Any]:
    name, demonym, capital = NAMES[rid]
    if language == "en":
        context = (
            f"Mira visits {capital}, in {name}, for the spring fair. Her {demonym} host insists "
            f"that she take off her hat before she enters the bakery number {index}."
        )
        question = "Why does the host ask Mira to take off her hat before entering?"
        correct = f"In {name} a covered head indoors signals that a guest means to leave soon"
        wrong = [
            "Hats are taxed",
            "Bakers dislike wool",
            "It is about the heat",
            "A fire rule",
            "Luck",
        ]
    else:
        context = (
            f"Mira mengunjungi {capital} di {name} untuk pasar musim semi. Tuan rumah "
            f"{demonym} memintanya melepas topi sebelum masuk ke toko roti nomor {index}."
        )
        question = "Mengapa tuan rumah meminta Mira melepas topinya sebelum masuk?"
        correct = f"Di {name} kepala tertutup di dalam ruangan berarti tamu ingin segera pergi"
        wrong = [
            "Topi dikenai pajak",
            "Tukang roti benci wol",
            "Soal panas",
            "Aturan api",
            "Untung",
        ]
    options = dict(zip("ABCDE", wrong, strict=True)) | {"F": correct}
    return {
        "source_id": f"Q{index:02d}", "region": rid, "language": language,
        "context": context, "question": question, "options": options, "topic": "etiquette",
    }  # fmt: skip


def write_invented(root: Path) -> dict[str, Any]:
    """Write the files under ``root``; return the region-set mapping (as params.yaml holds it)."""
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    for name, text in {
        "regions.csv": REGIONS, "rain.csv": RAIN, "tea.csv": TEA, "zones.csv": ZONES,
    }.items():  # fmt: skip
        (data / name).write_text(text, encoding="utf-8")
    rows = [_question(rid, lang, i + 1) for i, rid in enumerate(NAMES) for lang in ("en", "id")]
    (data / "questions.jsonl").write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8"
    )
    return dict(yaml.safe_load(SET_YAML))


# The two contract tables (docs/twohop-engine.md §2) for the invented lands: named facts and leak
# terms, in exactly the columns data/knowledge/countries/{facts,leak_terms}.csv have.
FACTS = """iso3,fact,value,source,source_version,year
DRA,currency,dram,curated:invented mint register,2020,2020
DRA,independence_year,1850,curated:invented charter roll,2020,
DRA,landlocked,true,curated:invented atlas,3,
DRA,neighbour,LUM,curated:invented atlas,3,
DRA,official_language,Quintese,curated:invented census,2020,2020
LUM,currency,velon,curated:invented mint register,2020,2020
LUM,independence_year,1901,curated:invented charter roll,2020,
LUM,landlocked,true,curated:invented atlas,3,
LUM,neighbour,DRA,curated:invented atlas,3,
LUM,official_language,Lumic,curated:invented census,2020,2020
OST,currency,ostral,curated:invented mint register,2020,2020
OST,independence_year,1901,curated:invented charter roll,2020,
OST,neighbour,QUI,curated:invented atlas,3,
OST,official_language,Velorese,curated:invented census,2020,2020
QUI,currency,quin,curated:invented mint register,2020,2020
QUI,independence_year,1850,curated:invented charter roll,2020,
QUI,landlocked,true,curated:invented atlas,3,
QUI,neighbour,OST,curated:invented atlas,3,
QUI,neighbour,VEL,curated:invented atlas,3,
QUI,official_language,Quintese,curated:invented census,2020,2020
VEL,currency,velon,curated:invented mint register,2020,2020
VEL,independence_year,1850,curated:invented charter roll,2020,
VEL,neighbour,QUI,curated:invented atlas,3,
VEL,official_language,Velorese,curated:invented census,2020,2020
"""
# one term of every kind for Veloria (the planted leaks), and a language shared by two lands
LEAKS = """iso3,term,kind,lang,source,source_version
DRA,Quintese,language,und,curated:invented census,2020
LUM,velon,currency,und,curated:invented mint register,2020
OST,Velorese,language,und,curated:invented census,2020
QUI,Quintese,language,und,curated:invented census,2020
VEL,Vélorie,name,fr,curated:invented gazetteer,1
VEL,Velor Republic,alias,en,curated:invented gazetteer,1
VEL,Velorish,demonym,en,curated:invented gazetteer,1
VEL,Castelmar,capital,und,curated:invented gazetteer,1
VEL,Marrowgate,city,und,curated:invented gazetteer,1
VEL,Tharn,people,und,curated:invented ethnography,2
VEL,Velorese,language,und,curated:invented census,2020
VEL,velon,currency,und,curated:invented mint register,2020
VEL,Glasspeak,landmark,und,curated:invented gazetteer,1
VEL,Velbank,institution,und,curated:invented registry,1
VEL,brinning,practice,und,curated:invented ethnography,2
"""
LEAK_KINDS = ("name", "alias", "demonym", "capital", "city", "people", "language", "currency",
              "landmark", "institution", "practice")  # fmt: skip
# a sentence naming one Velorian term of each kind (the scrub must take every one)
PLANTED = {
    "name": "Vélorie",
    "alias": "Velor Republic",
    "demonym": "Velorish",
    "capital": "Castelmar",
    "city": "Marrowgate",
    "people": "Tharn",
    "language": "Velorese",
    "currency": "velon",
    "landmark": "Glasspeak",
    "institution": "Velbank",
    "practice": "brinning",
}
REPLACEMENTS = {
    "en": {"city": "a city there", "people": "local people", "language": "the local language",
           "currency": "the local currency", "landmark": "a landmark there",
           "institution": "a local institution", "practice": "a local custom"},
    "id": {"city": "sebuah kota di sana", "people": "orang setempat",
           "language": "bahasa setempat", "currency": "mata uang setempat",
           "landmark": "sebuah tempat terkenal di sana", "institution": "sebuah lembaga setempat",
           "practice": "sebuah adat setempat"},
}  # fmt: skip
FACT_KINDS = {
    "official_language": {"clue_type": "entity",
                          "phrase": {"en": "whose official language is {value}",
                                     "id": "yang bahasa resminya {value}"}},
    "currency": {"clue_type": "entity",
                 "phrase": {"en": "whose currency is the {value}",
                            "id": "yang mata uangnya {value}"}},
    "neighbour": {"clue_type": "geographical", "value_is_region": True,
                  "phrase": {"en": "bordering {value}", "id": "yang berbatasan dengan {value}"}},
    "landlocked": {"clue_type": "geographical", "values": ["true"],
                   "phrase": {"en": "without a sea coast", "id": "yang tak berpantai"}},
    "independence_year": {"clue_type": "temporal",
                          "phrase": {"en": "independent since {value}",
                                     "id": "yang merdeka sejak {value}"}},
}  # fmt: skip


def with_named_facts(root: Path, raw: dict[str, Any]) -> dict[str, Any]:
    """The invented set with the facts and leak tables written and declared."""
    (root / "data/facts.csv").write_text(FACTS, encoding="utf-8")
    (root / "data/leak_terms.csv").write_text(LEAKS, encoding="utf-8")
    out = dict(raw)
    out["regions"] = {**raw["regions"], "leak_table": {"file": "data/leak_terms.csv"}}
    out["replacements"] = {k: {**v, **REPLACEMENTS[k]} for k, v in raw["replacements"].items()}
    out["facts"] = {"file": "data/facts.csv", "id_column": "iso3", "kinds": FACT_KINDS}
    out["clue_types"] = [*raw["clue_types"], "entity", "temporal"]
    out["not_generated"] = {}
    out["clue_may_name"] = ["language", "currency"]
    for lang in ("en", "id"):
        scope = out["templates"][lang]["geographical"]
        out["templates"][lang] = {**raw["templates"][lang], "entity": scope, "temporal": scope}
    return out


def plant_every_kind(root: Path) -> None:
    """Veloria's English question names one term of every leak kind (after write_invented)."""
    path = root / "data/questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if row["region"] == "VEL" and row["language"] == "en":
            row["context"] += " Her friends speak of " + ", ".join(PLANTED.values()) + "."
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", "utf-8")
