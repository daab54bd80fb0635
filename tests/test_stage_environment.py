"""A stage started by a Python without the project's packages says so in one line (rc 2).

DVC runs each stage's ``python`` from the caller's PATH, so ``.venv/bin/dvc repro`` without an
activated environment starts the system Python: every stage script imports ``_environment``
before pandas or cultureqa, and that import turns the missing packages into one line.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "stages").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_the_environment_check_comes_before_any_project_or_data_import(script: Path) -> None:
    imports = [
        n for n in ast.parse(script.read_text(encoding="utf-8")).body
        if isinstance(n, ast.Import | ast.ImportFrom)
    ]  # fmt: skip
    names = [
        (n.module or "") if isinstance(n, ast.ImportFrom) else n.names[0].name for n in imports
    ]
    assert "_environment" in names, f"{script.name} does not import _environment"
    first_heavy = next(
        i for i, name in enumerate(names) if name.split(".")[0] in {"cultureqa", "pandas", "numpy"}
    )
    assert names.index("_environment") < first_heavy


def test_a_python_without_the_packages_gets_one_line(tmp_path: Path) -> None:
    """Planted: an isolated interpreter (-I: no site-packages of the venv, no PYTHONPATH)."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    done = subprocess.run(
        [str(bare / "bin" / "python"), "stages/params_check.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "source .venv/bin/activate" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
