"""The response store, the budget and the error boundary import each other one way only.

``llm/store`` → ``errors`` (which holds the store's error lines), and ``spend`` →
``llm/store/pg_budget`` → ``team_budget``, with no way back: lazy imports inside functions count
too, since a circle of lazy imports still breaks when a module is imported first from the other
side.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
WATCHED = ("cultureqa.core.errors", "cultureqa.core.spend", "cultureqa.llm.store")


def module_graph(src: Path) -> dict[str, set[str]]:
    """Each module's imports of other modules under ``src`` (every import statement)."""
    files = {}
    for path in src.rglob("*.py"):
        parts = path.relative_to(src).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        graph[name] = found & set(files)
    return graph


def circles(graph: dict[str, set[str]], watched: tuple[str, ...]) -> list[tuple[str, str]]:
    """Pairs of watched modules or packages that reach each other (a package's own
    submodules importing its ``__init__`` is no circle)."""

    def unit(module: str) -> str:
        return next((w for w in watched if module == w or module.startswith(f"{w}.")), module)

    edges: dict[str, set[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            if unit(module) != unit(target):
                edges.setdefault(unit(module), set()).add(unit(target))

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            here = todo.pop()
            if here == goal:
                return True
            if here not in seen:
                seen.add(here)
                todo.extend(edges.get(here, ()))
        return False

    return [(a, b) for a in watched for b in watched if a < b and reaches(a, b) and reaches(b, a)]


def test_no_circle_between_the_store_the_budget_and_the_error_boundary() -> None:
    assert circles(module_graph(SRC), WATCHED) == []


def test_a_planted_lazy_import_back_is_a_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "cultureqa"
    (pkg / "llm" / "store").mkdir(parents=True)
    (pkg / "core").mkdir()
    for init in (pkg, pkg / "core", pkg / "llm", pkg / "llm" / "store"):
        (init / "__init__.py").write_text("")
    (pkg / "core" / "spend.py").write_text(
        "def f():\n    from cultureqa.llm.store.pg_budget import x\n"
    )
    (pkg / "llm" / "store" / "pg_budget.py").write_text("from cultureqa.llm.store.team import y\n")
    (pkg / "llm" / "store" / "team.py").write_text("from cultureqa.core.spend import Budget\n")
    assert circles(module_graph(tmp_path), WATCHED) == [
        ("cultureqa.core.spend", "cultureqa.llm.store")
    ]
