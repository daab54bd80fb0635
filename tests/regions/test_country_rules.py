"""The declared rules the real country tables need (docs/twohop-engine.md §4).

Each rule plants its case: a city that is an English word (``Nice``), a name in another language
that is an English word, the source's frame term that is also a country's language (``Chinese``),
plurals and hyphenated compounds of a currency, an indefinite replacement after a determiner, a
clue whose own words name its target, and an intersection of named facts of two kinds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cultureqa.regions.config import RegionSet
from cultureqa.regions.generation.clues import CLUE_LEAK_REASON, Clues
from cultureqa.regions.generation.tables import Region, Term, load_knowledge
from cultureqa.regions.judges.checks import (
    MERGED_REASON,
    PEOPLE_SENSE_REASON,
    SCRUB_LIMIT_REASON,
    CheckConfig,
    SetRules,
    problems,
)
from cultureqa.regions.scrub import frame_terms, leaks, scrub
from cultureqa.regions.sources.source import _region_index
from tests.regions.invented import with_named_facts, write_invented

FRANCE = Region(
    "FRA",
    {"en": "France"},
    (
        Term("France", "name", "this country", "en"),
        Term("Nice", "city", "a city there", "und"),
        Term("Pain", "name", "this country", "na"),  # a name in another language
        Term("euro", "currency", "the local currency", "en", "", "units of the local currency",
             "local-currency"),
        Term("French", "language", "the local language", "en", "", None, "local-language"),
        Term("pétanque", "practice", "a local custom", "und", "", "local customs"),
        Term("Chinese", "frame", None, "en"),
    ),
    0,
)  # fmt: skip


def test_a_city_that_is_an_english_word_matches_only_as_written() -> None:
    out = scrub("It was a nice dinner near Nice.", FRANCE, "en")
    assert out.text == "It was a nice dinner near a city there."
    assert [r["term"] for r in out.replaced] == ["Nice"]
    assert leaks(["a nice dinner"], FRANCE, language="en") == []
    assert leaks(["dinner in Nice"], FRANCE, language="en") == ["Nice (city)"]


def test_a_name_in_another_language_is_no_term_of_an_english_text() -> None:
    assert scrub("Pain is part of the story.", FRANCE, "en").text == "Pain is part of the story."
    assert leaks(["Pain is part of it"], FRANCE, language="en") == []
    assert leaks(["Pain is part of it"], FRANCE, language=None) == ["Pain (name)"]


def test_a_frame_term_stays_is_no_leak_and_is_recorded() -> None:
    text = "Li, a Chinese student in France, meets a host."
    out = scrub(text, FRANCE, "en")
    assert out.text == "Li, a Chinese student in this country, meets a host."
    assert leaks([out.text], FRANCE, language="en") == []
    assert frame_terms([out.text], FRANCE, "en") == ["Chinese"]


def test_plural_and_compound_forms_take_their_declared_replacement() -> None:
    out = scrub("She paid several euros for a 10-euro ticket.", FRANCE, "en")
    assert (
        out.text == "She paid several units of the local currency for a 10-local-currency ticket."
    )
    out = scrub("Her French-speaking friends played pétanques.", FRANCE, "en")
    assert out.text == "Her local-language-speaking friends played local customs."
    # a kind without a declared plural keeps its plural, and the leak check still sees it
    bare = Region("FRA", {"en": "France"}, (Term("baguette", "practice", "a local custom"),), 0)
    kept = scrub("They bought baguettes.", bare, "en").text
    assert kept == "They bought baguettes." and leaks([kept], bare) == ["baguette (practice)"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("They played their pétanque game.", "They played their local custom game."),
        ("The pétanque court was full.", "The local custom court was full."),
        ("She learned a pétanque rule.", "She learned a local custom rule."),
    ],
)
def test_an_indefinite_replacement_after_a_determiner_drops_its_article(
    text: str, expected: str
) -> None:
    out = scrub(text, FRANCE, "en")
    assert out.text == expected
    assert "their a" not in out.text.casefold() and "the a " not in out.text.casefold()


@pytest.fixture
def named(tmp_path: Path) -> tuple[RegionSet, Path]:
    raw = with_named_facts(tmp_path, write_invented(tmp_path))
    raw["clue_types"] = ["intersection", "geographical", "entity", "temporal"]
    return RegionSet.from_params(raw, tmp_path), tmp_path


def _clues(named: tuple[RegionSet, Path]) -> tuple[Clues, Any]:
    rs, root = named
    kb = load_knowledge(rs, root, "en")
    clues = Clues(rs, kb)
    return clues, clues.build(sorted(kb.regions))


def test_a_clue_naming_its_own_region_is_refused_with_its_reason(named) -> None:
    clues, book = _clues(named)
    for (target, _), found in book.clues.items():
        for clue in found:  # no kept clue names a term of its region (language, currency allowed)
            region = clues.kb.regions[target]
            assert leaks([clue.text["en"]], region, clues.rs.clue_may_name, "en") == []
    # plant: a region whose own name is one of its currency's words
    target = next(t for (t, c), f in book.clues.items() if c == "entity" and f)
    clue = book.get(target, "entity")[0]
    region = clues.kb.regions[target]
    planted = Region(region.id, region.names, (*region.terms, Term(clue.text["en"].split()[-1],
                     "name", "this land")), region.row)  # fmt: skip
    clues.kb.regions[target] = planted
    again = clues.build([target])
    assert clue.key not in {c.key for c in again.get(target, "entity")}
    assert again.refused[(target, "entity", CLUE_LEAK_REASON)] >= 1


def test_an_intersection_of_named_facts_spans_two_kinds_each_needed(named) -> None:
    clues, book = _clues(named)
    fact_made = [c for f in book.clues.values() for c in f if c.evidence.get("named_facts")]
    assert fact_made, "the invented lands admit intersections of named facts"
    for clue in fact_made:
        kinds = {clues.rs.category(c["category"]).clue_type for c in clue.conditions}
        assert len(kinds - {"geographical"}) >= 2, clue.text
        assert clue.evidence["holders"] == [clue.target]
        # every fact is needed: dropping any one admits another region
        from cultureqa.regions.generation.conditions import decide

        for i in range(len(clue.conditions)):
            rest = list(clue.conditions[:i] + clue.conditions[i + 1 :])
            assert decide(rest, clues.kb, clues.complete).holders != (clue.target,)


def test_the_rule_judge_removes_a_plural_the_scrub_left(named) -> None:
    clues, book = _clues(named)
    target, ctype = next(k for k, f in book.clues.items() if f and k[1] == "entity")
    clue = book.get(target, ctype)[0]
    region = clues.kb.regions[target]
    term = next(t for t in region.terms if t.kind == "demonym")
    item = {
        "region": target, "language": "en", "clue": clue.text["en"],
        "narrative": f"This scenario takes place in {clue.text['en']}. Two {term.text}es met.",
        "question": "What did the two people most likely do next?",
        "clue_evidence": json.dumps(clue.evidence),
        **{f"type_{x}": f"option {x}" for x in "ABCDEF"},
    }  # fmt: skip
    found = problems(item, clues.kb, clues.complete, CheckConfig(), SetRules())
    assert ("own-region leak", f"{term.text} (demonym)") in found


def test_an_item_that_lost_too_many_of_its_regions_customs_is_removed(named) -> None:
    clues, book = _clues(named)
    target = next(t for (t, c), f in book.clues.items() if c == "entity" and f)
    clue = book.get(target, "entity")[0]
    lost = [
        {"term": t, "kind": "practice", "replacement": "a local custom"}
        for t in ("haka", "hongi", "marae")
    ] + [{"term": "Tharn", "kind": "people", "replacement": "local people"}]
    item = {
        "region": target, "language": "en", "clue": clue.text["en"],
        "narrative": f"This scenario takes place in {clue.text['en']}. They met at the fair.",
        "question": "What did the two people most likely do next?",
        "clue_evidence": json.dumps(clue.evidence), "replaced": json.dumps(lost),
        **{f"type_{x}": f"option {x}" for x in "ABCDEF"},
    }  # fmt: skip
    limit = SetRules(scrub_limit=(("practice", "people"), 3))
    found = dict(problems(item, clues.kb, clues.complete, CheckConfig(), limit))
    assert found[SCRUB_LIMIT_REASON] == "4 > 3: Tharn; haka; hongi; marae"
    item["replaced"] = json.dumps(lost[:3])
    assert SCRUB_LIMIT_REASON not in dict(
        problems(item, clues.kb, clues.complete, CheckConfig(), limit)
    )


def test_two_terms_merged_into_one_coordinated_replacement_remove_the_item(named) -> None:
    clues, book = _clues(named)
    target = next(t for (t, c), f in book.clues.items() if c == "entity" and f)
    clue = book.get(target, "entity")[0]
    lost = [
        {"term": "English", "kind": "language", "replacement": "the local language"},
        {"term": "French", "kind": "language", "replacement": "the local language"},
    ]
    item = {
        "region": target, "language": "en", "clue": clue.text["en"],
        "narrative": f"This scenario takes place in {clue.text['en']}. Labels must be in both "
                     "the local language and the local language.",
        "question": "Why must the labels be printed twice over?",
        "clue_evidence": json.dumps(clue.evidence), "replaced": json.dumps(lost),
        **{f"type_{x}": f"option {x}" for x in "ABCDEF"},
    }  # fmt: skip
    found = dict(problems(item, clues.kb, clues.complete, CheckConfig(), SetRules()))
    assert found[MERGED_REASON].split("; ") == [
        "the local language and the local language",
        "English, French → one replacement",
    ]
    item["replaced"] = json.dumps(lost[:1])  # one term replaced twice is no merge
    assert MERGED_REASON not in dict(problems(item, clues.kb, clues.complete, CheckConfig()))
    # two languages contrasted without coordination: still no contrast left
    item["replaced"] = json.dumps(lost)
    item["narrative"] = (
        f"This scenario takes place in {clue.text['en']}. Students chat in the local language "
        "but write their essays in the local language."
    )
    found = dict(problems(item, clues.kb, clues.complete, CheckConfig(), SetRules()))
    assert found[MERGED_REASON] == "English, French → one replacement"
    # two practices under one kind's words are no contrast of languages
    customs = [
        {"term": "haka", "kind": "practice", "replacement": "a local custom"},
        {"term": "hongi", "kind": "practice", "replacement": "a local custom"},
    ]
    item["replaced"] = json.dumps(customs)
    item["narrative"] = f"This scenario takes place in {clue.text['en']}. They sing a local custom."
    assert MERGED_REASON not in dict(problems(item, clues.kb, clues.complete, CheckConfig()))


def test_a_name_two_regions_share_does_not_match_a_source_country() -> None:
    mex = Region("MEX", {"en": "Mexico"}, (Term("Mexico", "name", "this country", "en"),), 0)
    mys = Region(
        "MYS",
        {"en": "Malaysia"},
        (Term("Malaysia", "name", "this country", "en"), Term("Mexico", "name", None, "gn")),
        1,
    )
    index = _region_index({"MYS": mys, "MEX": mex})
    assert index["mexico"] == "MEX" and index["malaysia"] == "MYS"
    lone = Region("MYS", {"en": "Malaysia"}, (Term("Malaya", "alias", None, "en"),), 1)
    assert _region_index({"MYS": lone, "MEX": mex})["malaya"] == "MYS"


def test_a_language_name_standing_for_a_people_removes_the_item(named) -> None:
    clues, book = _clues(named)
    target = next(t for (t, c), f in book.clues.items() if c == "entity" and f)
    clue = book.get(target, "entity")[0]
    lost = [{"term": "Spanish", "kind": "language", "matched": "the Spanish",
             "replacement": "the local language"}]  # fmt: skip
    item = {
        "region": target, "language": "en", "clue": clue.text["en"],
        "narrative": f"This scenario takes place in {clue.text['en']}. She wonders why the "
                     "local language built on top of the old walls.",
        "question": "Why were the churches built on top of the old walls?",
        "clue_evidence": json.dumps(clue.evidence), "replaced": json.dumps(lost),
        **{f"type_{x}": f"option {x}" for x in "ABCDEF"},
    }  # fmt: skip
    found = dict(problems(item, clues.kb, clues.complete, CheckConfig(), SetRules()))
    assert found[PEOPLE_SENSE_REASON] == "the Spanish → the local language built"
    # the language sense: a language noun follows, or the term stood without "the"
    item["narrative"] = (
        f"This scenario takes place in {clue.text['en']}. She learns the local language word."
    )
    assert PEOPLE_SENSE_REASON not in dict(problems(item, clues.kb, clues.complete, CheckConfig()))
    lost[0]["matched"] = "Spanish"
    item["replaced"] = json.dumps(lost)
    item["narrative"] = (
        f"This scenario takes place in {clue.text['en']}. She speaks the local language well."
    )
    assert PEOPLE_SENSE_REASON not in dict(problems(item, clues.kb, clues.complete, CheckConfig()))
