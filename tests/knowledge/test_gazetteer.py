"""Gazetteer: province normalisation and location-leak detection in both languages."""

from __future__ import annotations

import pytest

from cultureqa.knowledge.gazetteer import (
    CANONICAL_PROVINCES,
    Gazetteer,
    find_location_mentions,
    has_location_leak,
    normalize_province,
)
from cultureqa.knowledge.provinces import load_knowledge_base


def test_canonical_provinces_are_the_eleven_in_paper_order() -> None:
    assert CANONICAL_PROVINCES == (
        "Aceh", "North Sumatra", "West Sumatra", "West Java", "Central Java", "East Java", "Bali",
        "East Nusa Tenggara", "South Kalimantan", "South Sulawesi", "Papua",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Sumut", "North Sumatra"),
        ("SUMUT", "North Sumatra"),
        ("Sumatera Utara", "North Sumatra"),
        ("North Sumatera", "North Sumatra"),
        ("N. Sumatra", "North Sumatra"),
        ("Provinsi Sumatera Utara", "North Sumatra"),
        ("Sumbar", "West Sumatra"),
        ("sumatera barat", "West Sumatra"),
        ("Jabar", "West Java"),
        ("Provinsi Jawa Barat", "West Java"),
        ("the province of West Java", "West Java"),
        ("Jateng", "Central Java"),
        ("JAWA TENGAH", "Central Java"),
        ("Jatim", "East Java"),
        ("East Java Province", "East Java"),
        ("NTT", "East Nusa Tenggara"),
        ("Nusa Tenggara Timur", "East Nusa Tenggara"),
        ("Kalsel", "South Kalimantan"),
        ("Kalimantan Selatan", "South Kalimantan"),
        ("South Borneo", "South Kalimantan"),
        ("Sulsel", "South Sulawesi"),
        ("Sulawesi-Selatan", "South Sulawesi"),
        ("NAD", "Aceh"),
        ("Nanggroe Aceh Darussalam", "Aceh"),
        ("  bali. ", "Bali"),
        ("Irian Jaya", "Papua"),
        ("Papua Tengah", "Papua"),  # inside the pre-2022 province the KB describes
        ("Medan", "North Sumatra"),
        ("Kota Makassar", "South Sulawesi"),
        ("Solo", "Central Java"),
        ("Bandung, Jawa Barat", "West Java"),
        ("The answer is North Sumatra (Medan).", "North Sumatra"),
        ("Denpasar, Bali", "Bali"),
        # garbage, ambiguous or outside the eleven
        ("", None),
        ("???", None),
        ("banana", None),
        ("Java", None),
        ("Sumatra", None),
        ("Nusa Tenggara", None),
        ("Nusa Tenggara Barat", None),
        ("Papua Barat", None),
        ("West Papua", None),
        ("Papua New Guinea", None),
        ("DKI Jakarta", None),
        ("Aceh or Bali", None),
        ("Banjar", None),  # a city in West Java and a regency in South Kalimantan
    ],
)
def test_normalize_province(text: str, expected: str | None) -> None:
    assert normalize_province(text) == expected


def test_every_kb_name_and_alias_normalizes_to_its_province() -> None:
    for province in load_knowledge_base():
        for alias in province.names:
            assert normalize_province(alias) == province.name, alias


def test_province_name_beats_city_name() -> None:
    # "Padang" is in West Sumatra, but a province named outright wins.
    assert normalize_province("Padang, Sumatera Utara") == "North Sumatra"


FLAGGED = [
    ("en", "Which dance is performed in Aceh at weddings?", "Aceh", "Aceh", "in"),
    ("en", "A dish from Bali is served at the feast.", "Bali", "Bali", "from"),
    ("en", "People in Medan eat it for breakfast.", "Medan", "North Sumatra", "in"),
    ("en", "Bali's temples hold this ceremony.", "Bali", "Bali", "'s"),
    ("en", "In the province of West Java, what is worn?", "West Java", "West Java", "province of"),
    ("en", "Guests arrive in Solo for the festival.", "Solo", "Central Java", "in"),
    ("en", "The weaving is sold in Jayapura markets.", "Jayapura", "Papua", "in"),
    ("en", "Farmers of East Nusa Tenggara grow corn.", "East Nusa Tenggara", None, None),
    ("id", "Tarian ini ditampilkan di Provinsi Aceh.", "Provinsi Aceh", "Aceh", "di"),
    ("id", "Makanan ini berasal dari Bali.", "Bali", "Bali", "dari"),
    ("id", "Upacara itu digelar di Kota Makassar.", "Makassar", "South Sulawesi", "kota"),
    ("id", "Bagi masyarakat Aceh, kopi adalah teman bercerita.", "Aceh", "Aceh", None),
    ("id", "Rumah adat di Sumatera Utara memiliki atap melengkung.", "Sumatera Utara", None, "di"),
    ("id", "Warga di Padang menyantapnya saat Lebaran.", "Padang", "West Sumatra", "di"),
    ("id", "Kain ini dijual di NTT.", "NTT", "East Nusa Tenggara", "di"),
    ("id", "Festival itu digelar di Kabupaten Banyuwangi.", "Banyuwangi", "East Java", "kabupaten"),
]


