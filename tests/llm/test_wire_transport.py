"""The wire transport against the litellm transport: same answers, usage and cost (issue 47).

Both send to one fake OpenAI-compatible server on 127.0.0.1; the hosted configs of
``conf/model/`` are resolved offline (no request leaves the machine).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from cultureqa.llm.api.chat_client import ChatClient, ChatConfig, MissingKey
from cultureqa.llm.api.litellm_client import LitellmTransport
from cultureqa.llm.api.retry import RetryConfig
from cultureqa.llm.api.wire_transport import WireTransport
from cultureqa.llm.base import GenerateRequest, Message, ModelConfigError
from cultureqa.testing import FakeOpenAIServer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
CONF = Path(__file__).resolve().parents[2] / "conf" / "model"
RETRY = RetryConfig(attempts=3, initial_wait_s=0.01, max_wait_s=0.1, timeout_s=5.0)


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CULTUREQA_CACHE_DIR", str(tmp_path / "cache"))  # stored wire routes
    monkeypatch.setenv("CULTUREQA_TEST_KEY", "sk-test")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test")


def _requests(n: int) -> list[GenerateRequest]:
    return [
        GenerateRequest(messages=(Message("user", f"question {i} " * (1 + i % 4)),), max_tokens=8)
        for i in range(n)
    ]


def _run(config: ChatConfig, n: int) -> list[tuple[str, int, int, float]]:
    client = ChatClient(config)

    async def go() -> list[tuple[str, int, int, float]]:
        try:
            out = await client.generate(_requests(n))
        finally:
            await client.aclose()
        return [
            (r.text, r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.cost_usd)
            for r in out
        ]

    return asyncio.run(go())


def test_wire_gives_litellms_answers_usage_and_cost() -> None:
    """gpt-4o priced from litellm's table on both paths: every reply, token and cent the same."""
    with FakeOpenAIServer(responder=lambda m: f"answer {len(str(m[-1]['content']))} B") as server:
        common = ChatConfig(
            model_id="gpt-4o",
            litellm_model="openai/gpt-4o",
            api_key_env="CULTUREQA_TEST_KEY",
            concurrency=4,
            retry=RETRY,
        )
        via_litellm = _run(dataclasses.replace(common, api_base=server.api_base), 12)
        via_wire = _run(
            dataclasses.replace(common, transport="wire", wire_base=server.api_base), 12
        )
        assert server.hits == 24
    assert via_wire == via_litellm
    assert all(cost > 0 for *_, cost in via_wire)  # priced, not a table miss read as 0
    assert len({text for text, *_ in via_wire}) > 1


def test_wire_takes_litellms_parameters_for_the_model() -> None:
    """gpt-5 takes max_completion_tokens and refuses temperature 0: litellm's mapping."""
    with FakeOpenAIServer(responder=lambda m: "A") as server:
        config = ChatConfig(
            model_id="gpt-5",
            litellm_model="openai/gpt-5",
            api_key_env="CULTUREQA_TEST_KEY",
            transport="wire",
            wire_base=server.api_base,
            retry=RETRY,
        )
        transport = WireTransport(config)
        asyncio.run(_opened(transport))
        body = transport._body(GenerateRequest(messages=(Message("user", "q"),), max_tokens=7))
    assert body["model"] == "gpt-5"
    assert body["max_completion_tokens"] == 7
    assert "max_tokens" not in body and "temperature" not in body


def test_wire_routes_where_litellm_routes_and_reads_the_providers_key() -> None:
    """deepseek/: litellm's OpenAI-compatible base URL and DEEPSEEK_API_KEY, nothing declared."""
    transport = WireTransport(
        ChatConfig(model_id="ds", litellm_model="deepseek/deepseek-chat", transport="wire")
    )
    asyncio.run(_opened(transport))
    assert transport._http is not None
    assert transport._http.url.startswith("https://api.deepseek.com/")
    assert transport._http.url.endswith("/chat/completions")
    assert transport._key == "sk-deepseek-test"


def test_a_native_route_without_a_declared_endpoint_is_refused() -> None:
    """gemini/ goes to Google's own API in litellm: the config must declare the OpenAI endpoint."""
    transport = WireTransport(
        ChatConfig(model_id="g", litellm_model="gemini/gemini-3-flash-preview", transport="wire")
    )
    with pytest.raises(ModelConfigError, match=r"options\.wire_base"):
        asyncio.run(transport.prepare())


