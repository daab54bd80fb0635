"""The model seam reads top-down (issue 33 item 9): no import circle among config, spend, llm/.

Every import counts, inside functions and under ``TYPE_CHECKING`` too: a lazy import hides a
circle from the interpreter, not from a reader.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _modules() -> dict[str, Path]:
    found = {}
    for path in (SRC / "cultureqa").rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _in_scope(name: str) -> bool:
    """config, spend and the model layer; not the response store's own modules.

    The store's facade (``llm/store/__init__.py``) picks its backend module by configuration,
    and the backends import the facade's types: a plug-in seam of its own, below everything here.
    """
    if name.startswith("cultureqa.llm.store"):
        return False
    return name in ("cultureqa.core.config", "cultureqa.core.spend") or name.startswith(
        "cultureqa.llm."
    )


def import_graph() -> dict[str, set[str]]:
    """Module → the project modules it imports (all of them, wherever the import sits)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cultureqa"):
                base = str(node.module)
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
                targets.update(subs or [base])
            elif isinstance(node, ast.Import):
                targets.update(a.name for a in node.names if a.name in modules)
        graph[name] = {t for t in targets if t != name}
    return graph


def test_config_spend_and_the_model_layer_import_without_a_circle() -> None:
    graph = {m: {t for t in ts if _in_scope(t)} for m, ts in import_graph().items()}
    graph = {m: ts for m, ts in graph.items() if _in_scope(m)}
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError naming the circle


def test_the_edges_that_made_the_circle_are_gone() -> None:
    graph = import_graph()
    gone = [
        ("cultureqa.core.config", "cultureqa.llm.registry"),
        ("cultureqa.core.spend", "cultureqa.core.config"),
        ("cultureqa.core.spend", "cultureqa.llm.cached"),
        ("cultureqa.llm.api.http_transport", "cultureqa.llm.api.chat_client"),
        ("cultureqa.llm.api.litellm_client", "cultureqa.llm.api.chat_client"),
        ("cultureqa.llm.api.batch", "cultureqa.llm.api.litellm_client"),
    ]
    assert [edge for edge in gone if edge[1] in graph[edge[0]]] == []


def test_a_planted_circle_is_found(tmp_path: Path) -> None:
    """The check itself can fail: two modules that import each other are a CycleError."""
    import pytest

    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter({"a": {"b"}, "b": {"a"}}).prepare()
