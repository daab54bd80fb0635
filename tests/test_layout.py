"""Rooms that match the pipeline: small packages, evaluation apart from the build, all documented.

A package of 30 modules mixing build, evaluation and human validation made every edit rerun every
stage and hid where a step lives. These checks keep the split: no package over 20 modules,
ID-MoCQA evaluation (``mocqa/``) never imports its build (the two-hop engine, ``regions/``, the
one two-hop pipeline), and the layout table of docs/pipeline.md names every package and
top-level module.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src/cultureqa"
MAX_MODULES = 20


def packages(src: Path) -> list[Path]:
    """Every package folder under ``src`` (itself excluded), as a path relative to it."""
    return sorted(p.parent.relative_to(src) for p in src.rglob("__init__.py") if p.parent != src)


def oversized(src: Path, limit: int = MAX_MODULES) -> dict[str, int]:
    """Packages holding more than ``limit`` modules of their own (``__init__`` not counted).

    ``src`` itself counts as the package ``.``: its top level holds at most ``limit`` modules too.
    """
    counts = {
        str(p): sum(1 for f in (src / p).glob("*.py") if f.name != "__init__.py")
        for p in [Path("."), *packages(src)]
    }
    return {name: n for name, n in counts.items() if n > limit}


def imports_of(folder: Path, prefix: str) -> list[str]:
    """``file: module`` for each import (lazy ones too) in ``folder`` starting with ``prefix``."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            found += [
                f"{path.name}: {n}" for n in names if n == prefix or n.startswith(prefix + ".")
            ]
    return found


def undocumented(src: Path, readme: str) -> list[str]:
    """Packages (``name/``) and top-level modules (``name.py``) the layout table omits."""
    section = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`([\w/.]+)`", section))
    wanted = [f"{p.as_posix()}/" for p in packages(src)]
    wanted += [f.name for f in sorted(src.glob("*.py")) if f.name != "__init__.py"]
    return [name for name in wanted if name not in listed]


def test_no_package_holds_more_than_twenty_modules() -> None:
    assert oversized(SRC) == {}


def test_mocqa_evaluation_never_imports_the_build() -> None:
    assert imports_of(SRC / "mocqa", "cultureqa.regions") == []
    assert "regions" in {str(p) for p in packages(SRC)}
    assert "mocqa_build" not in {str(p) for p in packages(SRC)}  # one two-hop pipeline


def test_docs_layout_lists_every_package_and_module() -> None:
    assert undocumented(SRC, (ROOT / "docs/pipeline.md").read_text(encoding="utf-8")) == []


def test_the_checks_catch_a_planted_violation(tmp_path: Path) -> None:
    src = tmp_path / "cultureqa"
    for name in ("mocqa", "mocqa_build", "big"):
        (src / name).mkdir(parents=True)
        (src / name / "__init__.py").write_text("")
    (src / "__init__.py").write_text("")
    (src / "io.py").write_text("")
    for i in range(MAX_MODULES + 1):
        (src / "big" / f"m{i}.py").write_text("")
    (src / "mocqa" / "report.py").write_text(
        "def f() -> None:\n    from cultureqa.mocqa_build.stage import StageResult\n"
    )
    assert oversized(src) == {"big": MAX_MODULES + 1}
    assert imports_of(src / "mocqa", "cultureqa.mocqa_build") == [
        "report.py: cultureqa.mocqa_build.stage"
    ]
    readme = "## Layout\n| `mocqa/` | x |\n| `big/` | y |\n## Next\n`mocqa_build/` `io.py`\n"
    assert undocumented(src, readme) == ["mocqa_build/", "io.py"]


def test_the_top_level_counts_as_a_package(tmp_path: Path) -> None:
    src = tmp_path / "cultureqa"
    src.mkdir()
    for i in range(MAX_MODULES + 1):
        (src / f"m{i}.py").write_text("")
    assert oversized(src) == {".": MAX_MODULES + 1}
    (src / "m0.py").unlink()
    assert oversized(src) == {}
