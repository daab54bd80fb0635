"""Province gazetteer: normalise province answers and find place names used as locations.

Two jobs share one name index built from the knowledge base (DESIGN.md §5 verify, §6 parsing):

* :func:`normalize_province` maps a model reply or a source label ("Sumut", "Provinsi Jawa
  Barat", "South Borneo", "Medan") to one of the 11 canonical names, or ``None`` when it names
  no province or more than one.
* :func:`find_location_mentions` flags province, city and regency names that would let a
  question skip its first hop. Rules, in order:

  1. Terms that contain a place name without denoting the place are allowed: other provinces or
     countries (Papua New Guinea, Papua Barat), named waters (Makassar Strait), ethnonyms
     (Bali Aga, Batak Toba) and every knowledge-base cultural item whose name holds a place name
     (Rumoh Aceh, Soto Banjar, Reog Ponorogo).
  2. A name right after a cultural head noun is a cultural term (Soto Aceh, Batik Aceh, Kopi
     Aceh, bahasa Bali, suku Makassar).
  3. City or regency names that are also common words, ethnonyms or old kingdoms (Malang,
     Padang, Bone, Karo, Gowa) count only with a locative cue: "in Medan", "di Kota Padang".
  4. Every other mention counts, bare or not ("masyarakat Aceh", "Bali's", "NTT").

  Derived words never match (Balinese, Acehnese, Makassarese) because names must end at a word
  boundary; demonyms are treated as ethnic, not locative, references.
* :func:`find_own_province_leaks` is the stricter rule for a question about a known province
  (issue 11): any name of *that* province, its capital, a city or regency of it, or one of its
  peoples (``data/knowledge/peoples.yaml``: Acehnese, Batak, "orang Jawa", …) is a leak, cultural
  terms included ("Rumoh Aceh", "Coto Makassar", "Batak wedding"). Names of other polities
  (Papua New Guinea, West Papua) are exempt only where they do not contain the province's own
  name: for Papua they leak, since a reader sees "Papua" in them (issue 22); cue-required common
  words (Padang, Malang) need a
  locative cue or a cultural head noun before them; island names (Sumba, Madura) count only in a
  people phrase. Historic polities of the province (``data/knowledge/polities.yaml``: Gowa, Tallo,
  Samudera Pasai, Majapahit, …) leak too (issue 34), and any of its regency, people or polity
  names leaks inside a polity phrase ("Kingdom of Bone", "Kerajaan Gowa", "raja-raja Gowa",
  "the Gowa kings"), where no locative cue is needed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from cultureqa.knowledge.peoples import People, load_peoples
from cultureqa.knowledge.polities import Polity, load_polities
from cultureqa.knowledge.provinces import CANONICAL_PROVINCES, KnowledgeBase, load_knowledge_base

__all__ = [
    "CANONICAL_PROVINCES",
    "Gazetteer",
    "LocationMention",
    "NameLeak",
    "default_gazetteer",
    "find_location_mentions",
    "find_own_province_leaks",
    "has_location_leak",
    "normalize_province",
]

PlaceKind = Literal["province", "city", "regency"]
LeakKind = Literal["province", "capital", "city", "regency", "people", "polity"]
Language = Literal["en", "id"]
_KIND_RANK: dict[PlaceKind, int] = {"province": 0, "city": 1, "regency": 2}

OTHER_POLITY_TERMS: tuple[str, ...] = (
    "Papua New Guinea", "Papua Nugini", "West Papua", "Papua Barat", "Southwest Papua",
    "Papua Barat Daya", "from Sabang to Merauke", "dari Sabang sampai Merauke",
)  # fmt: skip
"""Names that hold a place name but denote another country or province (or the whole nation):
the only exemptions the own-province leak check keeps, and only for a province whose own name
they do not contain ("Papua New Guinea" leaks for Papua)."""

PEOPLE_HEADS_ID: frozenset[str] = frozenset({
    "orang", "masyarakat", "urang", "wong", "etnis", "kaum", "komunitas", "warga", "budaya",
    "kebudayaan", "tradisi", "upacara", "perkawinan", "pernikahan",
})  # fmt: skip
"""Indonesian words that make a bare name (Sumba, Jawa, Using) a reference to its people."""

PEOPLE_TAILS_EN: frozenset[str] = frozenset({
    "people", "person", "persons", "community", "communities", "custom", "customs", "customary",
    "tradition", "traditions", "culture", "language", "tribe", "society", "wedding", "weddings",
    "ethnic", "ceremony", "ceremonies", "dance", "dances", "cuisine", "house", "houses",
    "textile", "textiles", "ikat", "elders", "villagers", "families", "family", "adat", "court",
    "royal", "kingdom", "sultanate", "script", "music", "song", "songs", "art", "arts", "cloth",
    "dagger", "dish", "dishes", "calendar", "nobles", "village", "villages", "farmers", "bride",
    "groom", "ritual", "rituals", "rites", "festival", "feast", "theatre", "puppet", "puppets",
    "mask", "masks", "gamelan", "weaving", "weavers", "chiefs", "clan", "clans",
})  # fmt: skip
"""English words after a bare name that make it a reference to its people ("Sumba people")."""

POLITY_HEADS_ID: frozenset[str] = frozenset({
    "kerajaan", "kesultanan", "kedatuan", "kadatuan", "raja", "sultan", "keraton", "kraton",
    "kemaharajaan", "kasunanan",
})  # fmt: skip
"""Indonesian words before a name that make it a polity ("Kerajaan Gowa", "raja-raja Gowa")."""

POLITY_NOUNS_EN: frozenset[str] = frozenset({
    "kingdom", "kingdoms", "sultanate", "sultanates", "empire", "king", "kings", "sultan",
    "sultans", "ruler", "rulers", "court", "dynasty", "realm", "principality", "royal",
})  # fmt: skip
"""English words that make a name a polity after it ("the Gowa kings") or before "of" it
("Kingdom of Bone")."""

NON_LOCATION_TERMS: tuple[str, ...] = (
    "Papua New Guinea", "Papua Nugini", "West Papua", "Papua Barat", "Southwest Papua",
    "Papua Barat Daya", "Makassar Strait", "Strait of Makassar", "Selat Makassar", "Selat Malaka",
    "Badung Strait", "Selat Badung", "Gulf of Bone", "Teluk Bone", "Bali Aga", "Batak Toba",
    "Batak Karo", "Bugis-Makassar", "Bugis Makassar", "Nasi Padang", "Rumah Makan Padang",
    "Masakan Padang", "from Sabang to Merauke", "dari Sabang sampai Merauke",
)  # fmt: skip
"""Names that contain a place name but do not point at that place."""

CULTURAL_HEAD_NOUNS: frozenset[str] = frozenset({
    "adat", "ayam", "bahasa", "baju", "bakso", "batak", "batik", "bika", "bubur", "coto", "dodol",
    "es", "gamelan", "gulai", "hikayat", "ikat", "jenang", "kain", "keripik", "keris", "kerupuk",
    "ketupat", "kopi", "kue", "lagu", "lontong", "lumpia", "makanan", "masakan", "mi", "mie",
    "motif", "nasi", "pakaian", "rawon", "reog", "rumah", "rumoh", "sambal", "sarung", "sate",
    "songket", "soto", "suku", "tahu", "tari", "tarian", "tenun", "topeng", "ukiran", "ulos"
})  # fmt: skip
"""Indonesian heads of cultural compounds; kept in English text too (terms stay untranslated)."""

CUE_REQUIRED_NAMES: frozenset[str] = frozenset({
    "agam", "alor", "asmat", "badung", "banjar", "batang", "batu", "belu", "bone", "demak", "ende",
    "gowa", "karo", "kediri", "kotabaru", "kudus", "kuningan", "luwu", "malaka", "malang",
    "manggarai", "medan", "ngada", "nduga", "nias", "padang", "pati", "puncak", "sikka",
    "simalungun", "simeulue", "soppeng", "solo", "tegal", "toba", "wajo", "waropen", "batu bara",
    "pesisir selatan", "tebing tinggi"
})  # fmt: skip
"""City/regency names that are also common words, ethnonyms or old kingdoms (folded)."""

EN_CUES = frozenset({
    "in", "at", "from", "near", "to", "into", "around", "across", "throughout", "within",
    "outside"
})  # fmt: skip
EN_CUE_PAIRS = frozenset({"city of", "town of", "province of", "regency of", "capital of"})
EN_NEXT_CUES = frozenset({"city", "town", "regency", "province"})
ID_CUES = frozenset({
    "di", "dari", "ke", "menuju", "sekitar", "seluruh", "kota", "kabupaten", "kab", "provinsi",
    "prov", "daerah", "wilayah", "kawasan", "pulau", "asal"
})  # fmt: skip
_PREFIXES = ("the province of ", "province of ", "provinsi ", "province ", "prov ")
_SUFFIXES = (" province", " provinsi")
_TOKEN = re.compile(r"[\w'’]+")
_CLAUSE_BREAK = re.compile(r"[.!?;:,()\[\]\"“”]")


def _fold(text: str) -> str:
    """Lowercase ASCII words joined by single spaces: the key for every name lookup."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return " ".join(re.sub(r"[^0-9a-z]+", " ", ascii_text.lower()).split())


