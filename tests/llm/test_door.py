"""One door to the models (issue 25 item 6): no stage builds a client past the guards.

Every client is built by ``llm.door.open_client`` (store, leases, prompt guard, ledger) on top of
``registry.build_model`` (slots, retries, breaker, the budget's reservations). This test reads
the source of ``src/`` and ``stages/`` and lists every call that builds a client or calls a
provider, so a new call site has to be added here, on purpose, after routing it through the door.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BUILDERS = {
    "open_client", "CachedClient", "build_model", "ChatClient", "BatchClient", "ReplicaPool",
    "LocalHFClient", "RandomBaseline", "FixedPositionBaseline", "HttpTransport",
    "LitellmTransport", "WireTransport", "acompletion", "completion", "acreate_batch",
    "acreate_file",
}  # fmt: skip
"""Calls that build a model client or reach a provider."""

EXPECTED = {
    # the door itself, and the registry of backends it builds from
    ("src/cultureqa/llm/door.py", "build_model"),
    ("src/cultureqa/llm/door.py", "CachedClient"),
    ("src/cultureqa/llm/registry.py", "RandomBaseline"),
    ("src/cultureqa/llm/registry.py", "FixedPositionBaseline"),
    ("src/cultureqa/llm/registry.py", "ChatClient"),
    ("src/cultureqa/llm/registry.py", "BatchClient"),
    ("src/cultureqa/llm/registry.py", "ReplicaPool"),
    ("src/cultureqa/llm/registry.py", "LocalHFClient"),
    ("src/cultureqa/llm/api/chat_client.py", "HttpTransport"),
    ("src/cultureqa/llm/api/chat_client.py", "LitellmTransport"),
    ("src/cultureqa/llm/api/chat_client.py", "WireTransport"),
    # the wire transport's parts: litellm's answers, the http transport's session
    ("src/cultureqa/llm/api/wire_transport.py", "HttpTransport"),
    ("src/cultureqa/llm/api/wire_transport.py", "LitellmTransport"),
    # the transports' own provider calls (inside the client's slots, retries and reservations)
    ("src/cultureqa/llm/api/litellm_client.py", "acompletion"),
    ("src/cultureqa/llm/api/litellm_client.py", "completion"),  # offline warm-up (mock_response)
    ("src/cultureqa/llm/api/batch.py", "acreate_file"),
    ("src/cultureqa/llm/api/batch.py", "acreate_batch"),
    # the callers: evaluation, the ID-MoCQA build's model jobs, case construction
    ("src/cultureqa/evaluation/engine.py", "open_client"),
    ("src/cultureqa/mocqa_shared/models.py", "open_client"),
    ("stages/cases_construct.py", "open_client"),
}


def _calls(path: Path) -> set[str]:
    """Names of the functions and classes ``path`` calls (``a.b()`` counts as ``b``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in BUILDERS:
                found.add(name)
    return found


def test_every_client_is_built_behind_the_door() -> None:
    files = [*sorted((ROOT / "src").rglob("*.py")), *sorted((ROOT / "stages").glob("*.py"))]
    sites = {
        (str(path.relative_to(ROOT)), name)
        for path in files
        if "testing" not in path.parts
        for name in _calls(path)
    }
    assert sites == EXPECTED, (
        f"unexpected: {sorted(sites - EXPECTED)}; gone: {sorted(EXPECTED - sites)}; route new "
        "model calls through cultureqa.llm.door.open_client"
    )


# --- the prompt-length guard (issue 25 item 7) ---------------------------------------------------


def _api_model(api_base: str, **extra: object) -> dict[str, object]:
    return {
        "id": "api", "backend": "litellm", "concurrency": 4,
        "options": {"litellm_model": "openai/api", "api_base": api_base, "transport": "http"},
        "retry": {"attempts": 2, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 5.0},
        "price": {"input_per_token": 1e-6, "output_per_token": 2e-6}, **extra,
    }  # fmt: skip


def test_a_five_million_token_prompt_is_an_item_error_and_never_sent(tmp_path: Path) -> None:
    from cultureqa.core.spend import LEDGER
    from cultureqa.llm.base import GenerateRequest, Message
    from cultureqa.mocqa_shared.models import run_models
    from cultureqa.testing import FakeOpenAIServer

    huge = GenerateRequest(messages=(Message("user", "word " * 5_000_000),), max_tokens=4)
    short = GenerateRequest(messages=(Message("user", "a short question"),), max_tokens=4)
    LEDGER.clear()
    with FakeOpenAIServer() as server:
        answers = run_models({"job": (_api_model(server.api_base), [huge, short])}, tmp_path / "s")
        sent = server.hits
    assert sent == 1  # only the short one
    assert answers["job"][1].status == "ok"
    refused = answers["job"][0]
    assert refused.status == "error" and refused.error is not None
    assert refused.error.startswith("prompt too long: 6,250,000 tokens (characters / 4) > ")
    assert "1,000,000 (default; set max_prompt_tokens to change)" in refused.error
    assert LEDGER.jobs["job"]["cache"]["prompt_too_long"] == 1  # counted by reason


def test_a_configured_maximum_refuses_before_pricing_and_is_counted(tmp_path: Path) -> None:
    """``max_prompt_tokens`` on the model; the refused prompt is not priced by the budget either."""
    from cultureqa.core.spend import BUDGET
    from cultureqa.llm.base import GenerateRequest, Message
    from cultureqa.mocqa_shared.models import run_models
    from cultureqa.testing import FakeOpenAIServer

    long = GenerateRequest(messages=(Message("user", "x" * 4_000),), max_tokens=4)
    BUDGET.reset(1.0)
    try:
        with FakeOpenAIServer() as server:
            model = _api_model(server.api_base, max_prompt_tokens=500)
            [refused] = run_models({"job": (model, [long])}, tmp_path / "s")["job"]
            sent = server.hits
        worst = BUDGET.worst_usd
    finally:
        BUDGET.reset(None)
    assert sent == 0 and worst == 0.0  # never reserved, never sent
    assert refused.error == (
        "prompt too long: 1,000 tokens (characters / 4) > 500 (model.max_prompt_tokens); not sent"
    )
