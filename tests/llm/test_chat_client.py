"""The chat client on both transports (aiohttp ``http`` and ``litellm``) against the fake server.

Every test here runs twice: same retry policy, same accounting, same outputs on both paths.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cultureqa.llm.api.chat_client import ChatClient, ChatConfig
from cultureqa.llm.api.retry import RetryConfig, retry_cause
from cultureqa.llm.base import GenerateRequest, GenerateResponse, Message
from cultureqa.llm.cached import CachedClient
from cultureqa.llm.registry import build_model
from cultureqa.llm.store import open_store
from cultureqa.testing import FakeOpenAIServer, FaultPlan

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
TRANSPORTS = ("http", "litellm")


@pytest.fixture(autouse=True)
def _test_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clients below name CULTUREQA_TEST_KEY; an unset named variable is an error."""
    monkeypatch.setenv("CULTUREQA_TEST_KEY", "sk-test")


def _client(
    api_base: str, transport: str, attempts: int = 4, timeout: float = 5.0, **retry: Any
) -> ChatClient:
    return ChatClient(
        ChatConfig(
            model_id="fake",
            litellm_model="openai/fake-model",
            api_base=api_base,
            api_key_env="CULTUREQA_TEST_KEY",
            transport=transport,  # type: ignore[arg-type]
            concurrency=4,
            ramp_up_s=0.0,
            input_cost_per_token=1e-6,
            output_cost_per_token=2e-6,
            retry=RetryConfig(
                attempts=attempts, initial_wait_s=0.01, max_wait_s=0.5, timeout_s=timeout, **retry
            ),
        )
    )


def _requests(n: int) -> list[GenerateRequest]:
    return [GenerateRequest(messages=(Message("user", f"question {i}"),)) for i in range(n)]


def _run(client: Any, n: int) -> list[GenerateResponse]:
    async def go() -> list[GenerateResponse]:
        try:
            return list(await client.generate(_requests(n)))
        finally:
            await client.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_generates_with_usage_cost_and_one_attempt(transport: str) -> None:
    with FakeOpenAIServer(responder=lambda m: "Jawaban: B") as server:
        out = _run(_client(server.api_base, transport), 3)
    assert [r.status for r in out] == ["ok"] * 3
    assert out[0].text == "Jawaban: B"
    assert out[0].usage.prompt_tokens == 2 and out[0].usage.completion_tokens == 2
    assert out[0].usage.cost_usd == pytest.approx(2 * 1e-6 + 2 * 2e-6)
    assert [(r.attempts, dict(r.retries_by_cause)) for r in out] == [(1, {})] * 3


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_retries_are_counted_by_cause_per_item_and_per_run(transport: str) -> None:
    script = ["429", "500", "malformed", "empty", "hang", "ok"]
    plan = FaultPlan(script=script, retry_after_s=0.01, hang_s=1.0)
    with FakeOpenAIServer(faults=plan) as server:
        client = _client(server.api_base, transport, attempts=8, timeout=0.4, empty_attempts=3)
        (out,) = _run(client, 1)
    causes = {"429": 1, "5xx": 1, "malformed": 1, "empty": 1, "timeout": 1}
    assert out.status == "ok" and out.text == "A" and out.attempts == 6
    assert dict(out.retries_by_cause) == causes
    stats = client.stats.as_dict()
    assert stats["retries_by_cause"] == dict(sorted(causes.items()))
    assert stats["sent"] == 6 and stats["ok"] == 1 and stats["retries"] == 5


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_never_retries_bad_request(transport: str) -> None:
    with FakeOpenAIServer(faults=FaultPlan(script=["400", "ok"])) as server:
        (out,) = _run(_client(server.api_base, transport), 1)
        hits = server.hits
    assert out.status == "error" and (out.error or "").startswith("BadRequestError: ")
    assert hits == 1 and out.attempts == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("empty_attempts", [1, 2])