def _alternation(names: Iterable[str], folded: bool) -> re.Pattern[str]:
    """One regex over all names, longest first, so "Papua Barat" wins over "Papua"."""
    unique = sorted(set(names), key=len, reverse=True)
    separator = " " if folded else r"[\s\-]+"
    parts = [separator.join(re.escape(w) for w in n.split()) for n in unique]
    flags = 0 if folded else re.IGNORECASE
    return re.compile(r"(?<!\w)(?:" + "|".join(parts) + r")(?!\w)", flags)


@dataclass
class _Place:
    """Everything the index knows about one surface name (folded)."""

    kind: PlaceKind
    provinces: set[str] = field(default_factory=set)
    caps_only: bool = False  # all-caps abbreviations (NTT, NAD) must match in capitals

    @property
    def province(self) -> str | None:
        return next(iter(self.provinces)) if len(self.provinces) == 1 else None


@dataclass(frozen=True)
class LocationMention:
    """A place name used as a location inside a text."""

    span: tuple[int, int]
    name: str
    province: str | None
    """Canonical province, or None when the name belongs to several (Banjar)."""
    kind: PlaceKind
    cue: str | None = None
    """The locative cue that preceded or followed the name ("in", "di kota", "'s"), if any."""


@dataclass(frozen=True)
class NameLeak:
    """A term naming the text's own province: its name, a place in it, or its people.

    Unlike :class:`LocationMention`, cultural terms are no excuse ("Rumoh Aceh").
    """

    span: tuple[int, int]
    name: str
    kind: LeakKind
    term: str
    """The people entry or place the name belongs to (for the removal reason)."""


