"""The Table 6 gold (tests/gold/question_pos_built) holds real built questions, with the bias
beside each count.

The gold's questions must be the built dataset's own, word for word: a tagger measured on
questions nobody asks says nothing about Table 6. Table 6 then prints, beside each count, the
tagger's bias on that measure against this gold, for the row's language.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from cultureqa.mocqa.question_analysis import analyze_questions
from cultureqa.mocqa.question_gold import load_gold
from cultureqa.mocqa.question_pos import COLUMNS
from cultureqa.paths import project_root

GOLD = "tests/gold/question_pos_built"


def test_every_gold_question_is_a_built_item_word_for_word(template_build: Any) -> None:  # type: ignore[no-untyped-def]
    _, results = template_build
    built = results["finalize"].frame.set_index("item_id")["question"]
    for language in ("en", "id"):
        entries = load_gold(project_root() / GOLD / f"{language}.yaml")
        assert len(entries) >= 20
        for entry in entries:
            assert entry["item_id"].endswith(f".{language}")
            assert built.get(entry["item_id"]) == entry["q"], entry["item_id"]
    en = {e["item_id"][:-3] for e in load_gold(project_root() / GOLD / "en.yaml")}
    id_ = {e["item_id"][:-3] for e in load_gold(project_root() / GOLD / "id.yaml")}
    assert en == id_  # the same pairs in both languages


def test_table_6_prints_the_measured_bias_beside_each_count(template_build: Any) -> None:  # type: ignore[no-untyped-def]
    _, results = template_build
    dataset = results["finalize"].frame.groupby("language").head(12)
    analysis = analyze_questions(dataset, {"word_classes": True, "gold": GOLD}, project_root())
    table = analysis.word_classes
    assert table is not None
    columns = list(table.columns)
    for measure in COLUMNS:  # each bias right after its count
        assert columns.index(f"{measure}_bias_pct") == columns.index(f"{measure}_per_question") + 1
    measured = {lang: analysis.tagger_records[lang]["gold_agreement"] for lang in ("en", "id")}
    for _, row in table.iterrows():
        for measure in COLUMNS:
            expected = measured[row["language"]][measure]["bias_pct"]
            got = row[f"{measure}_bias_pct"]
            assert (pd.isna(got) and expected is None) or got == expected
    indonesian = measured["id"]
    assert indonesian["adjectives"]["bias_pct"] < -20  # the tagger's bias on real questions
    assert "_bias_pct" in analysis.markdown()