def test_empty_after_its_retries_is_an_ok_empty_answer_and_counted(
    transport: str, empty_attempts: int
) -> None:
    with FakeOpenAIServer(faults=FaultPlan(script=["empty"] * 3)) as server:
        client = _client(server.api_base, transport, empty_attempts=empty_attempts)
        (out,) = _run(client, 1)
        hits = server.hits
    assert hits == empty_attempts == out.attempts
    assert out.status == "ok" and out.text == "" and out.error is None
    assert dict(out.retries_by_cause) == ({"empty": 1} if empty_attempts == 2 else {})
    assert client.stats.empty == 1 and client.stats.as_dict()["empty"] == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_malformed_reply_is_retried_then_an_error_record(transport: str) -> None:
    with FakeOpenAIServer(faults=FaultPlan(script=["malformed"] * 2)) as server:
        (out,) = _run(_client(server.api_base, transport, attempts=2), 1)
    assert out.status == "error" and out.text is None
    assert dict(out.retries_by_cause) == {"malformed": 1} and out.attempts == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_server_latency_excludes_retry_after_and_slot_waits(transport: str) -> None:
    """Planted: the server takes 0.2 s and first answers 429 with Retry-After 0.3 s."""
    plan = FaultPlan(script=["429", "ok"], retry_after_s=0.3)
    with FakeOpenAIServer(latency_s=0.2, faults=plan) as server:
        (out,) = _run(_client(server.api_base, transport), 1)
    assert out.status == "ok" and dict(out.retries_by_cause) == {"429": 1}
    assert out.wait_s >= 0.3  # the Retry-After sleep is waiting, not server time
    assert 0.2 <= out.server_latency_s < 0.5  # the successful exchange only, not the 0.3 s sleep
    assert out.latency_s >= out.wait_s + out.server_latency_s + 0.2  # the failed exchange too


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_refused_connection_is_retried_as_connection_and_opens_the_breaker(
    transport: str,
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = _client(f"http://127.0.0.1:{port}/v1", transport, attempts=3, breaker_after=2)
    out = _run(client, 3)
    assert all(r.status == "error" for r in out)
    assert set(client.stats.retries) == {"connection"}
    assert client.stats.stopped is not None and "no connection" in client.stats.stopped
    assert client.stats.not_sent > 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_model_calls_equal_requests_the_server_saw(tmp_path: Path, transport: str) -> None:
    plan = FaultPlan(rate_limit=0.2, server_error=0.1, seed=5, retry_after_s=0.01)
    with FakeOpenAIServer(faults=plan) as server:
        store = open_store(tmp_path / "s.sqlite")
        cached = CachedClient(_client(server.api_base, transport, attempts=9), store, {"m": 1})
        out = _run(cached, 30)
        seen = server.hits
        rerun = CachedClient(_client(server.api_base, transport), store, {"m": 1})
        again = _run(rerun, 30)
        store.close()
    assert all(r.status == "ok" for r in out)  # 9 attempts beat 30% transient faults
    assert seen > 30 and cached.calls == seen == sum(r.attempts for r in out)
    assert cached.stats.sent == 30  # items passed on, not requests: model_calls is not this
    assert rerun.calls == 0 and all(r.cached and r.attempts == 0 for r in again)
    assert [r.server_latency_s for r in again] == [r.server_latency_s for r in out]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_items_kept_back_by_the_breaker_are_not_calls(tmp_path: Path, transport: str) -> None:
    with FakeOpenAIServer(faults=FaultPlan(fail_status=401)) as server:
        store = open_store(tmp_path / "s.sqlite")
        client = _client(server.api_base, transport, attempts=2, breaker_after=3)
        cached = CachedClient(client, store, {"m": 1})
        out = _run(cached, 40)
        store.close()
        seen = server.hits
    assert cached.calls == seen < 40 and client.stats.not_sent == 40 - seen
    assert sum((r.error or "").startswith("not sent: ") for r in out) == 40 - seen


def test_switching_transport_keeps_the_store_identity() -> None:
    base = {"id": "m", "backend": "litellm", "price": {"input_per_token": 0.0}}
    opts = {"litellm_model": "hosted_vllm/org/m", "api_base": "http://127.0.0.1:9/v1"}
    lean = build_model({**base, "options": {**opts, "transport": "http"}})
    slow = build_model({**base, "options": {**opts, "transport": "litellm"}})
    assert lean.identity == slow.identity
    assert type(lean.client.transport).__name__ == "HttpTransport"  # type: ignore[attr-defined]
    assert type(slow.client.transport).__name__ == "LitellmTransport"  # type: ignore[attr-defined]


def test_the_http_transport_refuses_configs_it_cannot_serve_truthfully() -> None:
    from cultureqa.llm.base import ModelConfigError

    opts = {"litellm_model": "openai/gpt-4o", "transport": "http"}
    with pytest.raises(ModelConfigError, match=r"needs options\.api_base"):
        build_model({"id": "m", "backend": "litellm", "options": opts})
    with pytest.raises(ModelConfigError, match=r"price\.input_per_token"):
        build_model({"id": "m", "backend": "litellm", "options": {**opts, "api_base": "http://x"}})
    with pytest.raises(ModelConfigError, match="must be http, litellm or wire"):
        build_model({"id": "m", "backend": "litellm", "options": {**opts, "transport": "curl"}})


def test_retry_causes_name_litellm_errors_like_http_ones() -> None:
    class InternalServerError(Exception):
        status_code = 500

    refused = InternalServerError(
        "litellm.InternalServerError: OpenAIException - Connection error."
    )
    assert retry_cause(refused) == "connection"
    assert retry_cause(InternalServerError("boom")) == "5xx"


LEAN_RUN = """
import asyncio, json, sys
from cultureqa.llm.base import GenerateRequest, Message
from cultureqa.llm.registry import build_model
cfg = json.loads(sys.argv[1])
client = build_model(cfg).client
async def go():
    try:
        return await client.generate([GenerateRequest((Message("user", "q"),))])
    finally:
        await client.aclose()
(out,) = asyncio.run(go())
print(json.dumps({"text": out.text, "litellm": "litellm" in sys.modules}))
"""


def test_the_lean_path_never_imports_litellm(repo_root: Path) -> None:
    """The OpenAI-compatible configs of conf/model/ run without litellm in the process."""
    from cultureqa.compose import compose_params

    cfg: Any = compose_params(repo_root / "conf", ["model=qwen2_5_7b"])["model"]
    assert cfg["options"]["transport"] == "http"
    with FakeOpenAIServer(responder=lambda m: "B") as server:
        cfg["options"]["api_base"] = server.api_base
        done = subprocess.run(
            [sys.executable, "-c", LEAN_RUN, json.dumps(cfg)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        sent = [r.messages for r in server.records]
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"text": "B", "litellm": False}
    assert sent == [[{"role": "user", "content": "q"}]]


def test_ok_responses_keep_their_accounting_through_the_store(tmp_path: Path) -> None:
    """dataclasses.asdict stores the accounting; a hit reports no attempts, retries or wait."""
    from cultureqa.llm.cached import generate_to_payload, payload_to_generate

    sent = GenerateResponse("A", attempts=3, retries_by_cause={"429": 2}, wait_s=1.0)
    sent = dataclasses.replace(sent, server_latency_s=0.2)
    hit = payload_to_generate(json.loads(json.dumps(generate_to_payload(sent))))
    assert (hit.attempts, dict(hit.retries_by_cause), hit.wait_s) == (0, {}, 0.0)
    assert hit.server_latency_s == 0.2 and hit.cached


def test_hand_built_payloads_equal_dataclasses_asdict() -> None:
    """Store keys and payloads must not change with the faster serialisation (nor drop a field)."""
    from cultureqa.llm.base import LoglikRequest, Usage
    from cultureqa.llm.cached import generate_to_payload, request_fields

    request = GenerateRequest(
        (Message("system", "s"), Message("user", "q")), 9, 0.5, 3, template_version="t"
    )
    loglik = LoglikRequest("ctx", (" A", " B"))
    for r in (request, loglik):
        assert json.dumps(request_fields(r)) == json.dumps(dataclasses.asdict(r))
    full = GenerateResponse("A", "ok", None, Usage(1, 2, 0.5), 1.5, True, 2, {"429": 1}, 0.2, 0.3)
    assert generate_to_payload(full) == dataclasses.asdict(full)
