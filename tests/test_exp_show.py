"""`make exps` compares experiments in a terminal: at most 60 columns, what a sweep varies kept.

Plain `dvc exp show` prints every dep path of every stage and the whole params.yaml (DVC's Hydra
integration always writes the full composition there, and DVC lists that file whole whatever the
stages' `params:` name): 287 columns on the default tree. `make exps` drops dep columns and the
params sections a model × prompt sweep does not change. A new top-level params section would slip
into the compact view unannounced, so the test names every param column's section.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPIED = ["Makefile", "dvc.yaml", "dvc.lock", "params.yaml", ".dvcignore", ".dvc/config", "src",
          "stages", "prompts", "data/sources", "data/knowledge", "expectations", "conf",
          "metrics"]  # fmt: skip
FIXED = {"Experiment", "rev", "typ", "Created", "parent", "State", "Executor"}
SWEPT = {"model", "prompt"}


def _run(cwd: Path, *args: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{Path(sys.executable).parent}:"
           f"{os.environ['PATH']}", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    env.pop("DVC_ROOT", None)
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def unexpected_params(header: list[str], metrics: set[str]) -> list[str]:
    """Param columns whose section a model × prompt sweep does not vary."""
    params = [c for c in header if c not in FIXED and c not in metrics]
    return [c for c in params if c.split(":")[-1].split(".")[0] not in SWEPT]


def test_make_exps_fits_a_terminal(tmp_path: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in COPIED:
        src, dst = ROOT / name, tmp_path / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree(src, dst, ignore=ignore) if src.is_dir() else shutil.copy2(src, dst))
    _run(tmp_path, "git", "init", "-q")
    _run(tmp_path, "git", "add", "-A")
    _run(tmp_path, "git", "commit", "-qm", "tree")
    full = next(
        csv.reader(io.StringIO(_run(tmp_path, "dvc", "exp", "show", "--no-pager", "--csv")))
    )
    compact = next(csv.reader(io.StringIO(_run(tmp_path, "make", "-s", "exps", "ARGS=--csv"))))
    metrics = {c for c in full if c.startswith(("accuracy.", "multi_hop.", "max_gap_pp."))}
    assert len(compact) <= 60 < len(full), (len(compact), len(full))
    assert metrics and metrics <= set(compact)
    assert {"model.id", "prompt.style"} <= set(compact)
    assert unexpected_params(compact, metrics) == []


def test_a_new_params_section_is_caught() -> None:
    header = ["Experiment", "accuracy.random.mcq", "model.id", "prompt.style", "extra.knob"]
    assert unexpected_params(header, {"accuracy.random.mcq"}) == ["extra.knob"]
