"""The wire transport's stored route: no litellm import in the stage, litellm's answers kept.

The first run of a config resolves its route with litellm and stores it; every later process
reads it and never imports litellm, with the same answers, usage and cost (issue 47).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cultureqa.core.runlog import runlog_dir
from cultureqa.llm.api.chat_client import ChatClient, ChatConfig, MissingKey
from cultureqa.llm.api.retry import RetryConfig
from cultureqa.llm.api.wire_route import PRICE_CHECKED_TOKENS, load_route, route_path
from cultureqa.llm.api.wire_transport import WireTransport
from cultureqa.llm.base import GenerateRequest, Message
from cultureqa.testing import FakeOpenAIServer
from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[2]
RETRY = RetryConfig(attempts=3, initial_wait_s=0.01, max_wait_s=0.1, timeout_s=5.0)

CLIENT = """
import asyncio, json, sys
from cultureqa.llm.api.chat_client import ChatClient, ChatConfig
from cultureqa.llm.api.retry import RetryConfig
from cultureqa.llm.base import GenerateRequest, Message

config = ChatConfig(**json.loads(sys.argv[1]), retry=RetryConfig(timeout_s=5.0))
client = ChatClient(config)
requests = [
    GenerateRequest(messages=(Message("user", f"question {i} " * (1 + i % 4)),), max_tokens=8)
    for i in range(int(sys.argv[2]))
]

async def go():
    try:
        return await client.generate(requests)
    finally:
        await client.aclose()