@dataclass(frozen=True)
class _Term:
    kind: LeakKind
    term: str
    always: bool
    """People forms count wherever they stand; places and bare names need context."""
    cue_required: bool = False


class Gazetteer:
    """Name index over one knowledge base; build once and reuse (regexes are precompiled)."""

    def __init__(
        self, kb: KnowledgeBase, peoples: Iterable[People] = (), polities: Iterable[Polity] = ()
    ) -> None:
        self._own: dict[str, tuple[re.Pattern[str], dict[str, _Term]]] = {}
        self._peoples = tuple(peoples)
        self._polities = tuple(polities)
        self._kb = kb
        self._places: dict[str, _Place] = {}
        surfaces: list[str] = []
        for province in kb:
            surfaces += self._add(province.names, province.name, "province")
            surfaces += self._add((*province.cities, *province.city_aliases), province.name, "city")
            surfaces += self._add(province.regencies, province.name, "regency")
        self._text_pattern = _alternation([*surfaces, *NON_LOCATION_TERMS], folded=False)
        item_names = (i.name for p in kb for items in p.cultural_items.values() for i in items)
        allowed = [*NON_LOCATION_TERMS, *(n for n in item_names if self._contains_place(n))]
        self._allowed = {_fold(t) for t in allowed}
        self._text_pattern = _alternation([*surfaces, *allowed], folded=False)
        blockers = [_fold(t) for t in NON_LOCATION_TERMS]
        provinces = [k for k, p in self._places.items() if p.kind == "province"]
        self._province_pattern = _alternation([*provinces, *blockers], folded=True)
        places = [k for k, p in self._places.items() if p.kind != "province" and p.province]
        self._city_pattern = _alternation(places, folded=True)

    def _add(self, names: Iterable[str], province: str, kind: PlaceKind) -> list[str]:
        """Index ``names``; a name shared by two provinces keeps both and becomes ambiguous."""
        surfaces = list(names)
        for surface in surfaces:
            place = self._places.setdefault(_fold(surface), _Place(kind))
            if _KIND_RANK[kind] < _KIND_RANK[place.kind]:
                place.kind = kind
            place.provinces.add(province)
            place.caps_only = place.caps_only or (surface.isupper() and len(surface) <= 4)
        return surfaces

    def _contains_place(self, term: str) -> bool:
        """Whether a cultural term holds a place name plus other words (Soto Banjar, not Toba)."""
        return any(_fold(m.group()) != _fold(term) for m in self._text_pattern.finditer(term))

    def normalize(self, text: str) -> str | None:
        """Canonical province named by ``text``; a province name beats a city name."""
        key = _fold(text)
        for prefix in _PREFIXES:
            if key.startswith(prefix):
                key = key[len(prefix) :]
        for suffix in _SUFFIXES:
            key = key.removesuffix(suffix)
        place = self._places.get(key)
        if place is not None and place.kind == "province":
            return place.province
        found = self._provinces_in(self._province_pattern, key)
        if found is None:
            found = self._provinces_in(self._city_pattern, key)
        return found

    def _provinces_in(self, pattern: re.Pattern[str], key: str) -> str | None:
        """The single province the folded text names through ``pattern``; None if 0 or >1."""
        # Blockers such as "papua barat" are matched so they shadow "papua", but name nothing.
        places = (self._places.get(m.group()) for m in pattern.finditer(key))
        hits = {p.province for p in places if p is not None and p.province is not None}
        return next(iter(hits)) if len(hits) == 1 else None

    def mentions(self, text: str, language: Language) -> list[LocationMention]:
        """Place names used as locations in ``text``, in reading order."""
        if language not in ("en", "id"):
            raise ValueError(f"language must be 'en' or 'id', got {language!r}")
        found = []
        for match in self._text_pattern.finditer(text):
            mention = self._classify(text, match, language)
            if mention is not None:
                found.append(mention)
        return found

    def _classify(
        self, text: str, match: re.Match[str], language: Language
    ) -> LocationMention | None:
        key = _fold(match.group())
        place = self._places.get(key)
        if place is None or key in self._allowed:
            return None
        if place.kind != "province" and not match.group()[0].isupper():
            return None  # lowercase "batu", "malang", "padang rumput" are ordinary words
        if place.caps_only and not match.group().isupper():
            return None
        before = _tokens_before(text, match.start())
        if before and before[-1] in CULTURAL_HEAD_NOUNS:
            return None
        cue = _cue(before, text[match.end() :], language)
        if key in CUE_REQUIRED_NAMES and cue is None:
            return None
        return LocationMention(match.span(), match.group(), place.province, place.kind, cue)

    def own_leaks(self, text: str, language: Language, province: str) -> list[NameLeak]:
        """Terms in ``text`` that name ``province`` itself, in reading order.

        Its names, capital, cities and regencies (also inside cultural terms: "Rumoh Aceh",
        "Coto Makassar"), its peoples ("Batak wedding", "Acehnese", "suku Makassar") and its
        historic polities ("Majapahit", "the Gowa kings", "Kingdom of Bone").
        """
        pattern, terms = self._own_index(province)
        found = []
        for match in pattern.finditer(text):
            entry = terms.get(_fold(match.group()))
            if entry is not None and self._counts(text, match, entry, language):
                found.append(NameLeak(match.span(), match.group(), entry.kind, entry.term))
        return found

    def _counts(self, text: str, match: re.Match[str], entry: _Term, language: Language) -> bool:
        """Whether one match of an own-province term is a real reference (rules in own_leaks)."""
        surface = match.group()
        if entry.kind == "province":
            place = self._places.get(_fold(surface))
            return not (place and place.caps_only and not surface.isupper())
        if not surface[0].isupper():
            return False  # "batu", "malang", "using": ordinary words
        if entry.always:
            return True
        before = _tokens_before(text, match.start())
        head = bool(before) and (before[-1] in CULTURAL_HEAD_NOUNS or before[-1] in PEOPLE_HEADS_ID)
        following = _TOKEN.match(text[match.end() :].lstrip())
        after = following.group().lower() if following is not None else ""
        if _polity_phrase(before, after):
            return True  # "Kerajaan Gowa", "Kingdom of Bone", "the Gowa kings"
        tail = after in PEOPLE_TAILS_EN
        if entry.kind == "people":
            return head or tail
        cue = _cue(before, text[match.end() :], language)
        polity_tail = entry.kind == "polity" and tail  # "Sunda people" for the bare "Sunda"
        return head or polity_tail or not entry.cue_required or cue is not None

    def _own_index(self, province: str) -> tuple[re.Pattern[str], dict[str, _Term]]:
        """Per-province pattern and term table, built on first use."""
        if province not in self._own:
            terms = _own_terms(self._kb[province], self._peoples, self._polities)
            names = _alternation((_fold(n) for n in self._kb[province].names), folded=True)
            for polity in OTHER_POLITY_TERMS:
                if names.search(_fold(polity)):  # "Papua New Guinea" names Papua to a reader
                    terms[polity] = _Term("province", f"{polity} (contains {province})", True)
            exempt = [t for t in OTHER_POLITY_TERMS if t not in terms]
            surfaces = [*terms, *exempt]
            pattern = _alternation(surfaces, folded=False)
            table = {_fold(k): v for k, v in terms.items()}
            self._own[province] = (pattern, table)  # exempt keys stay out of the table
        return self._own[province]


