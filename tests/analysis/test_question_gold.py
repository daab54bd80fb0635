"""Table 6 against the hand-tagged gold (tests/gold/question_pos): corrections, agreement, errors.

The gold questions are written in ID-MoCQA's shape (clue, then a statement closing in "…"), so
the tagger errors issue 34 found show on them: without the corrections of
:func:`cultureqa.mocqa.pos.corrections` English nouns and verbs are over-counted by 15–20 %.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from cultureqa.core.io import SourceError
from cultureqa.core.paths import project_root
from cultureqa.mocqa import pos
from cultureqa.mocqa.pos import AUX, PUNCT, Tagger, corrections, english_tagger
from cultureqa.mocqa.question_analysis import analyze_questions
from cultureqa.mocqa.question_gold import agreement, gold_agreement, load_gold

GOLD = "tests/gold/question_pos"


def test_the_closing_ellipsis_auxiliaries_and_prenominal_participles_are_corrected() -> None:
    raw = [("how", "WRB"), ("does", "VBZ"), ("the", "DT"), ("following", "VBG"),
           ("statement", "NN"), ("end", "VB"), (":", ":"), ("it", "PRP"), ("is", "VBZ"),
           ("the", "DT"), ("…", "NN"), ('"', '"')]  # fmt: skip
    fixed, made = corrections(raw, "en")
    tags = dict(fixed)
    assert tags["…"] == PUNCT and tags['"'] == PUNCT and tags[":"] == PUNCT
    assert tags["does"] == AUX and tags["is"] == AUX and tags["end"] == "VB"
    assert tags["following"] == "JJ"
    assert made == Counter({"punctuation tagged NN": 1, "auxiliary or copula": 2,
                            "participle before a noun": 1})  # fmt: skip
    assert corrections([("has", "VBZ"), ("been", "VBN"), ("had", "VBD"), ("rice", "NN")], "en")[
        0
    ] == [("has", AUX), ("been", AUX), ("had", "VBD"), ("rice", "NN")]
    assert corrections([("…", "NN"), ("adalah", "VB")], "id")[0] == [("…", PUNCT), ("adalah", "VB")]


def test_the_tagger_counts_its_corrections_for_the_run_record() -> None:
    tagger = english_tagger()
    tagged = tagger.words('Which option completes the statement: "The dance is the …"?')
    assert ("…", PUNCT) in tagged
    record = tagger.record()
    assert record["corrections"]["punctuation tagged NN"] == 1
    assert record["corrections"]["auxiliary or copula"] == 1


def test_english_counts_agree_with_the_gold_and_would_not_without_the_corrections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entries = load_gold(project_root() / GOLD / "en.yaml")
    assert len(entries) == 30
    fixed = agreement(entries, "en", english_tagger())
    for measure in ("nouns", "verbs", "adjectives"):
        assert abs(fixed[measure]["bias_pct"]) <= 10, (measure, fixed[measure])
    assert fixed["verbs"]["exact_share"] >= 0.6 and fixed["nouns"]["exact_share"] >= 0.6
    monkeypatch.setattr(pos, "corrections", lambda tagged, language: (tagged, Counter()))
    raw = agreement(entries, "en", english_tagger())
    assert raw["verbs"]["bias_pct"] > 15 and raw["nouns"]["bias_pct"] > 15  # the gate bites


def test_the_gold_agreement_reaches_the_run_record() -> None:
    import pandas as pd

    data = pd.DataFrame({
        "item_id": ["a"], "clue_type": ["entity"], "language": ["en"],
        "question": ['Think of the province of Lake Toba. How does it end: "The cloth is …"?'],
        "clue": ["x"], "options": [["A", "B", "C"]], "answer": ["A"],
    })  # fmt: skip
    result = analyze_questions(data, {"gold": GOLD}, project_root())
    record = result.tagger_records["en"]
    assert record["gold_agreement"]["source"] == f"{GOLD}/en.yaml"
    assert record["gold_agreement"]["questions"] == 30
    assert set(record["gold_agreement"]["verbs"]) == {
        "gold_mean", "tagged_mean", "bias_pct", "mean_abs_error", "exact_share",
    }  # fmt: skip
    assert "against 30 hand-tagged questions" in result.markdown()
    # the dataset's own corrections, not the gold's: one question, one closing ellipsis
    assert record["corrections"]["punctuation tagged NN"] == 1


def test_a_gold_word_missing_from_its_question_names_file_entry_and_measure(
    tmp_path: Path,
) -> None:
    path = tmp_path / "en.yaml"
    entry = ("- q: 'The dance is …'\n  adjectives: []\n  common_nouns: [dance]\n"
             "  proper_nouns: []\n  verbs: [{verb}]\n  persons: []\n  locations: []\n"
             "  cultural_terms: []\n")  # fmt: skip
    path.write_text(entry.format(verb="") + entry.format(verb="dances"), encoding="utf-8")
    with pytest.raises(SourceError, match=r"en.yaml, row 2, column 'verbs': 'dances' is not"):
        load_gold(path)
    path.write_text("- q: 'The dance is …'\n  adjectives: []\n", encoding="utf-8")
    with pytest.raises(SourceError, match=r"row 1, column 'common_nouns': expected a list"):
        load_gold(path)
    lookup = Tagger("en", "lookup", lambda text: [(w, "NN") for w in text.split()])
    with pytest.raises(FileNotFoundError, match="no gold set"):
        gold_agreement(tmp_path, "absent", {"en": lookup})
