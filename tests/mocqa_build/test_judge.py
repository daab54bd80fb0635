"""The panel keep rule on every vote pattern, reply parsing, and the rules judge."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.evaluation.parsing import EMPTY, EMPTY_ERROR
from cultureqa.knowledge.provinces import load_knowledge_base
from cultureqa.llm.base import GenerateResponse
from cultureqa.mocqa_build.judge import JudgeConfig, judge_variants
from cultureqa.mocqa_build.judging import CATEGORIES, CRITERIA, Judgement, decide, keep, parse_reply

ACCEPTABLE = {"OK", "Minor"}


@pytest.mark.parametrize("votes", list(itertools.product(CATEGORIES, repeat=3)), ids=str)
def test_panel_rule_on_every_pattern_of_three_judges(votes: tuple[str, str, str]) -> None:
    expected = sum(v in ACCEPTABLE for v in votes) >= 2 and "Significant" not in votes
    assert keep(list(votes), min_acceptable=2) is expected


def test_panel_rule_enumeration_is_complete_and_matches_the_paper() -> None:
    patterns = list(itertools.product(CATEGORIES, repeat=3))
    assert len(patterns) == 4**3
    kept = [p for p in patterns if keep(list(p), 2)]
    # 2 or 3 Acceptable and no Significant: 3 Acceptable (2^3 = 8) + exactly 2 with one Moderate
    # (3 positions × 2^2 = 12) = 20 of 64.
    assert len(kept) == 20
    assert not keep(["OK", "OK", "Significant"], 2)
    assert keep(["OK", "Minor", "Moderate"], 2)
    assert not keep(["OK", "Moderate", "Moderate"], 2)


@pytest.mark.parametrize("votes", list(itertools.product([*CATEGORIES, None], repeat=3)), ids=str)
def test_malformed_replies_count_as_neither(votes: tuple[str | None, ...]) -> None:
    valid = [v for v in votes if v is not None]
    expected = sum(v in ACCEPTABLE for v in valid) >= 2 and "Significant" not in valid
    judgements = [
        Judgement("v", f"j{i}", category=v, status="ok" if v else "malformed")
        for i, v in enumerate(votes)
    ]
    assert decide(judgements, 2)["keep"] is expected


def _reply(**overrides: object) -> str:
    payload = {"scores": dict.fromkeys(CRITERIA, 2), "category": "OK", "rationale": "fine"}
    payload.update(overrides)
    return json.dumps(payload)


def test_parse_reply_accepts_fenced_json_and_recomputes_total() -> None:
    text = "Here is my verdict:\n```json\n" + _reply(category="minor", total=3) + "\n```"
    j = parse_reply("v1", "gpt-4o", text)
    assert j.status == "ok" and j.category == "Minor" and j.total == 16 and j.acceptable


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("I think it is fine.", "no JSON object"),
        (_reply(scores={"conciseness": 2}), "scores lack"),
        (_reply(scores={**dict.fromkeys(CRITERIA, 2), "conciseness": 3}), "outside 0–2"),
        (_reply(scores={**dict.fromkeys(CRITERIA, 2), "conciseness": "two"}), "not an integer"),
        (_reply(category="Great"), "not one of"),
        ('{"scores": [1, 2]}', "missing 'scores' object"),
    ],
)
def test_malformed_replies_are_recorded_not_guessed(text: str, message: str) -> None:
    j = parse_reply("v1", "judge", text)
    assert j.status == "malformed" and message in j.error and j.category is None
    assert j.raw == text and not j.acceptable


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


def test_an_empty_panel_reply_is_recorded_as_empty_and_counts_as_neither(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cultureqa.mocqa_build import judge

    def run_models(jobs: dict[str, object], store_path: object) -> dict[str, list[object]]:
        replies = {"j1": "", "j2": _reply(category="OK"), "j3": _reply(category="Minor")}
        return {name: [GenerateResponse(replies[name])] for name in jobs}

    monkeypatch.setattr(judge, "run_models", run_models)
    root = Path(__file__).resolve().parents[2]
    panel = JudgeConfig(
        "panel", 2, judges={j: {"id": j} for j in ("j1", "j2", "j3")},
        prompt=root / "prompts/mocqa/judge/panel.en.txt",
    )  # fmt: skip
    judgements = judge.judge_panel(pd.DataFrame([_variant()]), panel, store_path=None)  # type: ignore[arg-type]
    by_judge = {j.judge: j for j in judgements}
    assert (by_judge["j1"].status, by_judge["j1"].error) == (EMPTY, EMPTY_ERROR)
    assert by_judge["j1"].category is None
    assert decide(judgements, 2)["keep"] and decide(judgements, 2)["n_valid"] == 2
