"""The rules judge of the ID-MoCQA build (the keep rule and reply parsing: tests/regions)."""

from __future__ import annotations

import json

import pandas as pd

from cultureqa.knowledge.provinces import load_knowledge_base
from cultureqa.mocqa_build.judge import JudgeConfig, judge_variants

ACCEPTABLE = {"OK", "Minor"}


def _variant(**overrides: object) -> dict[str, object]:
    evidence = {"kind": "dances", "name": "Saman", "province": "Aceh", "unique": True}
    row = {
        "variant_id": "s1.entity.en",
        "pair_id": "s1.entity",
        "source_id": "s1",
        "clue_type": "entity",
        "language": "en",
        "province": "Aceh",
        "topic": "Art",
        "clue": "Think of the province that is home to the dance Saman, a seated body-percussion"
        " dance.",
        "context": "The dish served at Maulid feasts is called",
        "options": ["kuah beulangong", "konro", "rawon"],
        "answer": "A",
        "clue_evidence": json.dumps(evidence),
        "generator": "template",
        "template_id": "t",
        "fact_key": "entity:dances:Saman",
    }
    row.update(overrides)
    row["question"] = (
        f"{row['clue']} In this province, which option correctly completes the "
        f'following statement? "{row["context"]} …"'
    )
    return row


def _judge(rows: list[dict[str, object]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    result = judge_variants(frame, JudgeConfig(), load_knowledge_base(), ["en"], store_path=None)  # type: ignore[arg-type]
    table = result.tables["judgements"].set_index("variant_id")
    return table.assign(kept=table.index.isin(result.frame["variant_id"]))


def test_rules_judge_keeps_a_clean_item_and_flags_leaks_shortcuts_and_wrong_facts() -> None:
    rows = [
        _variant(),
        _variant(
            variant_id="leak.en",
            pair_id="leak",
            clue="Think of the province of Aceh, home of Saman.",
        ),
        _variant(
            variant_id="cut.en",
            pair_id="cut",
            clue="Think of the province that cooks kuah beulangong.",
        ),
        _variant(
            variant_id="wrong.en",
            pair_id="wrong",
            clue_evidence=json.dumps(
                {"kind": "dances", "name": "Kecak", "province": "Aceh", "unique": True}
            ),
        ),
    ]
    table = _judge(rows)
    assert table.loc["s1.entity.en", "category"] == "OK" and table.loc["s1.entity.en", "kept"]
    scores = {vid: json.loads(table.loc[vid, "scores"]) for vid in table.index}
    assert scores["leak.en"]["answer_discrimination"] == 0
    assert scores["cut.en"]["answer_discrimination"] == 0
    assert scores["wrong.en"]["province_clue_accuracy"] == 0  # Kecak is Balinese, not Acehnese
    for vid in ("leak.en", "cut.en", "wrong.en"):
        assert table.loc[vid, "category"] == "Significant" and not table.loc[vid, "kept"]


def test_rules_judge_marks_a_missing_language_and_a_long_clue() -> None:
    long_clue = "Think of the province that is home to the dance Saman, " + "very " * 60 + "old."
    table = _judge([_variant(clue=long_clue)])
    scores = json.loads(table.iloc[0]["scores"])
    assert scores["conciseness"] == 0
    result = judge_variants(
        pd.DataFrame([_variant()]),
        JudgeConfig(),
        load_knowledge_base(),
        ["en", "id"],
        store_path=None,
    )  # type: ignore[arg-type]
    scores = json.loads(result.tables["judgements"].iloc[0]["scores"])
    assert scores["language_quality"] == 1  # the Indonesian side is missing


def test_rules_judge_rejects_a_changed_answer_and_names_what_it_cannot_decide(
    template_build,
) -> None:
    from cultureqa.knowledge.national import load_national
    from cultureqa.knowledge.provinces import load_knowledge_base
    from cultureqa.mocqa_build.judge_rules import UNDECIDED, RulesConfig, judge_rules

    _, results = template_build
    variants = results["expand"].frame.head(4).copy()
    items = results["ingest"].frame
    first, second = variants.index[0], variants.index[1]
    variants.at[first, "answer"] = "C" if variants.at[first, "answer"] != "C" else "A"
    variants.at[second, "options"] = ["x", "y", "z"]
    judged = judge_rules(
        variants,
        load_knowledge_base(),
        RulesConfig(),
        ("en", "id"),
        load_national(),
        items,
    )
    by_id = {j.variant_id: j for j in judged}
    for index in (first, second):
        verdict = by_id[variants.at[index, "variant_id"]]
        assert verdict.category == "Significant" and verdict.scores["answer_quality"] == 0
        assert "no longer the source item's answer" in verdict.rationale
    untouched = by_id[variants.at[variants.index[2], "variant_id"]]
    assert untouched.category in ("OK", "Minor")
    assert all(k in untouched.rationale for k in UNDECIDED)
