"""Unit-level proofs of the spend guards: breaker, credential check, leases, retry counting."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cultureqa.llm.api.chat_client import ChatClient, ChatConfig, MissingKey
from cultureqa.llm.api.retry import CircuitBreaker, RetryConfig, hopeless_status
from cultureqa.llm.base import GenerateRequest, Message
from cultureqa.llm.cached import CachedClient
from cultureqa.llm.fake import ScriptedModel
from cultureqa.llm.store import StoredResponse, open_store
from cultureqa.testing import FakeOpenAIServer, FaultPlan

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class _Status(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status


def _requests(n: int) -> list[GenerateRequest]:
    return [GenerateRequest((Message("user", f"q{i}"),)) for i in range(n)]


def test_breaker_opens_after_consecutive_hopeless_failures_only() -> None:
    breaker = CircuitBreaker(3)
    for exc in (_Status(401), _Status(401), _Status(429), _Status(500)):
        breaker.failure(exc)  # transient failures neither count nor reset
    assert not breaker.is_open and breaker.consecutive == 2
    breaker.success()
    breaker.failure(_Status(404))
    breaker.failure(_Status(404))
    assert not breaker.is_open
    breaker.failure(_Status(404))
    assert breaker.is_open and breaker.trip == (404, "HTTP 404")


def test_hopeless_statuses_and_refused_connections_are_recognised() -> None:
    assert [hopeless_status(_Status(s)) for s in (400, 401, 403, 404, 429, 500)] == [
        400,
        401,
        403,
        404,
        None,
        None,
    ]
    assert hopeless_status(RuntimeError("OpenAIException - Connection error.")) == 0


def test_a_failing_server_gets_a_few_requests_then_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CULTUREQA_TEST_KEY", "sk-test")
    with FakeOpenAIServer(faults=FaultPlan(fail_status=401)) as server:
        client = ChatClient(
            ChatConfig(
                model_id="m",
                litellm_model="openai/m",
                api_base=server.api_base,
                api_key_env="CULTUREQA_TEST_KEY",
                concurrency=4,
                retry=RetryConfig(attempts=3, initial_wait_s=0.01, breaker_after=5),
            )
        )
        out = asyncio.run(client.generate(_requests(100)))
        sent = server.hits
    assert 5 <= sent <= 5 + 4
    assert client.stats.sent == sent and client.stats.not_sent == 100 - sent
    assert client.stats.stopped is not None and "HTTP 401" in client.stats.stopped
    assert all(r.status == "error" for r in out)
    assert sum((r.error or "").startswith("not sent: ") for r in out) == 100 - sent


def test_retries_are_counted_by_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CULTUREQA_TEST_KEY", "sk-test")
    plan = FaultPlan(script=["429", "500", "ok"], retry_after_s=0.01)
    with FakeOpenAIServer(faults=plan) as server:
        client = ChatClient(
            ChatConfig(
                model_id="m",
                litellm_model="openai/m",
                api_base=server.api_base,
                api_key_env="CULTUREQA_TEST_KEY",
                concurrency=1,
                retry=RetryConfig(attempts=4, initial_wait_s=0.01),
            )
        )
        asyncio.run(client.generate(_requests(1)))
    stats = client.stats.as_dict()
    assert stats["retries"] == 2 and stats["sent"] == 3 and stats["ok"] == 1
    assert stats["retries_by_cause"] == {"429": 1, "5xx": 1}


def test_a_hosted_provider_without_its_key_fails_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = ChatClient(ChatConfig(model_id="gpt", litellm_model="openai/gpt-4o-mini"))
    with pytest.raises(MissingKey, match="OPENAI_API_KEY is not set"):
        asyncio.run(client.generate(_requests(3)))
    assert client.stats.sent == 0


def test_a_keyless_self_hosted_server_needs_no_variable() -> None:
    with FakeOpenAIServer() as server:
        client = ChatClient(
            ChatConfig(model_id="m", litellm_model="openai/m", api_base=server.api_base)
        )
        out = asyncio.run(client.generate(_requests(2)))
    assert [r.status for r in out] == ["ok", "ok"]


def _row(key: str) -> StoredResponse:
    return StoredResponse(key, "generate", "m", "ok", {"text": "A"})


def test_a_lease_held_by_a_live_process_is_not_claimed_twice(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s.sqlite")
    first = store.claim(["k1", "k2"], "owner-a", since=time.time())
    second = store.claim(["k1", "k2", "k3"], "owner-b", since=time.time())
    assert first.claimed == ["k1", "k2"]
    assert second.claimed == ["k3"] and sorted(second.held) == ["k1", "k2"]
    store.put([_row("k1")], owner="owner-a")  # the answer lands and the lease goes with it
    third = store.claim(["k1", "k2"], "owner-b", since=time.time())
    assert list(third.answered) == ["k1"] and third.held == ["k2"] and third.claimed == []
    store.close()


def test_leases_of_a_dead_process_are_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    code = (
        "import sys, time; from cultureqa.llm.store import open_store\n"
        f"s = open_store({str(path)!r}); s.claim(['k1', 'k2'], 'dead', time.time())\n"
        "import os; os._exit(0)  # no close(): the leases stay behind, as after kill -9"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    store = open_store(path)
    claim = store.claim(["k1", "k2"], "me", since=time.time())
    assert claim.claimed == ["k1", "k2"] and claim.taken_over == 2
    store.close()


def test_duplicate_requests_in_one_batch_are_sent_once(tmp_path: Path) -> None:
    model = ScriptedModel(replies=["B"])
    store = open_store(tmp_path / "s.sqlite")
    client = CachedClient(model, store, {"m": 1})
    out = asyncio.run(client.generate(_requests(3) + _requests(3)))
    store.close()
    assert len(model.generate_calls) == 3 and client.stats.duplicates == 3
    assert [r.text for r in out] == ["B"] * 6
