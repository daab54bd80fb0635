"""Requests built per setting, log-likelihood argmax, generation scoring, unsupported settings."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from cultureqa.core.records import PREDICTION_COLUMNS, Setting
from cultureqa.evaluation.engine import Decoding
from cultureqa.evaluation.prompts import Template, TemplateError, find_template
from cultureqa.evaluation.record import conform
from cultureqa.evaluation.runner import SettingPlan, UnsupportedSetting, run_setting
from cultureqa.llm.base import GenerateResponse
from cultureqa.llm.fake import ScriptedModel
from tests.conftest import make_item

MCQ = Template(Path("mcq.txt"), "{location_clause}Q: {question}\n{options}\nAnswer:")
COMPLETION = Template(Path("c.txt"), "{location_clause}{question}")


def _no_location(item, level):  # type: ignore[no-untyped-def]
    return "Sumatera Utara" if level == "province" else ""


def test_loglik_argmax_on_a_hand_made_case() -> None:
    """The continuation with the highest summed log-probability is the prediction."""
    scores = {" kain ulos": -3.2, " kain songket": -7.9, " selendang batik": -5.1}
    model = ScriptedModel(loglik_fn=lambda r: [scores[c] for c in r.continuations])
    plan = SettingPlan(Setting("completion", "province", "id"), COMPLETION, "Lokasi: {location}. ")
    items = [make_item("q1", answer=0), make_item("q2", answer=2)]
    frame = asyncio.run(run_setting(model, items, plan, _no_location, Decoding()))
    assert list(frame["pred"]) == ["A", "A"]
    assert list(frame["correct"]) == [True, False]
    assert model.loglik_calls[0].context.startswith("Lokasi: Sumatera Utara. Saat upacara")
    assert json.loads(frame["scores"][0]) == [-3.2, -7.9, -5.1]


def test_mcq_loglik_scores_option_letters() -> None:
    model = ScriptedModel(loglik_fn=lambda r: [-2.0, -0.5, -1.0])
    plan = SettingPlan(Setting("mcq", "none", "id"), MCQ)
    frame = asyncio.run(run_setting(model, [make_item(answer=1)], plan, _no_location, Decoding()))
    assert model.loglik_calls[0].continuations == (" A", " B", " C")
    assert "A. kain ulos\nB. kain songket\nC. selendang batik" in model.loglik_calls[0].context
    assert frame["pred"][0] == "B" and bool(frame["correct"][0])


def test_generation_parse_errors_and_model_errors_are_explicit() -> None:
    replies = ["Jawaban: B", "no idea", GenerateResponse(None, status="error", error="429")]
    model = ScriptedModel(replies=replies)
    plan = SettingPlan(Setting("mcq", "none", "id"), MCQ)
    items = [make_item(f"q{i}", answer=1) for i in range(3)]
    frame = asyncio.run(run_setting(model, items, plan, _no_location, Decoding(max_tokens=5)))
    assert list(frame["status"]) == ["ok", "parse_error", "error"]
    assert list(frame["correct"]) == [True, False, False]
    assert model.generate_calls[0].max_tokens == 5
    assert model.generate_calls[0].template_version == MCQ.sha256


def test_completion_needs_loglik() -> None:
    plan = SettingPlan(Setting("completion", "none", "id"), COMPLETION)
    with pytest.raises(UnsupportedSetting):
        asyncio.run(run_setting(ScriptedModel(), [make_item()], plan, _no_location, Decoding()))


def test_predictions_follow_the_contract() -> None:
    model = ScriptedModel(loglik_fn=lambda r: [0.0, -1.0, -2.0])
    plan = SettingPlan(Setting("mcq", "none", "id"), MCQ)
    frame = asyncio.run(
        run_setting(model, [make_item(province="Bali")], plan, _no_location, Decoding())
    )
    frame.insert(0, "model", "fake")
    frame.insert(0, "benchmark", "b")
    out = conform(frame, PREDICTION_COLUMNS, "b")
    assert out["correct"].dtype == bool and out["province"][0] == "Bali"


def test_templates_fall_back_and_validate(tmp_path: Path) -> None:
    (tmp_path / "prompts/default/mcq").mkdir(parents=True)
    (tmp_path / "prompts/default/mcq/zero_shot.en.txt").write_text("{question}\n{options}\n")
    with pytest.raises(TemplateError, match=r"language 'id'.*prompt_fallback: \{id: en\}"):
        find_template(tmp_path, "anything", "mcq", "zero_shot", "id")  # no silent English
    found = find_template(tmp_path, "anything", "mcq", "zero_shot", "id", fallback="en")
    assert found.text == "{question}\n{options}"  # trailing newline stripped; declared fallback
    (tmp_path / "prompts/default/mcq/cot.en.txt").write_text("{question} only")
    with pytest.raises(TemplateError, match="options"):
        find_template(tmp_path, "x", "mcq", "cot", "en")
