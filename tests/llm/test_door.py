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
    "LitellmTransport", "acompletion", "completion", "acreate_batch", "acreate_file",
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
    ("src/cultureqa/llm/chat_client.py", "HttpTransport"),
    ("src/cultureqa/llm/chat_client.py", "LitellmTransport"),
    # the transports' own provider calls (inside the client's slots, retries and reservations)
    ("src/cultureqa/llm/litellm_client.py", "acompletion"),
    ("src/cultureqa/llm/litellm_client.py", "completion"),  # the offline warm-up (mock_response)
    ("src/cultureqa/llm/batch.py", "acreate_file"),
    ("src/cultureqa/llm/batch.py", "acreate_batch"),
    # the callers: evaluation, the ID-MoCQA build's model jobs, case construction
    ("src/cultureqa/evaluation/engine.py", "open_client"),
    ("src/cultureqa/mocqa/models.py", "open_client"),
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
