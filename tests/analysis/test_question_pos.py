"""Table 6 word classes and named terms: counts against hand counts, real taggers, planted names."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cultureqa.core.paths import project_root
from cultureqa.mocqa.pos import Tagger, count_classes, english_tagger, read_corpus
from cultureqa.mocqa.question_analysis import analyze_questions, default_taggers
from cultureqa.mocqa.question_pos import (
    COLUMNS,
    cultural_terms_pattern,
    location_pattern,
    person_pattern,
    word_class_table,
)

TAGS = {
    "big": "JJ", "red": "JJ", "baru": "JJ", "Kecak": "NNP", "Saman": "NNP", "Lake": "NNP",
    "Toba": "NNP", "Pulau": "NNP", "Weh": "NNP", "dance": "NN", "cloth": "NN", "tari": "NN",
    "tahun": "NN", "is": "VBZ", "woven": "VBN", "datang": "VB",
}  # fmt: skip


def _lookup_tagger(language: str) -> Tagger:
    """Test tagger: tags from :data:`TAGS` (others ``X``), so the hand counts below are exact."""
    return Tagger(language, "lookup", lambda text: [(w, TAGS.get(w, "X")) for w in text.split()])


ROWS = [
    # clue_type, language, question, then the hand count of
    # (adjectives, nouns, verbs, proper nouns, persons, locations, cultural terms)
    ("entity", "en", "big Kecak dance is near Lake Toba", (1, 4, 0, 3, 0, 1, 1)),  # is: copula
    ("entity", "en", "red cloth woven", (1, 1, 1, 0, 0, 0, 0)),
    ("entity", "id", "tari Saman dari Pulau Weh", (0, 4, 0, 3, 0, 1, 1)),
    ("temporal", "id", "tahun baru datang Sultan Agung", (1, 1, 1, 0, 1, 0, 0)),
]


def _dataset() -> pd.DataFrame:
    return pd.DataFrame([r[:3] for r in ROWS], columns=["clue_type", "language", "question"])


def test_counts_per_class_match_the_tags() -> None:
    tagged = [("big", "JJ"), ("Toba", "NNP"), ("lakes", "NNS"), ("run", "VBZ"), ("is", "VBZ")]
    assert count_classes(tagged, "en") == {
        "adjectives": 1, "nouns": 2, "verbs": 2, "proper_nouns": 1,
    }  # fmt: skip
    tagged_id = [("tari", "NN"), ("Saman", "NNP"), ("indah", "JJ"), ("menari", "VB")]
    assert count_classes(tagged_id, "id") == {
        "adjectives": 1, "nouns": 2, "verbs": 1, "proper_nouns": 1,
    }  # fmt: skip


def test_table_means_equal_an_independent_hand_count() -> None:
    taggers = {"en": _lookup_tagger("en"), "id": _lookup_tagger("id")}
    table = word_class_table(_dataset(), taggers).set_index(["clue_type", "language"])
    hand = pd.DataFrame(
        [(*r[:2], *r[3]) for r in ROWS], columns=["clue_type", "language", *COLUMNS]
    )
    cells = [("entity", "en"), ("entity", "id"), ("temporal", "id")]
    for clue_type, language in cells:
        rows = hand[(hand.clue_type == clue_type) & (hand.language == language)]
        assert table.loc[(clue_type, language), "n"] == len(rows)
        for column in COLUMNS:
            got = table.loc[(clue_type, language), f"{column}_per_question"]
            assert got == pytest.approx(rows[column].mean()), (clue_type, language, column)
    assert table.loc[("all", "id"), "nouns_per_question"] == pytest.approx((4 + 1) / 2)


def test_a_language_without_a_tagger_is_an_error() -> None:
    with pytest.raises(KeyError, match="no POS tagger for language"):
        word_class_table(_dataset(), {"en": _lookup_tagger("en")})


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        ("en", "Which dance is danced near Lake Toba in North Sumatra?",
         ["Lake Toba", "North Sumatra"]),
        ("en", "It lies on Weh Island, the tip of Indonesia.", ["Weh Island", "Indonesia"]),
        ("id", "Tarian dari Pulau Weh di Sumatera Utara, dekat Malaysia.",
         ["Pulau Weh", "Sumatera Utara", "Malaysia"]),
        ("en", "a dance performed at weddings", []),
    ],
)  # fmt: skip
def test_planted_place_names_are_counted(language: str, text: str, expected: list[str]) -> None:
    assert location_pattern(language).findall(text) == expected


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        ("en", "Under Sultan Iskandar Muda and King Hayam Wuruk",
         ["Sultan Iskandar Muda", "King Hayam Wuruk"]),
        ("id", "Perang yang dipimpin Teuku Umar dan Cut Nyak Dhien",
         ["Teuku Umar", "Cut Nyak Dhien"]),
        ("en", "The sultanate was led by a king.", []),
    ],
)  # fmt: skip
def test_planted_persons_are_counted_by_title(
    language: str, text: str, expected: list[str]
) -> None:
    assert person_pattern(language).findall(text) == expected


def test_planted_cultural_terms_are_counted_case_insensitively() -> None:
    found = cultural_terms_pattern().findall("The kecak and the Saman are dances; rice is food.")
    assert [f.lower() for f in found] == ["kecak", "saman"]


def test_corpus_reader_repairs_lower_case_tags_and_names_malformed_lines(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Saya\tPR\nmakan\tvb\n\nIa\tPR\npergi\tVB\n", encoding="utf-8")
    sentences, repairs = read_corpus(corpus)
    assert sentences == [[("Saya", "PR"), ("makan", "VB")], [("Ia", "PR"), ("pergi", "VB")]]
    assert repairs == {"tag_upper_cased": 1}
    corpus.write_text("Saya\tPR\nmakan\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"corpus.txt:2: expected 'token<TAB>tag'"):
        read_corpus(corpus)


def test_the_english_tagger_tags_offline() -> None:
    tagged = english_tagger().tag("The beautiful dancers perform an old dance in Bali.")
    counts = count_classes(tagged, "en")
    assert counts == {"adjectives": 2, "nouns": 3, "verbs": 1, "proper_nouns": 1}


def test_the_indonesian_tagger_is_fitted_once_and_reports_its_agreement() -> None:
    tagger = default_taggers(["id"])["id"]
    assert tagger.notes["heldout_accuracy"] > 0.9
    assert tagger.notes["repairs"]["duplicate_sentences_dropped"] > 0
    assert "held-out sentences" in tagger.describe()
    counts = count_classes(tagger.tag("Penari itu menari dengan indah di Bali."), "id")
    assert counts["verbs"] >= 1 and counts["proper_nouns"] == 1


def test_the_fitted_tagger_is_read_once_per_process_and_again_when_its_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import os

    import joblib

    from cultureqa.mocqa import pos

    # a stand-in for the fitted file (a real one takes 1 CPU s to read): reading is the subject
    fitted = tmp_path / f"pos-id-{pos._cache_key(pos._nlp_id_corpus())}.joblib"
    joblib.dump({"stand-in": "model"}, fitted)
    fitted.with_suffix(".json").write_text(json.dumps({"heldout_accuracy": 0.95}))
    read: list[Path] = []
    load = joblib.load
    monkeypatch.setattr(joblib, "load", lambda path: read.append(Path(path)) or load(path))

    first, second = pos.indonesian_tagger(tmp_path), pos.indonesian_tagger(tmp_path)
    assert read == [fitted] and first is not second  # the second reuses the model read once
    assert first.notes == second.notes == {"heldout_accuracy": 0.95}
    later = fitted.stat().st_mtime_ns + 10**9
    os.utime(fitted, ns=(later, later))  # as a refit would leave it
    pos.indonesian_tagger(tmp_path)
    assert read == [fitted, fitted]


def test_analysis_report_has_the_table_and_says_what_is_not_counted() -> None:
    data = pd.DataFrame({
        "item_id": ["a", "b"], "clue_type": ["entity", "entity"], "language": ["en", "id"],
        "question": ["Which dance is from Lake Toba?", "Tarian apa dari Pulau Weh?"],
        "clue": ["x", "y"], "options": [["A", "B", "C"]] * 2, "answer": ["A", "B"],
    })  # fmt: skip
    result = analyze_questions(data, {}, project_root())
    assert result.word_classes is not None
    assert "question_word_classes" in result.tables()
    text = result.markdown()
    assert "Persons are counted by title phrases" in text
    assert "TextBlob" in text and "nlp-id" in text
    records = result.tagger_records  # the run record the analyze stage writes
    assert set(records) == {"en", "id"} and "TextBlob" in records["en"]["tagger"]
    assert records["id"]["repairs"]["tag_upper_cased"] == 1 and records["id"]["heldout_tokens"] > 0
    off = analyze_questions(data, {"word_classes": False}, project_root())
    assert off.word_classes is None and "word_classes` is false" in off.markdown()


def test_a_missing_tagger_package_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    from cultureqa.mocqa import pos

    def missing(package: str) -> str:
        raise metadata.PackageNotFoundError(package)

    monkeypatch.setattr(pos.metadata, "version", missing)
    with pytest.raises(pos.TaggerUnavailable, match="needs the textblob package: run `make setup`"):
        english_tagger()