out = asyncio.run(go())
print(json.dumps({
    "replies": [[r.text, r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.cost_usd]
                for r in out],
    "litellm": sorted(m for m in sys.modules if m.split(".")[0] == "litellm")[:3],
    "imported_for": client.stats.as_dict()["litellm_imported_for"],
}))
"""


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CULTUREQA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CULTUREQA_TEST_KEY", "sk-test")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _client(fields: dict[str, object], n: int) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, json.dumps(fields), str(n)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert isinstance(result, dict)
    return result


def _in_process(config: ChatConfig, n: int) -> list[list[object]]:
    client = ChatClient(config)
    requests = [
        GenerateRequest(messages=(Message("user", f"question {i} " * (1 + i % 4)),), max_tokens=8)
        for i in range(n)
    ]

    async def go() -> list[list[object]]:
        try:
            out = await client.generate(requests)
        finally:
            await client.aclose()
        return [
            [r.text, r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.cost_usd]
            for r in out
        ]

    return asyncio.run(go())


def test_a_stored_route_sends_without_litellm_and_gives_litellms_answers_usage_and_cost() -> None:
    """Cold process: litellm imported once for the route. Warm process: litellm never imported.
    Both equal the litellm transport's replies, tokens and cost (gpt-4o, litellm's price)."""
    with FakeOpenAIServer(responder=lambda m: f"answer {len(str(m[-1]['content']))} B") as server:
        fields = {
            "model_id": "gpt-4o",
            "litellm_model": "openai/gpt-4o",
            "api_key_env": "CULTUREQA_TEST_KEY",
            "concurrency": 4,
        }
        cold = _client({**fields, "transport": "wire", "wire_base": server.api_base}, 12)
        warm = _client({**fields, "transport": "wire", "wire_base": server.api_base}, 12)
        litellm = _in_process(
            ChatConfig(**fields, api_base=server.api_base, retry=RETRY),  # type: ignore[arg-type]
            12,
        )
        assert server.hits == 36
    assert cold["litellm"] and cold["imported_for"] == {"route": 1}
    assert warm["litellm"] == [] and warm["imported_for"] == {}
    assert cold["replies"] == warm["replies"] == litellm
    assert all(cost > 0 for *_, cost in litellm)  # priced by litellm's table, not a miss read as 0


def test_the_evaluate_stage_on_a_stored_route_never_imports_litellm(tmp_path: Path) -> None:
    """The real stage, twice: the second run reads the stored route; litellm stays unimported,
    the run record says why it was imported (or that it was not) and the cost is the same."""
    probe = tmp_path / "modules.json"
    wrapper = (
        "import atexit, json, runpy, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'stages')!r})\n"
        f"atexit.register(lambda: open({str(probe)!r}, 'w').write(json.dumps("
        "sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'pandas'))[:1])))\n"
        f"sys.argv = [{str(ROOT / 'stages' / 'evaluate.py')!r}, '--benchmark', 'synthetic',"
        " '--model', 'model']\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    records, imported = [], []
    with FakeOpenAIServer() as server:
        for k in range(2):
            ws = make_api_workspace(
                ROOT,
                tmp_path / f"ws{k}",
                20,
                server.api_base,
                4,
                "CULTUREQA_TEST_KEY",
                transport="wire",
            )
            env = {**stage_env(ws), "CULTUREQA_CACHE_DIR": os.environ["CULTUREQA_CACHE_DIR"]}
            done = subprocess.run(
                [sys.executable, "-c", wrapper], cwd=ws, env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, done.stderr
            imported.append(json.loads(probe.read_text()))
            side = runlog_dir(ws / "data/eval/synthetic/model", ws)
            records.append(json.loads((side / "run.json").read_text()))
    first, second = (r["api"]["client"]["litellm_imported_for"] for r in records)
    assert first == {"route": 1} and second == {}
    assert "litellm" not in " ".join(imported[1]), imported
    assert records[0]["model_calls"] == records[1]["model_calls"] == 20


def test_the_stored_route_names_the_key_variable_and_holds_no_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """deepseek/: litellm reads DEEPSEEK_API_KEY; the file says so and never holds its value."""
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-secret-42")
    config = ChatConfig(model_id="ds", litellm_model="deepseek/deepseek-chat", transport="wire")
    transport = WireTransport(config)
    asyncio.run(transport.prepare())
    asyncio.run(transport.aclose())
    text = route_path(config).read_text()
    assert "sk-deepseek-secret-42" not in text
    route = load_route(config)
    assert route is not None and route.key_env == "DEEPSEEK_API_KEY"
    assert route.base and route.base.startswith("https://api.deepseek.com")
    again = WireTransport(config)  # a later process: the stored route, no litellm
    asyncio.run(again.prepare())
    asyncio.run(again.aclose())
    assert again.sent_key == "sk-deepseek-secret-42" and not again.litellm_imports
    monkeypatch.delenv("DEEPSEEK_API_KEY")
    with pytest.raises(MissingKey, match="DEEPSEEK_API_KEY"):
        WireTransport(config).check_credentials()


def test_an_endpoint_override_in_the_environment_resolves_a_new_route(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """litellm reads DEEPSEEK_API_BASE: setting it must not reuse the route stored without it."""
    config = ChatConfig(model_id="ds", litellm_model="deepseek/deepseek-chat", transport="wire")
    before = route_path(config)
    monkeypatch.setenv("DEEPSEEK_API_BASE", "http://127.0.0.1:9/v1")
    assert route_path(config) != before
    transport = WireTransport(config)
    asyncio.run(transport.prepare())
    asyncio.run(transport.aclose())
    assert transport._http is not None and transport._http.url.startswith("http://127.0.0.1:9/")


def test_what_the_route_does_not_answer_is_asked_of_litellm_and_counted() -> None:
    """A price past the checked range and a new decoding import litellm; each reason counted."""
    config = ChatConfig(model_id="gpt-5", litellm_model="openai/gpt-5", transport="wire",
                        wire_base="https://api.openai.com/v1")  # fmt: skip
    first = WireTransport(config)
    asyncio.run(first.prepare())
    asyncio.run(first.aclose())
    request = GenerateRequest(messages=(Message("user", "q"),), max_tokens=7)
    stored = first._body(request)
    later = WireTransport(config)
    asyncio.run(later.prepare())
    asyncio.run(later.aclose())
    assert later._body(request) == stored and not later.litellm_imports  # decoding stored
    assert stored["max_completion_tokens"] == 7 and "temperature" not in stored
    assert later.price(1000, 1000) == first._litellm.price(1000, 1000)
    assert not later.litellm_imports
    big = PRICE_CHECKED_TOKENS + 1
    assert later.price(big, 0) == first._litellm.price(big, 0)
    assert later.litellm_imports == {"price": 1}
