"""A stage started by a Python without the project's packages says so in one line (rc 2).

DVC runs each stage's ``python`` from the caller's PATH, so ``.venv/bin/dvc repro`` without an
activated environment starts the system Python: every stage script imports ``_environment``
before pandas or cultureqa, and that import turns the missing packages into one line.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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


def test_every_stage_command_names_python3() -> None:
    """``python`` is missing on many systems with Python 3; ``python3`` reaches the guard there."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    cmds = {name: (s.get("do", s))["cmd"] for name, s in stages.items()}
    wrong = {name: cmd for name, cmd in cmds.items() if not cmd.startswith("python3 stages/")}
    assert not wrong, wrong


def test_dvc_repro_without_python_on_path_gets_the_guard_line(tmp_path: Path) -> None:
    """Planted: PATH holds only ``python3`` (the system's, no project packages), no ``python``.

    ``.venv/bin/dvc repro`` outside the environment must reach the guard's one line, not the
    shell's ``python: not found``.
    """
    system = shutil.which("python3", path=os.defpath) or "/usr/bin/python3"
    if not Path(system).exists() or Path(system).resolve() == Path(sys.executable).resolve():
        pytest.skip("no system python3 apart from the project's")
    repo, bin_dir = tmp_path / "repo", tmp_path / "bin"
    (repo / "stages").mkdir(parents=True)
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(system)
    for name in ("_environment.py", "params_check.py"):
        shutil.copy(ROOT / "stages" / name, repo / "stages" / name)
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    check = {"cmd": stage["params_check"]["cmd"], "deps": ["stages/params_check.py"]}
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"params_check": check}}))
    dvc = str(Path(sys.executable).parent / "dvc")
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env |= {"DVC_NO_ANALYTICS": "1", "SHELL": "/bin/sh"}
    subprocess.run([dvc, "init", "--no-scm", "-q"], cwd=repo, env=env, check=True, timeout=120)
    done = subprocess.run(
        [dvc, "repro"], cwd=repo, env={**env, "PATH": str(bin_dir)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode != 0
    assert "not found" not in out, out
    guard = [line for line in out.splitlines() if "source .venv/bin/activate" in line]
    assert len(guard) == 1 and guard[0].startswith("error: "), out
    assert not (repo / "dvc.lock").exists()