def _own_terms(
    province: Any, peoples: Iterable[People], polities: Iterable[Polity] = ()
) -> dict[str, _Term]:
    """Surface → term for one province; polities win over places, people forms over both."""
    terms: dict[str, _Term] = {}
    places: list[tuple[str, LeakKind]] = [(r, "regency") for r in province.regencies]
    places += [(c, "city") for c in province.city_aliases]
    places += [(c, "capital" if c == province.capital else "city") for c in province.cities]
    places += [(n, "province") for n in province.names]
    for surface, kind in places:  # later kinds win: Semarang is a capital before a regency
        cue = _fold(surface) in CUE_REQUIRED_NAMES
        terms[surface] = _Term(kind, surface, False, cue)
    peoples = tuple(p for p in peoples if province.name in p.provinces)
    named = {s for p in peoples for s in (*p.forms, *p.bare)}
    for polity in (p for p in polities if p.province == province.name):
        label = f"{polity.term} ({polity.kind})"
        for surface in (b for b in polity.bare if b not in named):  # "Sunda" stays a people
            place = terms.get(surface)  # a place of the same name keeps its cue rule
            cue = place.cue_required if place is not None else True
            terms[surface] = _Term("polity", label, False, cue)
        for surface in polity.forms:
            terms[surface] = _Term("polity", label, True)
    for people in peoples:
        for surface in people.bare:
            if surface not in terms:
                terms[surface] = _Term("people", people.term, False)
        for surface in people.forms:
            terms[surface] = _Term("people", people.term, True)
    return terms


