"""The litellm transport's own concerns against a fake server on 127.0.0.1.

Retries, accounting and outputs shared with the aiohttp transport are tested on both in
``test_chat_client.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import os
import time

import pytest

from cultureqa.llm.api.chat_client import ChatClient, ChatConfig
from cultureqa.llm.api.retry import RetryConfig
from cultureqa.llm.base import GenerateRequest, Message
from cultureqa.llm.cached import CachedClient
from cultureqa.llm.store import open_store
from cultureqa.testing import FakeOpenAIServer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(autouse=True)
def _test_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clients below name CULTUREQA_TEST_KEY; an unset named variable is an error."""
    monkeypatch.setenv("CULTUREQA_TEST_KEY", "sk-test")


def _client(server: FakeOpenAIServer, attempts: int = 4, timeout: float = 5.0) -> ChatClient:
    return ChatClient(
        ChatConfig(
            model_id="fake",
            litellm_model="openai/fake-model",
            api_base=server.api_base,
            api_key_env="CULTUREQA_TEST_KEY",
            concurrency=4,
            input_cost_per_token=1e-6,
            output_cost_per_token=2e-6,
            retry=RetryConfig(
                attempts=attempts, initial_wait_s=0.01, max_wait_s=0.2, timeout_s=timeout
            ),
        )
    )


def _requests(n: int) -> list[GenerateRequest]:
    return [GenerateRequest(messages=(Message("user", f"question {i}"),)) for i in range(n)]


def test_store_makes_rerun_call_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with FakeOpenAIServer(responder=lambda m: "C") as server:
        for expected_calls in (5, 0):
            store = open_store(tmp_path / "r.sqlite")
            cached = CachedClient(_client(server), store, {"backend": "litellm", "m": "fake"})
            out = asyncio.run(cached.generate(_requests(5)))
            store.close()
            assert cached.calls == expected_calls
            assert [r.text for r in out] == ["C"] * 5
        assert server.hits == 5


def test_loading_litellm_sends_nothing_and_leaves_the_collector_on() -> None:
    """The offline warm-up must never reach the provider, and the collector pause must end."""
    gc.unfreeze()  # earlier tests in this process may have frozen already
    with FakeOpenAIServer() as server:
        client = _client(server)
        assert gc.isenabled() and gc.get_freeze_count() == 0
        client.transport.lib()  # type: ignore[attr-defined]
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0  # litellm's import-time objects left to the permanent gen
        assert server.records == []
        out = asyncio.run(client.generate(_requests(2)))
        assert [r.status for r in out] == ["ok", "ok"]
        assert server.hits == 2


def test_loading_with_a_custom_price_is_quiet_and_logs_through_the_root_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A self-hosted price (no cache prices in litellm's map) must not warn on every run, and
    litellm's own stderr handler must not double what the stage's logging already prints."""
    with FakeOpenAIServer() as server, caplog.at_level(logging.WARNING):
        _client(server).transport.lib()  # type: ignore[attr-defined]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("LiteLLM")] == []
    assert logging.getLogger("LiteLLM").handlers == []


def test_ramp_opens_one_slot_at_a_time_then_runs_all_slots() -> None:
    """Four slots over 0.6 s: the second request waits for the second slot (0.15 s), not for
    the first reply (0.3 s); once open, all four slots are in flight together.

    The ramp's lower bound is taken from the client's start, not from the first request's
    arrival: on a busy machine (parallel test workers) the first arrival can itself be late."""
    with FakeOpenAIServer(responder=lambda m: "ok", latency_s=0.3) as server:
        client = ChatClient(dataclasses.replace(_client(server).config, ramp_up_s=0.6))
        started = time.perf_counter()  # the fake server stamps arrivals with perf_counter
        out = asyncio.run(client.generate(_requests(12)))
        spans = sorted((r.t_start, r.t_end) for r in server.records)
    assert [r.status for r in out] == ["ok"] * 12
    assert spans[1][0] - started >= 0.15 and spans[1][0] - spans[0][0] < 0.27, spans[:2]
    in_flight = [sum(s <= t < e for s, e in spans) for t, _ in spans]
    assert max(in_flight) == 4, in_flight