def _hosted() -> dict[str, dict[str, object]]:
    """Every model config that calls a hosted provider (litellm backend, no server of ours)."""
    found = {}
    for path in sorted(CONF.glob("*.yaml")):
        cfg = OmegaConf.to_container(OmegaConf.load(path))
        assert isinstance(cfg, dict)
        bases = [str(d) for d in cfg.get("defaults") or []]
        if any("base/api@" in d for d in bases):
            base = OmegaConf.to_container(OmegaConf.load(CONF / "base" / "api.yaml"))
            assert isinstance(base, dict)
            merged = OmegaConf.to_container(OmegaConf.merge(base, cfg))
            assert isinstance(merged, dict)
            if not (merged.get("options") or {}).get("api_base"):
                found[path.stem] = merged
    return found


def _price(transport: WireTransport | LitellmTransport) -> float | str:
    try:
        return transport.price(1000, 1000)
    except ModelConfigError as exc:  # both transports say the same when litellm has no price
        return str(exc)


def test_every_hosted_config_travels_the_wire_and_resolves_offline() -> None:
    """gpt_4o … doubao: ``transport: wire``, an https endpoint each, priced as on litellm."""
    hosted = _hosted()
    assert {"gpt_4o", "gpt_5", "claude_3_7_sonnet", "gemini_3_flash", "deepseek_v3", "kimi_k2",
            "qwen3_5_flash", "doubao_seed"} <= set(hosted)  # fmt: skip
    for name, cfg in hosted.items():
        options = cfg["options"]
        assert isinstance(options, dict)
        assert options["transport"] == "wire", name
        assert not options.get("api_key_env"), name  # litellm and the Batch API read their own
        config = ChatConfig(
            model_id=name,
            litellm_model=str(options["litellm_model"]),
            transport="wire",
            wire_base=options.get("wire_base"),  # type: ignore[arg-type]
            wire_key_env=options.get("wire_key_env"),  # type: ignore[arg-type]
        )
        transport = WireTransport(config)
        asyncio.run(_opened(transport))
        assert transport._http is not None and transport._http.url.startswith("https://"), name
        assert _price(transport) == _price(LitellmTransport(config)), name


async def _opened(transport: WireTransport) -> None:
    await transport.prepare()
    await transport.aclose()


def test_a_declared_key_variable_is_sent_and_its_absence_stops_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``wire_key_env``: its value is the key sent to ``wire_base``; unset, nothing is sent."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")
    with FakeOpenAIServer(responder=lambda m: "A") as server:
        config = ChatConfig(
            model_id="gpt-4o",
            litellm_model="openai/gpt-4o",
            transport="wire",
            wire_base=server.api_base,
            wire_key_env="CULTUREQA_WIRE_KEY",
            retry=RETRY,
        )
        monkeypatch.setenv("CULTUREQA_WIRE_KEY", "sk-wire-test")
        transport = WireTransport(config)
        asyncio.run(_opened(transport))
        assert transport._key == "sk-wire-test"
        monkeypatch.delenv("CULTUREQA_WIRE_KEY")
        with pytest.raises(MissingKey, match="CULTUREQA_WIRE_KEY"):
            _run(config, 2)
        assert server.hits == 0


class _EchoingKey(BaseHTTPRequestHandler):
    """A provider that refuses the key and quotes it back in its error, as some do."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}})
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize(
    ("litellm_model", "key_env", "key"),
    [
        ("openai/gpt-4o", "CULTUREQA_WIRE_KEY", "sk-wire-secret-123"),  # declared variable
        ("deepseek/deepseek-chat", None, "sk-deepseek-test"),  # litellm's reading of it
    ],
)
def test_a_key_the_provider_echoes_reaches_no_error_record(
    monkeypatch: pytest.MonkeyPatch, litellm_model: str, key_env: str | None, key: str
) -> None:
    """The planted provider quotes the key in its 401: each item's error and the breaker's
    record carry ``***``, never the key, whichever way the wire transport found it."""
    monkeypatch.setenv("CULTUREQA_WIRE_KEY", "sk-wire-secret-123")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")  # litellm's own check of the route
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingKey)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        config = ChatConfig(
            model_id="echoing",
            litellm_model=litellm_model,
            transport="wire",
            wire_base=f"http://127.0.0.1:{server.server_address[1]}/v1",
            wire_key_env=key_env,
            retry=RETRY,
        )
        client = ChatClient(config)

        async def go() -> list[str | None]:
            try:
                return [r.error for r in await client.generate(_requests(3))]
            finally:
                await client.aclose()

        errors = asyncio.run(go())
    finally:
        server.shutdown()
        server.server_close()
    records = [*errors, client.stats.stopped]
    assert all(record and "***" in record for record in errors), records
    assert not any(key in (record or "") for record in records), records
