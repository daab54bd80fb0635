"""ID-MoCQA question analysis: lexical numbers by hand, the semantic rubric through the model layer.

The semantic test runs a real litellm client against the in-process fake OpenAI server, so the
request goes through the same store, retries and parsing as any API model.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.core.paths import project_root
from cultureqa.mocqa.question_analysis import (
    analyze_questions,
    item_lexical,
    lexical_table,
    parse_semantic,
)

ROWS = [
    {"item_id": "1", "clue_type": "entity", "language": "en", "answer": "A",
     "clue": "People here weave the ulos cloth.", "question": "People here weave the ulos cloth. "
     "Which cloth is worn at weddings?", "options": ["ulos cloth", "songket", "batik tulis"]},
    {"item_id": "2", "clue_type": "entity", "language": "en", "answer": "B",
     "clue": "Lake Toba lies here.", "question": "Lake Toba lies here. Which dance is performed?",
     "options": ["saman", "tor-tor", "kecak"]},
    {"item_id": "3", "clue_type": "temporal", "language": "id", "answer": "C",
     "clue": "Provinsi ini berdiri pada tahun 1956.", "question": "Provinsi ini berdiri pada tahun "
     "1956. Rumah adat apa?", "options": ["rumoh aceh", "joglo", "rumah gadang"]},
]  # fmt: skip


def test_item_lexical_by_hand() -> None:
    first = item_lexical(ROWS[0])
    # content words: clue {people, here, weave, ulos, cloth}; gold {ulos, cloth} → 2/5
    assert first["clue_gold_jaccard"] == pytest.approx(2 / 5)
    assert first["clue_distractor_jaccard"] == 0.0
    assert (first["gold_shares_word"], first["gold_top_overlap"]) == (1.0, 1.0)
    assert (first["question_words"], first["clue_words"]) == (12, 6)
    assert first["option_words"] == pytest.approx((2 + 1 + 2) / 3)
    second = item_lexical(ROWS[1])
    assert (second["gold_shares_word"], second["clue_gold_jaccard"]) == (0.0, 0.0)
    no_clue = item_lexical({k: v for k, v in ROWS[0].items() if k != "clue"})
    assert math.isnan(no_clue["clue_gold_jaccard"]) and no_clue["question_words"] == 12


def test_lexical_table_cells_and_all_rows() -> None:
    table = lexical_table(pd.DataFrame(ROWS)).set_index(["clue_type", "language"])
    entity = table.loc[("entity", "en")]
    assert entity["n"] == 2 and entity["gold_shares_word"] == 0.5
    assert entity["clue_gold_jaccard"] == pytest.approx(0.2)
    assert table.loc[("all", "en"), "n"] == 2 and table.loc[("all", "id"), "n"] == 1
    # "Provinsi", "ini", "pada" are function words; the gold "rumah gadang" shares none
    assert table.loc[("temporal", "id"), "gold_top_overlap"] == 0.0


def test_parse_semantic_is_strict() -> None:
    good = 'ok {"province_identifiable": true, "clue_specificity": 3, ' \
        '"answer_from_clue_alone": false, "needs_both_hops": true}'  # fmt: skip
    expected = {"province_identifiable": True, "clue_specificity": 3,
                "answer_from_clue_alone": False, "needs_both_hops": True}  # fmt: skip
    assert parse_semantic(good) == expected
    assert parse_semantic(good.replace("3", "4")) is None  # off the rubric
    assert parse_semantic(good.replace("true", '"yes"', 1)) is None
    assert parse_semantic("no json here") is None and parse_semantic(None) is None


def _responder(messages: list[dict[str, object]]) -> str:
    prompt = str(messages[-1]["content"])
    if "Lake Toba" in prompt:
        return "I cannot judge this."  # → parse_error, counted
    leak = "ulos cloth" in prompt
    answer = {"province_identifiable": True, "clue_specificity": 2,
              "answer_from_clue_alone": leak, "needs_both_hops": True}  # fmt: skip
    return json.dumps(answer)


def test_semantic_analysis_through_the_model_layer(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from cultureqa.testing import FakeOpenAIServer

    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path))
    with FakeOpenAIServer(responder=_responder) as server:
        model = {
            "id": "judge", "backend": "litellm", "batch_size": 1, "concurrency": 2,
            "decoding": {"temperature": 0.0, "max_tokens": 64, "seed": None},
            "options": {"litellm_model": "openai/judge", "api_base": server.api_base,
                        "api_key_env": None, "drop_params": True},
            "retry": {"attempts": 1, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 10},
            "price": None,
        }  # fmt: skip
        result = analyze_questions(pd.DataFrame(ROWS), {"model": model}, project_root())
        calls = server.hits
        again = analyze_questions(pd.DataFrame(ROWS), {"model": model}, project_root())
        assert server.hits == calls == 3  # the rerun is answered from the store
    assert again.semantic is not None and result.semantic is not None
    table = result.semantic.set_index(["clue_type", "language"])
    entity = table.loc[("entity", "en")]
    assert (entity["n_ok"], entity["n_parse_error"], entity["n_error"]) == (1, 1, 0)
    assert entity["answer_from_clue_alone"] == 1.0 and entity["clue_specificity"] == 2.0
    assert table.loc[("all", "en"), "n_ok"] == 1
    assert "Judged by `judge`" in result.markdown()


def test_without_a_model_the_report_says_why() -> None:
    result = analyze_questions(pd.DataFrame(ROWS), {"model": None}, project_root())
    assert result.semantic is None and result.lexical is not None
    assert "_Not run: `mocqa_eval.question_analysis.model` is null" in result.markdown()
    bare = analyze_questions(pd.DataFrame(ROWS).drop(columns="clue"), {}, project_root())
    assert "no `clue` column" in bare.markdown()


def test_an_empty_judge_reply_is_counted_as_empty() -> None:
    from cultureqa.llm.base import GenerateResponse
    from cultureqa.mocqa.question_analysis import semantic_rows, semantic_table

    replies = [GenerateResponse(""), GenerateResponse("no json"), GenerateResponse(None, "error")]
    rows = semantic_rows(pd.DataFrame(ROWS), replies)
    assert rows["status"].tolist() == ["empty", "parse_error", "error"]
    table = semantic_table(rows).set_index(["clue_type", "language"])
    entity = table.loc[("entity", "en")]
    assert (entity["n_ok"], entity["n_parse_error"], entity["n_empty"]) == (0, 1, 1)
    assert table.loc[("temporal", "id"), "n_error"] == 1
