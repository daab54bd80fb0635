"""An empty reply is a wrong, unanswered item with status ``empty``: counted under its own cause.

The API clients return ``GenerateResponse(status="ok", text="")`` once their retries of an empty
reply are spent; every scorer must then score the item wrong and count it apart from parse
errors and failed calls. Since issue 33 it counts toward ``max_error_share`` like them: a run
whose model answers nothing usable fails.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.analysis.tables import metrics_tree, overall_table
from cultureqa.cases.analysis import overall_table as cases_overall_table
from cultureqa.cases.evaluate import CasesFamily, score_generation
from cultureqa.core.records import Setting
from cultureqa.evaluation.parsing import EMPTY, is_empty_reply
from cultureqa.evaluation.prompts import Template
from cultureqa.evaluation.record import Counts, count, error_share, group_metrics
from cultureqa.evaluation.runner import Decoding, SettingPlan, run_setting
from cultureqa.llm.base import GenerateResponse
from cultureqa.llm.fake import ScriptedModel
from tests.conftest import make_item

MCQ = Template(Path("mcq.txt"), "{location_clause}Q: {question}\n{options}\nAnswer:")
REPLIES = [
    "Jawaban: B",
    "",
    " \n\t",
    "no idea",
    GenerateResponse(None, status="error", error="RateLimitError: 429"),
]


def _frame() -> pd.DataFrame:
    model = ScriptedModel(replies=REPLIES)
    plan = SettingPlan(Setting("mcq", "none", "id"), MCQ)
    items = [make_item(f"q{i}", answer=1) for i in range(len(REPLIES))]
    frame = asyncio.run(run_setting(model, items, plan, lambda i, level: "", Decoding()))
    return frame.assign(benchmark="b", model="m")


def test_only_an_answered_call_without_text_is_empty() -> None:
    assert is_empty_reply("ok", "") and is_empty_reply("ok", None) and is_empty_reply("ok", " \n")
    assert not is_empty_reply("ok", "A") and not is_empty_reply("error", None)


def test_mcq_empty_replies_are_wrong_with_reason_empty_and_not_errors() -> None:
    frame = _frame()
    assert list(frame["status"]) == ["ok", EMPTY, EMPTY, "parse_error", "error"]
    assert list(frame["correct"]) == [True, False, False, False, False]
    assert set(frame.loc[frame["status"] == EMPTY, "pred"]) == {""}
    assert error_share(frame) == pytest.approx(4 / 5)  # empty, unparsable and failed alike
    assert count(frame) == Counts(items=5, ok=1, errors=1, parse_errors=1, empty=2, not_sent=0)
    [rates] = group_metrics(frame, "setting", {"accuracy": "correct"}).values()
    assert rates["empty_rate"] == pytest.approx(0.4)
    assert rates["parse_error_rate"] == pytest.approx(0.2)
    assert rates["error_rate"] == pytest.approx(0.2)


def test_report_tables_and_dvc_metrics_count_empty_replies() -> None:
    frame = _frame()
    table = overall_table(frame)
    assert table["empty_rate"].tolist() == [pytest.approx(0.4)]
    leaf = next(iter(metrics_tree(table)["m"].values()))
    assert leaf["empty_rate"] == pytest.approx(0.4) and leaf["parse_error_rate"] == 0.2


def test_an_unknown_status_is_an_error_not_a_silent_zero() -> None:
    frame = _frame()
    frame.loc[0, "status"] = "blank"
    with pytest.raises(ValueError, match="unknown status values \\['blank'\\]"):
        count(frame)


def _case(case_id: str) -> dict[str, object]:
    return {
        "case_id": case_id,
        "answer": "F",
        "letter_types": json.dumps({x: x for x in "ABCDEF"}),
    }


def test_cases_empty_reply_is_wrong_with_reason_empty() -> None:
    empty = score_generation(_case("c1"), GenerateResponse(""))
    answered = score_generation(_case("c2"), GenerateResponse('{"selection": "F"}'))
    failed = score_generation(_case("c3"), GenerateResponse(None, "error", "Timeout: slow"))
    assert (empty["status"], empty["correct"], empty["pred"]) == (EMPTY, False, "")
    assert answered["status"] == "ok" and answered["correct"]
    assert failed["status"] == "error"
    frame = pd.DataFrame([empty, answered, failed]).assign(seed=60, model="m", kind="model")
    assert error_share(frame) == pytest.approx(2 / 3)
    family = CasesFamily({}, {}, None, Path("."))  # metrics need none of its inputs
    seeds = family.metrics(frame)["seeds"]["60"]
    assert seeds["empty_rate"] == pytest.approx(1 / 3)
    assert seeds["parse_error_rate"] == 0.0
    frame = frame.assign(domain="law", continent="Asia", weird_bin=1)
    rates = cases_overall_table(frame.assign(pred_type=["", "F", ""]))
    assert rates["empty_rate"].tolist() == [pytest.approx(1 / 3)]
