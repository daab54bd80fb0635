"""Word classes and named terms per question: the columns of the paper's Table 6, offline.

Per item, on the question text: adjectives, nouns (proper nouns included) and verbs from the
language's POS tagger (:mod:`cultureqa.mocqa.pos`), proper nouns, **locations** and **cultural
terms**, both by name lists of the knowledge base, so that every count can be traced to an entry:

* locations: the names of the 38 provinces (English and Indonesian), and of the 11 benchmark
  provinces' aliases, capitals, cities, regencies, islands, coasts, geographic features and
  neighbouring countries, the 193 countries of ``data/knowledge/countries/civilizations.csv``,
  and place phrases — a place noun with a capitalised name (``Lake Toba``, ``Weh Island``,
  ``Pulau Weh``, ``Gunung Rinjani``);
* cultural terms: names of the knowledge base's cultural items (dances, dishes, textiles, houses,
  instruments, weapons, landmarks, ceremonies) and of its peoples.

Matches do not overlap: the longest name at a position wins. Means per clue type × language.
The knowledge base names most cultural items in their own language but geographic features and
some landmarks in English only, so an Indonesian question that translates such a name (``Tugu
Kilometer Nol``) counts it as a location phrase or not at all: compare the two languages on
word classes, and on named terms only with that in mind.

**Persons** are counted by title phrases — a title with a capitalised name (``Sultan Agung``,
``Teuku Umar``, ``King Hayam Wuruk``): no offline person recogniser exists for Indonesian and the
knowledge base names no people, so a person named without a title is missed; the report says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

import pandas as pd

from cultureqa.knowledge.national import load_national
from cultureqa.knowledge.peoples import load_peoples
from cultureqa.knowledge.provinces import default_knowledge_dir, load_knowledge_base
from cultureqa.mocqa.pos import Tagger, count_classes

KEYS = ["clue_type", "language"]
COLUMNS = [
    "adjectives", "nouns", "verbs", "proper_nouns", "persons", "locations", "cultural_terms",
]  # fmt: skip
PERSONS_NOTE = (
    "Persons are counted by title phrases (a title such as Sultan, Raja, Teuku, King or President "
    "with a capitalised name): no offline person recogniser exists for Indonesian, so a person "
    "named without a title is missed (`proper_nouns`, the tagger's NNP, bounds it from above)."
)


_NAME = r"[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*"
PLACE_PHRASES: dict[str, str] = {
    "en": (
        rf"(?:Lake|Mount|Mt\.|Cape|Gulf of|Strait of|Bay of)\s+{_NAME}"
        rf"|{_NAME}\s+(?:Island|Islands|River|Strait|Sea|Bay|Lake|Mountains?|Volcano|Peninsula"
        r"|National Park|Regency|City|Highlands)\b"
    ),
    "id": (
        r"(?:Pulau|Kepulauan|Danau|Gunung|Sungai|Selat|Laut|Teluk|Tanjung|Kota|Kabupaten"
        rf"|Taman Nasional|Semenanjung|Dataran Tinggi)\s+{_NAME}"
    ),
}
"""A place noun with a capitalised name, per language (case-sensitive)."""


PERSON_TITLES: dict[str, str] = {
    "en": r"Sultan|King|Queen|Prince|Princess|Raja|Sunan|President|General|Governor|Admiral"
    r"|Prophet",
    "id": r"Sultan|Raja|Ratu|Pangeran|Putri|Sunan|Presiden|Jenderal|Gubernur|Nabi|Teuku|Cut"
    r"|Tuanku",
}
"""Titles that introduce a person's name, per language (case-sensitive, whole words)."""


@lru_cache(maxsize=2)
def person_pattern(language: str) -> re.Pattern[str]:
    """A title followed by a capitalised name."""
    return re.compile(rf"(?<!\w)(?:{PERSON_TITLES[language]})\s+{_NAME}")


def _alternation(names: set[str]) -> str:
    ordered = sorted((n.strip() for n in names if n.strip()), key=lambda n: (-len(n), n))
    return "|".join(re.escape(n) for n in ordered)


def place_names() -> set[str]:
    """Every place name the knowledge base holds (module docstring lists the kinds)."""
    names = {"Indonesia"}
    for province in load_national():
        names.update((province.name, province.name_id, *province.border_countries))
    for province in load_knowledge_base():
        names.update((*province.names, province.capital, *province.cities, *province.city_aliases))
        names.update((*province.regencies, province.island, *province.neighbours, *province.coast))
        names.update((*province.border_countries, *(g.name for g in province.geography)))
    countries = default_knowledge_dir().parent / "countries" / "civilizations.csv"
    names.update(pd.read_csv(countries, usecols=["country"])["country"].astype(str))
    return names


@lru_cache(maxsize=2)
def location_pattern(language: str) -> re.Pattern[str]:
    """Place phrases of ``language``, then knowledge-base place names, longest first."""
    return re.compile(rf"(?<!\w)(?:{PLACE_PHRASES[language]}|{_alternation(place_names())})(?!\w)")


@lru_cache(maxsize=1)
def cultural_terms_pattern() -> re.Pattern[str]:
    """Every cultural item and people name of the knowledge base, longest first, whole words."""
    names: set[str] = set()
    for province in load_knowledge_base():
        for items in province.cultural_items.values():
            names.update(item.name for item in items)
    for people in load_peoples():
        names.update(people.forms)
    return re.compile(rf"(?<!\w)(?:{_alternation(names)})(?!\w)", re.IGNORECASE)


def item_counts(question: str, language: str, tagger: Tagger) -> dict[str, int]:
    """The Table 6 counts of one question."""
    counts = count_classes(tagger.words(question), language)
    counts["persons"] = len(person_pattern(language).findall(question))
    counts["locations"] = len(location_pattern(language).findall(question))
    counts["cultural_terms"] = len(cultural_terms_pattern().findall(question))
    return counts


def word_class_table(dataset: pd.DataFrame, taggers: Mapping[str, Tagger]) -> pd.DataFrame:
    """Mean counts per question, per clue type × language and ``all`` × language.

    A language without a tagger is an error naming it (a blank column would read as zero).
    """
    missing = sorted(set(dataset["language"].astype(str)) - set(taggers))
    if missing:
        raise KeyError(f"no POS tagger for language(s) {missing}; have {sorted(taggers)}")
    per_item = pd.DataFrame(
        [
            item_counts(str(row["question"]), str(row["language"]), taggers[str(row["language"])])
            for row in dataset.to_dict("records")
        ],
        columns=COLUMNS,
    )
    rows = pd.concat([dataset[KEYS].reset_index(drop=True), per_item], axis=1)
    rows = pd.concat([rows, rows.assign(clue_type="all")], ignore_index=True)
    grouped = rows.groupby(KEYS, sort=True)
    table = grouped[COLUMNS].mean().add_suffix("_per_question")
    return grouped.size().rename("n").to_frame().join(table).reset_index()
