"""Replacements that read as grammar (docs/twohop-engine.md §4), tested by parsing the result.

A small context-free grammar of the planted sentences (nltk's chart parser) accepts the scrubbed
sentences and rejects the broken forms a blind replacement gives ("in central this land", "an
local cook"), so the test can fail. A replacement the slot repair cannot fit (a set whose demonym
replacement is a whole phrase: "her this land host") is removed with its reason, counted in the
card.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nltk import CFG, ChartParser

from cultureqa.regions.config import RegionSet
from cultureqa.regions.generation.tables import Region, Term
from cultureqa.regions.judges.checks import GRAMMAR_REASON, CheckConfig
from cultureqa.regions.pipeline import card_markdown, run_build
from cultureqa.regions.scrub import scrub
from tests.regions.invented import write_invented

GRAMMAR = CFG.fromstring("""
S -> NP VP
NP -> 'Mira' | Det Nom | 'a' NomC | 'an' NomV | Det Nom PP | 'this' 'land'
Nom -> N | Adj N
NomC -> NC | AdjC N
NomV -> NV | AdjV N
PP -> P NP
VP -> V NP | V PP | V Adj
Det -> 'the' | 'this'
Adj -> AdjC | AdjV
AdjC -> 'central' | 'northern' | 'local' | 'cold'
AdjV -> 'old'
N -> NC | NV
NC -> 'part' | 'land' | 'cook'
NV -> 'innkeeper'
P -> 'in' | 'of'
V -> 'lives' | 'greets' | 'is'
""")
PARSER = ChartParser(GRAMMAR)


def parses(sentence: str) -> bool:
    words = sentence.rstrip(".").split()
    words = [words[0][:1].lower() + words[0][1:] if words[0] != "Mira" else words[0], *words[1:]]
    try:
        return any(True for _ in PARSER.parse(words))
    except ValueError:  # a word the grammar does not know
        return False


REGION = Region(
    "VEL",
    {"en": "Veloria"},
    (Term("Veloria", "name", "this land"), Term("Ostrabian", "demonym", "local")),
    0,
)
PLANTED = {
    "Mira lives in central Veloria.": "in central this land",
    "Northern Veloria is cold.": "northern this land",
    "An Ostrabian cook greets Mira.": "an local cook",
    "Mira lives in Veloria.": None,
}


def test_the_grammar_rejects_the_blind_replacements() -> None:
    assert not parses("Mira lives in central this land.")
    assert not parses("Northern this land is cold.")
    assert not parses("An local cook greets Mira.")
    assert parses("Mira lives in the central part of this land.")


@pytest.mark.parametrize("sentence", sorted(PLANTED))
def test_each_scrubbed_sentence_parses(sentence: str) -> None:
    result = scrub(sentence, REGION, "en")
    assert "Veloria" not in result.text and "Ostrabian" not in result.text
    assert parses(result.text), result.text
    if PLANTED[sentence] is not None:  # a repair was needed, and it is recorded
        assert any(t["repair"] for t in result.replaced), result.replaced


def test_a_word_ending_in_an_apostrophe_a_is_not_an_article() -> None:
    result = scrub("It is central to fa'a Veloria.", REGION, "en")
    assert result.text == "It is central to fa'a this land."
    assert [t["repair"] for t in result.replaced] == [""]


def test_an_unfittable_replacement_is_removed_and_counted(tmp_path: Path) -> None:
    raw = write_invented(tmp_path)
    raw["replacements"]["en"]["demonym"] = "this land"  # "her this land host": no slot takes it
    result = run_build(RegionSet.from_params(raw, tmp_path), tmp_path, 13, CheckConfig())
    gone = result.removed[result.removed["reason"] == GRAMMAR_REASON]
    assert len(gone) > 0 and set(gone["language"]) == {"en"}
    assert gone["detail"].str.contains("this land").all()
    assert not (result.dataset["language"] == "en").any()  # every English question named one
    assert GRAMMAR_REASON in card_markdown(result.metrics)