def _polity_phrase(before: list[str], after: str) -> bool:
    """Whether the words around a name make it a polity: "Kerajaan X", "Kingdom of X", "X kings"."""
    if before and before[-1] in POLITY_HEADS_ID:
        return True
    if len(before) >= 2 and before[-1] == "of" and before[-2] in POLITY_NOUNS_EN:
        return True
    return after in POLITY_NOUNS_EN


def _tokens_before(text: str, start: int) -> list[str]:
    """Lowercase words between the last clause break and ``start`` (only adjacent words count)."""
    window = _CLAUSE_BREAK.split(text[max(0, start - 60) : start])[-1]
    return [t.lower() for t in _TOKEN.findall(window)]


def _cue(before: list[str], after: str, language: Language) -> str | None:
    """The locative cue around a name: "in (the)", "province of", "di", "kota", or "'s"."""
    if language == "en":
        words = before[:-1] if before[-1:] == ["the"] else before
        if len(words) >= 2 and " ".join(words[-2:]) in EN_CUE_PAIRS:
            return " ".join(words[-2:])
        if words and words[-1] in EN_CUES:
            return words[-1]
        if after[:2] in ("'s", "’s"):
            return "'s"
        following = _TOKEN.match(after.lstrip())
        if following and after[:1].isspace() and following.group().lower() in EN_NEXT_CUES:
            return following.group().lower()
        return None
    return before[-1] if before and before[-1] in ID_CUES else None


@lru_cache(maxsize=1)
def default_gazetteer() -> Gazetteer:
    """The gazetteer over the default knowledge base, built on first use."""
    return Gazetteer(load_knowledge_base(), load_peoples(), load_polities())


@lru_cache(maxsize=65536)
def normalize_province(text: str) -> str | None:
    """Map free text to a canonical province name, or None if unknown or ambiguous.

    Accepts English and Indonesian names, abbreviations and spelling variants in any case or
    punctuation ("Sumut", "N. Sumatra", "Provinsi Jawa Barat", "South Borneo"). A city or regency
    alone ("Medan") maps to its province, but only when no province name is present.
    """
    return default_gazetteer().normalize(text)


def find_location_mentions(text: str, language: Language) -> list[LocationMention]:
    """Province, city and regency names used as locations (module docstring lists the rules)."""
    return default_gazetteer().mentions(text, language)


def find_own_province_leaks(text: str, language: Language, province: str) -> list[NameLeak]:
    """Names of ``province``, its places or its peoples in ``text`` (no cultural-term excuse)."""
    return default_gazetteer().own_leaks(text, language, province)


def has_location_leak(text: str, language: Language) -> bool:
    """Whether ``text`` names a place of the 11 provinces as a location (a first-hop shortcut)."""
    return bool(default_gazetteer().mentions(text, language))
