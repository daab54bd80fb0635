"""LLM item construction: strict parsing, rejection with reasons, retries, attempt log.

Unit tests drive a ScriptedModel; the integration tests go through the real ChatClient to a
fake OpenAI-compatible server on 127.0.0.1 with scripted replies.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.cases.construct import (
    ATTEMPT_COLUMNS,
    RETRY_NOTE,
    TYPED_COLUMNS,
    TYPES,
    ConstructConfig,
    ItemRejected,
    build_request,
    construct_items,
    load_construct_template,
    parse_item,
)
from cultureqa.evaluation.parsing import EMPTY_ERROR
from cultureqa.evaluation.prompts import Template
from cultureqa.llm.api.chat_client import ChatClient, ChatConfig
from cultureqa.llm.api.retry import RetryConfig
from cultureqa.llm.base import GenerateRequest, GenerateResponse
from cultureqa.llm.cached import CachedClient
from cultureqa.llm.fake import ScriptedModel
from cultureqa.llm.store import open_store
from cultureqa.testing import FakeOpenAIServer, FaultPlan

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[2]


def _options(**override: str) -> dict[str, str]:
    base = {t: f"Distractor of type {t} explaining the behaviour in some detail." for t in TYPES}
    base["F"] = "Tipping is not customary because attentive service is already part of the price."
    return {**base, **override}


def _reply(
    options: dict[str, str] | None = None, question: str = "Why is the tip returned?"
) -> str:
    return json.dumps({"question": question, "options": options or _options()})


VALID = _reply()
FENCED = f"Here is the item:\n```json\n{VALID}\n```\nHope this helps."
MALFORMED = '{"question": "Why?", "options": {"A": "x", "B": '
MISSING_E = _reply({k: v for k, v in _options().items() if k != "E"})
DUPLICATED_B = VALID.replace('"A":', '"B": "A second option claiming type B.", "A":', 1)


def _cases(n: int = 1) -> pd.DataFrame:
    rows = [
        {"case_id": f"c{i}", "country": "Japan", "domain": "economy",
         "narrative": f"Narrative {i}: a waiter returns a tip.",
         "commentary": "Service is included.", "differences": "Japan: no tips. China: no tips."}
        for i in range(1, n + 1)
    ]  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def template() -> Template:
    return load_construct_template(ROOT)


def _run(client: Any, template: Template, cases: pd.DataFrame, attempts: int = 3) -> Any:
    config = ConstructConfig(max_attempts=attempts, max_tokens=512)
    return asyncio.run(construct_items(cases, client, template, config))


# --- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        VALID,
        FENCED,
        f"<think>Let me plan the six options.</think>\n{VALID}",
        f"Sure! {VALID} Let me know if you need changes.",
        json.dumps(
            {"question": "Why?", "options": [{"type": t, "text": o} for t, o in _options().items()]}
        ),
        json.dumps(
            {"question": "Why?", "options": {f"Type {t}": o for t, o in _options().items()}}
        ),
    ],
    ids=["bare", "fenced", "think", "prose", "list", "labelled-keys"],
)
def test_parse_accepts_json_in_its_usual_wrappings(text: str) -> None:
    item = parse_item("c1", text)
    assert set(item.options) == set(TYPES)
    assert item.options["F"].startswith("Tipping is not customary")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (MALFORMED, "malformed output"),
        ("I cannot help with that.", "malformed output: no JSON object found"),
        (MISSING_E, r"missing type\(s\) \['E'\]"),
        (DUPLICATED_B, r"duplicated type\(s\) \['B'\]"),
        (json.dumps({"question": "Why?", "options": [{"type": "A", "text": "one"}] * 2}),
         r"duplicated type\(s\) \['A'\]"),
        (_reply({**_options(), "G": "An extra seventh option."}), r"unknown type\(s\)"),
        (_reply(_options(C="  ")), r"empty option\(s\) for type\(s\) \['C'\]"),
        (_reply(_options(F="Because of cultural differences between Japan and China.")),
         "vague metalanguage"),
        (_reply(_options(F="Different cultures, different habits.")), "vague|too short"),
        (_reply(_options(D=_options()["A"])), "identical text"),
        (_reply(question=""), "empty 'question'"),
        ('[{"question": "Why?"}]', "must be a JSON object"),
    ],
    ids=["malformed", "refusal", "missing-type", "duplicated-key", "duplicated-list",
         "unknown-type", "empty-option", "vague", "vague-short", "same-text", "no-question",
         "not-object"],
)  # fmt: skip
def test_parse_rejects_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(ItemRejected, match=reason):
        parse_item("c1", text)


def test_template_renders_case_fields_and_json_shape(template: Template) -> None:
    request = build_request(_cases().iloc[0].to_dict(), template, ConstructConfig())
    prompt = request.messages[0].content
    assert "Narrative 1: a waiter returns a tip." in prompt and "Country: Japan" in prompt
    assert '{"question": "...", "options": {"A": "...",' in prompt
    assert request.template_version and request.max_tokens == 4096


# --- construction loop with a scripted model -------------------------------------------------


def test_valid_reply_is_accepted_first_time(template: Template) -> None:
    model = ScriptedModel("constructor", [VALID])
    result = _run(model, template, _cases(2))
    assert list(result.items.columns) == list(TYPED_COLUMNS)
    assert list(result.items["case_id"]) == ["c1", "c2"]
    assert (result.items["origin"] == "llm").all()
    assert (result.items["model"] == "constructor").all()
    assert list(result.attempts.columns) == list(ATTEMPT_COLUMNS)
    assert list(result.attempts["status"]) == ["ok", "ok"]
    assert result.failed == () and result.rejections.empty


@pytest.mark.parametrize(
    ("bad", "reason"),
    [(MALFORMED, "malformed"), (MISSING_E, "missing type"), (DUPLICATED_B, "duplicated type")],
)
def test_rejected_reply_is_retried_with_the_reason(
    template: Template, bad: str, reason: str
) -> None:
    model = ScriptedModel("m", [bad, VALID])
    result = _run(model, template, _cases())
    assert list(result.attempts["status"]) == ["rejected", "ok"]
    assert reason in result.rejections.loc[0, "reason"]
    assert result.rejections.loc[0, "raw"] == bad
    assert result.items.loc[0, "attempts"] == 2
    retry = model.generate_calls[1].messages
    assert [m.role for m in retry] == ["user", "assistant", "user"]
    assert retry[1].content == bad and reason in retry[2].content


def test_case_that_never_validates_is_reported_not_dropped_silently(template: Template) -> None:
    model = ScriptedModel("m", [VALID, MISSING_E, MISSING_E, MISSING_E])
    result = _run(model, template, _cases(2), attempts=3)
    assert list(result.items["case_id"]) == ["c1"]
    assert result.failed == ("c2",)
    assert len(result.rejections) == 3 and set(result.rejections["case_id"]) == {"c2"}
    assert list(result.attempts["attempt"]) == [1, 1, 2, 3]


def test_an_empty_reply_is_rejected_as_empty_and_retried_with_the_reason(
    template: Template,
) -> None:
    model = ScriptedModel("m", ["", VALID])
    result = _run(model, template, _cases())
    assert list(result.attempts["status"]) == ["rejected", "ok"]
    assert result.rejections.loc[0, "reason"] == EMPTY_ERROR
    retry = model.generate_calls[1].messages  # differs from the first: the store's "" is not reused
    assert retry[1].content == "" and EMPTY_ERROR in retry[2].content


def test_transport_errors_are_retried_without_feedback(template: Template) -> None:
    replies: list[str | GenerateResponse] = [
        GenerateResponse(None, status="error", error="Timeout: slow"),
        VALID,
    ]
    model = ScriptedModel("m", replies)
    result = _run(model, template, _cases())
    assert list(result.attempts["status"]) == ["error", "ok"]
    assert result.attempts.loc[0, "reason"] == "Timeout: slow"
    assert model.generate_calls[0] == model.generate_calls[1]


def test_rerun_through_the_store_replays_rejections_without_calls(
    template: Template, tmp_path: Path
) -> None:
    """Retry requests differ from first requests, so stored replies reproduce the whole run."""
    store = open_store(tmp_path / "responses.sqlite")
    first = CachedClient(ScriptedModel("m", [MALFORMED, VALID]), store, {"backend": "scripted"})
    before = _run(first, template, _cases())

    def fail(_: GenerateRequest) -> str:
        raise AssertionError("a stored request reached the model")

    again = CachedClient(ScriptedModel("m", fail), store, {"backend": "scripted"})
    after = _run(again, template, _cases())
    store.close()
    assert again.calls == 0 and first.calls == 2
    pd.testing.assert_frame_equal(before.items, after.items)
    assert list(after.attempts["status"]) == ["rejected", "ok"]
    assert after.attempts["cached"].all()


# --- the real litellm client against the fake OpenAI-compatible server -----------------------


def _litellm(server: FakeOpenAIServer, attempts: int = 2) -> ChatClient:
    return ChatClient(
        ChatConfig(
            model_id="fake-constructor",
            litellm_model="openai/fake-constructor",
            api_base=server.api_base,
            api_key_env=None,  # a keyless server: a named but unset variable is an error
            concurrency=4,
            retry=RetryConfig(attempts=attempts, initial_wait_s=0.01, max_wait_s=0.1, timeout_s=5),
        )
    )


def _scripted(first: dict[str, str]) -> Callable[[list[dict[str, Any]]], str]:
    """First reply per case from ``first`` (keyed by narrative marker); retries get VALID."""

    def respond(messages: Sequence[dict[str, Any]]) -> str:
        if len(messages) > 1:
            return VALID
        prompt = str(messages[0]["content"])
        return next(reply for marker, reply in first.items() if marker in prompt)

    return respond


def test_construction_over_http_with_scripted_faults(template: Template) -> None:
    first = {
        "Narrative 1:": VALID,
        "Narrative 2:": FENCED,
        "Narrative 3:": MALFORMED,
        "Narrative 4:": MISSING_E,
        "Narrative 5:": DUPLICATED_B,
    }
    with FakeOpenAIServer(responder=_scripted(first)) as server:
        result = _run(_litellm(server), template, _cases(5))
        records = list(server.records)
    assert list(result.items["case_id"]) == ["c1", "c2", "c3", "c4", "c5"]
    assert list(result.items["attempts"]) == [1, 1, 2, 2, 2]
    assert (result.items["model"] == "fake-constructor").all()
    reasons = dict(zip(result.rejections["case_id"], result.rejections["reason"], strict=True))
    assert reasons["c3"].startswith("malformed output")
    assert "missing type(s) ['E']" in reasons["c4"]
    assert "duplicated type(s) ['B']" in reasons["c5"]
    assert len(records) == 8
    retries = [r.messages for r in records if len(r.messages) == 3]
    assert len(retries) == 3
    note = RETRY_NOTE.split("{reason}")[0]
    assert all(m[2]["content"].startswith(note) for m in retries)
    assert (result.attempts["prompt_tokens"] > 0).all()


def test_broken_http_body_is_an_error_attempt_then_retried(template: Template) -> None:
    plan = FaultPlan(script=["malformed", "ok"])
    with FakeOpenAIServer(responder=lambda m: VALID, faults=plan) as server:
        result = _run(_litellm(server, attempts=1), template, _cases())
    assert list(result.attempts["status"]) == ["error", "ok"]
    assert result.failed == ()