@pytest.mark.parametrize(("language", "text", "name", "province", "cue"), FLAGGED)
def test_location_mentions_are_flagged(
    language: str, text: str, name: str, province: str | None, cue: str | None
) -> None:
    mentions = find_location_mentions(text, language)  # type: ignore[arg-type]
    assert [m.name for m in mentions] == [name]
    mention = mentions[0]
    assert text[mention.span[0] : mention.span[1]] == name
    if province is not None:
        assert mention.province == province
    assert mention.cue == cue
    assert has_location_leak(text, language)  # type: ignore[arg-type]


ALLOWED = [
    ("en", "Its roof resembles the Rumoh Aceh raised on pillars."),
    ("en", "Guests are served Soto Aceh and Mie Aceh."),
    ("en", "The bride wears Batik Aceh and sips Kopi Gayo."),
    ("en", "A bowl of Soto Banjar or Coto Makassar is typical."),
    ("en", "The Tari Saman is danced in rows."),
    ("en", "The Bali Aga keep their older customs."),
    ("en", "A Balinese dancer and Acehnese musicians perform."),
    ("en", "Which province shares a land border with Papua New Guinea?"),
    ("en", "Coal barges cross the Makassar Strait."),
    ("en", "It is a solo dance performed at a harvest, not a batu ritual."),
    ("id", "Rumoh Aceh dibangun di atas tiang-tiang bulat."),
    ("id", "Soto Aceh dan Batik Aceh dibawa sebagai oleh-oleh."),
    ("id", "Penjual Kain Sasirangan juga menjual Soto Banjar."),
    ("id", "Para penari Tari Saman duduk berbanjar."),
    ("id", "Suku Bali Aga masih memakai kain geringsing."),
    ("id", "Coto Makassar disantap bersama ketupat."),
    ("id", "Nasi Padang dan Sate Padang terkenal di seluruh negeri."),
    ("id", "Malang nasibnya, ia kehilangan batu akiknya."),
    ("id", "Medan perang itu sunyi. Padang rumput menghijau. Batu nisan berjajar."),
    ("en", "Solo performers open the show; Bone carvings follow."),
    ("id", "Bahasa Bali memiliki tingkatan tutur."),
    ("id", "Pertunjukan Reog Ponorogo memakai topeng dadak merak."),
]


@pytest.mark.parametrize(("language", "text"), ALLOWED)
def test_cultural_terms_are_allowed(language: str, text: str) -> None:
    assert find_location_mentions(text, language) == []  # type: ignore[arg-type]
    assert not has_location_leak(text, language)  # type: ignore[arg-type]


def test_cue_required_names_need_a_cue() -> None:
    assert not has_location_leak("Batak Karo and the Nias people dance.", "en")
    assert has_location_leak("The festival is held in Karo every year.", "en")
    assert not has_location_leak("Teluk Bone dan Kesultanan Gowa.", "id")
    assert has_location_leak("Ia tinggal di Bone.", "id")


def test_ambiguous_city_is_flagged_without_a_province() -> None:
    (mention,) = find_location_mentions("Soto ini dijual di Kota Banjar.", "id")
    assert mention.name == "Banjar"
    assert mention.province is None
    assert mention.kind == "city"


def test_several_mentions_keep_reading_order_and_kinds() -> None:
    text = "From Bandung, in West Java, to Gianyar."
    mentions = find_location_mentions(text, "en")
    assert [(m.name, m.kind) for m in mentions] == [
        ("Bandung", "city"),
        ("West Java", "province"),
        ("Gianyar", "regency"),
    ]


def test_kb_clue_texts_are_leak_free() -> None:
    # Generators use descriptions, facts and event texts verbatim as indirect clues.
    for province in load_knowledge_base():
        texts = [
            (i.description_en, i.description_id)
            for v in province.cultural_items.values()
            for i in v
        ]
        texts += [(g.fact_en, g.fact_id) for g in province.geography]
        texts += [(e.text_en, e.text_id) for e in province.events]
        for en, id_ in texts:
            assert find_location_mentions(en, "en") == [], (province.name, en)
            assert find_location_mentions(id_, "id") == [], (province.name, id_)


