"""Rules that keep the UN members' scenarios readable after the scrub (docs/region-sets.md §6).

Each rule plants its case: the scrub limit counts distinct terms (a practice named seven times is
one term) and leaves out terms the leak table describes; a description from the leak table
replaces its term (and its plural); a loanword in another language is a term of an English text
while a name in another language is not; a source question the set excludes is removed with its
stated reason, and a stale or unexplained exclusion stops the build; clue phrases are checked by
parsing (a comparison's possessive of a plural name, a membership after "the country", a second
relative clause).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from nltk import CFG, ChartParser

from cultureqa.core.io import SourceError
from cultureqa.regions.config import RegionColumns, RegionSet
from cultureqa.regions.generation.clues import Clues, possessive
from cultureqa.regions.generation.tables import Region, Term, load_knowledge, load_leak_table
from cultureqa.regions.judges.checks import (
    EXCLUDED_REASON,
    SCRUB_LIMIT_REASON,
    CheckConfig,
    SetRules,
    exclusions,
    problems,
)
from cultureqa.regions.scrub import leaks, scrub
from tests.regions.invented import with_named_facts, write_invented

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def named(tmp_path: Path) -> tuple[RegionSet, Path]:
    raw = with_named_facts(tmp_path, write_invented(tmp_path))
    raw["clue_types"] = ["intersection", "geographical", "entity", "temporal"]
    return RegionSet.from_params(raw, tmp_path), tmp_path


def _item(named: tuple[RegionSet, Path], lost: list[dict[str, str]]) -> tuple[dict[str, Any], Any]:
    rs, root = named
    kb = load_knowledge(rs, root, "en")
    clues = Clues(rs, kb)
    book = clues.build(sorted(kb.regions))
    target = next(t for (t, c), f in book.clues.items() if c == "entity" and f)
    clue = book.get(target, "entity")[0]
    item = {
        "source_id": "CASE-900", "region": target, "language": "en", "clue": clue.text["en"],
        "narrative": f"This scenario takes place in {clue.text['en']}. They met at the fair.",
        "question": "What did the two people most likely do next?",
        "clue_evidence": json.dumps(clue.evidence), "replaced": json.dumps(lost),
        **{f"type_{x}": f"option {x}" for x in "ABCDEF"},
    }  # fmt: skip
    return item, clues


def _lost(term: str, kind: str = "practice", described: str = "") -> dict[str, str]:
    return {"term": term, "kind": kind, "replacement": "a local custom", "described": described}


def test_the_scrub_limit_counts_each_term_once(named) -> None:
    item, clues = _item(named, [_lost("sauna")] * 7)
    limit = SetRules(scrub_limit=(("practice", "people"), 4))
    assert SCRUB_LIMIT_REASON not in dict(
        problems(item, clues.kb, clues.complete, CheckConfig(), limit)
    )
    # plant: five different customs lost to generic words
    item["replaced"] = json.dumps([_lost(t) for t in ("gho", "kira", "kabney", "dzong", "tapu")])
    found = dict(problems(item, clues.kb, clues.complete, CheckConfig(), limit))
    assert found[SCRUB_LIMIT_REASON] == "5 > 4: dzong; gho; kabney; kira; tapu"


def test_a_described_term_does_not_count_towards_the_scrub_limit(named) -> None:
    lost = [_lost(t) for t in ("gho", "kira", "kabney", "dzong")] + [_lost("sulu", described="yes")]
    item, clues = _item(named, lost)
    limit = SetRules(scrub_limit=(("practice",), 4))
    assert SCRUB_LIMIT_REASON not in dict(
        problems(item, clues.kb, clues.complete, CheckConfig(), limit)
    )
    item["replaced"] = json.dumps([*lost, _lost("tapu")])
    assert SCRUB_LIMIT_REASON in dict(
        problems(item, clues.kb, clues.complete, CheckConfig(), limit)
    )


def test_a_leak_table_description_replaces_its_term_and_plural(tmp_path: Path) -> None:
    table = tmp_path / "leak.csv"
    table.write_text(
        "iso3,term,kind,lang,source,source_version,replacement\n"
        "VEL,dzong,landmark,und,curated,2026,fortress-monastery\n"
        "VEL,hongi,practice,und,curated,2026,nose-pressing greeting\n"
        "VEL,tapu,practice,und,curated,2026,\n",
        encoding="utf-8",
    )
    columns = RegionColumns(tmp_path / "r.csv", "id", {"en": "name"}, "", "", "", "", table)
    words = {"landmark": "a landmark there", "practice": "a local custom"}
    terms = {t.text: t for t in load_leak_table(columns, tmp_path, words, {"VEL"})["VEL"]}
    assert terms["dzong"].replacement == "fortress-monastery" and terms["dzong"].described
    assert terms["tapu"].replacement == "a local custom" and not terms["tapu"].described
    region = Region("VEL", {"en": "Veloria"}, tuple(terms.values()), 0)
    out = scrub("After the hongi they walked past two dzongs; the dzong is tapu.", region)
    assert out.text == (
        "After the nose-pressing greeting they walked past two fortress-monasteries; "
        "the fortress-monastery is a local custom."
    )
    assert {r["term"]: r["described"] for r in out.replaced} == {
        "dzong": "yes", "hongi": "yes", "tapu": ""
    }  # fmt: skip
    assert leaks([out.text], region, language="en") == []


def test_the_committed_descriptions_reach_the_leak_table() -> None:
    import csv

    with (ROOT / "data/knowledge/countries/leak_terms.csv").open(encoding="utf-8") as handle:
        rows = {(r["iso3"], r["term"]): r["replacement"] for r in csv.DictReader(handle)}
    assert rows[("FIN", "sauna")] == "steam bath"
    assert rows[("KEN", "M-Pesa")] == "mobile money"
    assert rows[("FIN", "Helsinki")] == ""  # a term without a description keeps its kind's words


GERMANY = Region(
    "DEU",
    {"en": "Germany"},
    (
        Term("Germany", "name", "this country", "en"),
        Term("Pfand", "institution", "a local institution", "de"),
        Term("Rand", "name", "this country", "xx"),  # a catalogue name that is an English word
    ),
    0,
)


def test_a_loanword_in_another_language_is_a_term_of_an_english_text() -> None:
    out = scrub("Bottles carry a legal deposit (Pfand) at the Rand of town.", GERMANY, "en")
    assert out.text == "Bottles carry a legal deposit (a local institution) at the Rand of town."
    assert leaks(["They returned the Pfand bottles."], GERMANY, language="en") == [
        "Pfand (institution)"
    ]
    assert leaks(["At the Rand of town."], GERMANY, language="en") == []


def test_the_independent_leak_check_also_sees_loanwords() -> None:
    spec = importlib.util.spec_from_file_location("country_leaks", ROOT / "bench/country_leaks.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    terms = [("Pfand", "institution", "de"), ("Rand", "name", "xx"), ("Germany", "name", "en")]
    assert bench.in_language(terms, "en") == [("Pfand", "institution"), ("Germany", "name")]


def test_an_excluded_source_question_is_removed_with_its_reason(named) -> None:
    item, clues = _item(named, [])
    rules = SetRules(excluded={"CASE-900": "the question is about the country's own word"})
    found = dict(problems(item, clues.kb, clues.complete, CheckConfig(), rules))
    assert found[EXCLUDED_REASON] == "the question is about the country's own word"
    assert EXCLUDED_REASON not in dict(problems(item, clues.kb, clues.complete, CheckConfig()))


def test_a_stale_or_unexplained_exclusion_is_an_error() -> None:
    known = {"CASE-001", "CASE-002"}
    assert exclusions("s", {"exclude": {"CASE-001": "own word"}}, known) == {"CASE-001": "own word"}
    assert exclusions("s", {}, known) == {}
    with pytest.raises(SourceError, match="'CASE-099' is no source question"):
        exclusions("s", {"exclude": {"CASE-099": "own word"}}, known)
    with pytest.raises(SourceError, match="'CASE-002' has no reason"):
        exclusions("s", {"exclude": {"CASE-002": " "}}, known)


# -- clue phrases, checked by parsing ---------------------------------------------------------

CLUES = CFG.fromstring("""
S -> 'the' 'country' Mods
Mods -> Mod | Mod 'and' Rel | Mod 'and' Rel 'and' Rel | Rel | Rel 'and' Rel
Mod -> 'bordering' Name | 'in' 'Europe'
Rel -> 'that' 'is' 'a' 'member' 'of' 'the' 'G7' | 'that' 'joined' 'the' 'UN' 'in' 'Year'
Rel -> 'whose' 'official' 'language' 'is' 'English' | 'whose' 'GNI' Cmp
Cmp -> 'was' 'higher' 'than' Poss 'but' 'lower' 'than' Poss
Name -> 'the' 'Netherlands' | 'the' 'United' 'States' | 'Austria'
Poss -> 'the' 'Netherlands' "'" | 'the' 'United' 'States' "'" | 'Austria' "'s"
""")
PARSER = ChartParser(CLUES)


def clue_parses(text: str) -> bool:
    words = text.replace("'s", " 's").replace("s'", "s '").replace(" (continent)", "").split()
    words = ["Year" if w.isdigit() else w for w in words]
    try:
        return any(True for _ in PARSER.parse(words))
    except ValueError:  # a word the grammar does not know
        return False


def test_the_clue_grammar_rejects_the_old_forms() -> None:
    assert not clue_parses("the country a member of the G7 and that joined the UN in 1955")
    assert not clue_parses("the country whose GNI was higher than United States's but lower "
                           "than Austria's")  # fmt: skip
    assert not clue_parses("the country bordering Netherlands")
    assert not clue_parses(
        "the country in Europe and whose official language is English whose "
        "GNI was higher than Austria's but lower than the Netherlands'"
    )
    assert clue_parses("the country bordering the Netherlands and that is a member of the G7")


def _un_members() -> Clues:
    rs = RegionSet.selected(_params(), ROOT)
    return Clues(rs, load_knowledge(rs, ROOT, "en"))


def _params() -> dict[str, Any]:
    from cultureqa.core.config import load_params

    params = load_params(ROOT / "params.yaml")
    params["twohop"]["region_set"] = "un_members"
    return params


def test_the_un_members_clue_words_parse() -> None:
    clues = _un_members()
    border = {"kind": "category", "category": "neighbour", "value": "NLD"}
    g7 = {"kind": "category", "category": "membership", "value": "G7"}
    joined = {"kind": "category", "category": "un_admission_year", "value": "1955"}
    english = {"kind": "category", "category": "official_language", "value": "English"}
    europe = {"kind": "category", "category": "continent", "value": "Europe"}
    between = {"kind": "between", "indicator": "gnipc", "low_region": "USA", "high_region": "AUT"}
    assert possessive("the United States") == "the United States'"
    assert possessive("Austria") == "Austria's"
    texts = [
        clues.render("entity", [border, g7], "en"),
        clues.render("temporal", [g7, joined], "en"),
        clues.render("comparison", [europe, english, between], "en"),
    ]
    assert texts[0] == "the country bordering the Netherlands and that is a member of the G7"
    for text in texts:  # the indicator's label is long: the grammar reads it as 'GNI'
        short = text.replace("the United Nations", "the UN")
        short = short.replace("GNI per capita (2017 PPP $; UNDP) in 2022", "GNI")
        assert clue_parses(short), text


MEXICO = Region(
    "MEX",
    {"en": "Mexico"},
    (
        Term("Mexican", "demonym", "local", "en"),
        Term("French", "demonym", "local", "en"),
        Term("Spanish", "language", "the local language", "en"),
    ),
    0,
)
SENTENCES = CFG.fromstring("""
S -> PP NP VP | NP VP
PP -> 'in' NP
NP -> Det Adj N | Det N | 'locals' | Det 'locals'
VP -> 'is' Adj | 'are' Adj | 'argues'
Det -> 'the' | 'her'
Adj -> 'local' | 'flexible' | 'argumentative'
N -> 'language' | 'word' | 'family'
""")


def sentence_parses(text: str) -> bool:
    words = text.rstrip(".").lower().split()
    try:
        return any(True for _ in ChartParser(SENTENCES).parse(words))
    except ValueError:
        return False


@pytest.mark.parametrize(
    ("text", "blind"),
    [
        (
            "In Mexican Spanish the word is flexible.",
            "in local the local language the word is flexible",
        ),
        ("The French are argumentative.", "the local are argumentative"),
        ("Her French family argues.", None),
        # the plural a demonym already has takes no second one ("Localss are")
        ("Mexicans are argumentative.", "localss are argumentative"),
    ],
)
def test_a_demonym_as_a_noun_and_a_language_variety_read_as_grammar(
    text: str, blind: str | None
) -> None:
    if blind is not None:
        assert not sentence_parses(blind)
    out = scrub(text, MEXICO, "en")
    assert sentence_parses(out.text), out.text
    assert leaks([out.text], MEXICO, language="en") == []
    if "Spanish" in text:
        assert "variety merged" in {r["repair"] for r in out.replaced}


HONDURAS = Region(
    "HND",
    {"en": "Honduras"},
    (
        Term("huipil", "practice", "embroidered blouse", "und", described=True),
        Term("catracho", "demonym", "local", "es"),
    ),
    0,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the source glosses its own word, and the replacement is the gloss
        (
            "She wears a huipil (embroidered blouse) at the market.",
            "She wears an embroidered blouse at the market.",
        ),
        (
            "She wears an embroidered blouse (huipil) at the market.",
            "She wears an embroidered blouse at the market.",
        ),
        (
            "Then I am your huipil (embroidered blouse), she says.",
            "Then I am your embroidered blouse, she says.",
        ),
        # a gloss that says more than the replacement stays
        (
            "She wears a huipil (a blouse woven on a backstrap loom).",
            "She wears an embroidered blouse (a blouse woven on a backstrap loom).",
        ),
    ],
)
def test_a_gloss_repeating_its_replacement_is_dropped(text: str, expected: str) -> None:
    out = scrub(text, HONDURAS, "en")
    assert out.text == expected
    repeated = any("repeated gloss dropped" in r["repair"] for r in out.replaced)
    assert repeated == ("loom" not in text)


INDIA = Region(
    "IND",
    {"en": "India"},
    (
        Term("Punjab", "region", "a region there", "und"),
        Term("Amritsar", "city", "a city there", "und"),
    ),
    0,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A tradition of Punjab's farmers.", "A tradition of a local region's farmers."),
        ("Amritsar's temple feeds everyone.", "A local city's temple feeds everyone."),
        ("She lives in Amritsar.", "She lives in a city there."),  # no possessive: as it was
    ],
)
def test_a_place_phrase_before_a_possessive_reads_as_grammar(text: str, expected: str) -> None:
    out = scrub(text, INDIA, "en")
    assert out.text == expected
    assert "there's" not in out.text
    assert leaks([out.text], INDIA, language="en") == []