def test_gazetteer_can_be_built_from_any_kb_and_rejects_unknown_language() -> None:
    gazetteer = Gazetteer(load_knowledge_base())
    assert gazetteer.normalize("Sulsel") == "South Sulawesi"
    with pytest.raises(ValueError, match="language"):
        gazetteer.mentions("in Aceh", "fr")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "language", "province", "named"),
    [
        ("Think of the province home to Rumoh Aceh.", "en", "Aceh", ["Aceh"]),
        ("At a Batak customary wedding, the parents", "en", "North Sumatra", ["Batak"]),
        ("Coto Makassar is served for breakfast", "en", "South Sulawesi", ["Makassar"]),
        ("Lumpia Semarang dijual di pasar", "id", "Central Java", ["Semarang"]),
        ("suku Makassar menyebutnya", "id", "South Sulawesi", ["Makassar"]),
        ("masyarakat adat Sunda menggelar", "id", "West Java", ["Sunda"]),
        ("the Kerawang Gayo embroidery", "en", "Aceh", ["Gayo"]),
        ("the Tengger people make offerings", "en", "East Java", ["Tengger"]),
        ("a Baduy village", "en", "West Java", ["Baduy"]),
        ("Sumba people weave hinggi", "en", "East Nusa Tenggara", ["Sumba"]),
        ("orang Jawa menyebutnya", "id", "Central Java", ["Jawa"]),
        ("orang Jawa menyebutnya", "id", "East Java", ["Jawa"]),  # shared: leaks for both
        ("a Dayak Meratus longhouse", "en", "South Kalimantan", ["Dayak Meratus"]),
        ("a Banjarbaru office", "en", "South Kalimantan", ["Banjarbaru"]),  # capital since 2022
        ("a Banjarmasin market", "en", "South Kalimantan", ["Banjarmasin"]),  # former capital
    ],
)
def test_own_province_names_places_and_peoples_are_leaks(
    text: str, language: str, province: str, named: list[str]
) -> None:
    from cultureqa.knowledge.gazetteer import find_own_province_leaks

    assert [x.name for x in find_own_province_leaks(text, language, province)] == named  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "language", "province"),
    [
        ("the province bordering Papua New Guinea", "en", "Aceh"),  # another country
        ("the province where you find Lake Toba", "en", "North Sumatra"),  # a lake, not Toba people
        ("the island of Sumba, east of the strait", "en", "East Nusa Tenggara"),  # geography
        ("Pulau Jawa dan Laut Jawa", "id", "Central Java"),  # the island, not its people
        ("a Batak wedding", "en", "West Java"),  # another province's people: not its own leak
        ("Malay songs at the harbour", "en", "South Kalimantan"),  # Malay names no one province
        ("a malang fate on the padang", "en", "East Java"),  # ordinary lowercase words
    ],
)
def test_geography_and_other_provinces_are_not_own_province_leaks(
    text: str, language: str, province: str
) -> None:
    from cultureqa.knowledge.gazetteer import find_own_province_leaks

    assert find_own_province_leaks(text, language, province) == []  # type: ignore[arg-type]


def test_every_people_entry_is_sourced_and_points_at_benchmark_provinces() -> None:
    from cultureqa.knowledge.peoples import load_peoples
    from cultureqa.knowledge.provinces import CANONICAL_PROVINCES

    peoples = load_peoples()
    covered = {p for entry in peoples for p in entry.provinces}
    assert covered == set(CANONICAL_PROVINCES)
    assert all(entry.source for entry in peoples)
    javanese = next(e for e in peoples if e.term == "Javanese")
    assert set(javanese.provinces) == {"Central Java", "East Java"}


def test_a_people_entry_without_a_source_is_a_load_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cultureqa.knowledge.peoples import load_peoples
    from cultureqa.knowledge.provinces import KnowledgeBaseError

    path = tmp_path / "peoples.yaml"
    path.write_text("peoples:\n  - {term: Gayo, provinces: [Aceh], forms: [Gayo]}\n")
    with pytest.raises(KnowledgeBaseError, match=r"peoples\[0\]: key 'source'"):
        load_peoples(path)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("the province bordering Papua New Guinea", "en"),
        ("provinsi yang berbatasan dengan Papua Nugini", "id"),
        ("east of West Papua", "en"),
    ],
)
def test_a_polity_name_holding_the_provinces_own_name_is_a_leak(text: str, language: str) -> None:
    """Issue 22: a reader sees "Papua" in "Papua New Guinea"; for Papua that gives it away."""
    from cultureqa.knowledge.gazetteer import find_own_province_leaks

    leaks = find_own_province_leaks(text, language, "Papua")  # type: ignore[arg-type]
    assert [x.kind for x in leaks] == ["province"] and "contains Papua" in leaks[0].term
    assert find_own_province_leaks(text, language, "East Nusa Tenggara") == []  # type: ignore[arg-type]
