"""A declared source is a DVC dependency: editing a gold answer makes ``dvc status`` say so."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[2]
STAGE = "validate@island_culture"


def _dvc(cwd: Path, *args: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    dvc = Path(sys.executable).with_name("dvc")
    done = subprocess.run(
        [str(dvc), *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout + done.stderr


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for folder in ("src/cultureqa", "data/sources", "data/knowledge", "expectations", "stages"):
        shutil.copytree(
            ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    params = OmegaConf.load(ROOT / "params.yaml")
    params.benchmarks.island_culture = OmegaConf.load(ROOT / "conf/benchmark/island_culture.yaml")
    params.evaluate.benchmarks = ["island_culture"]
    OmegaConf.save(params, tmp_path / "params.yaml")
    (tmp_path / "metrics/validate").mkdir(parents=True)
    (tmp_path / "metrics/validate/island_culture.json").write_text("{}\n")
    _dvc(tmp_path, "init", "--no-scm", "-q")
    _dvc(tmp_path, "commit", "-f", "-q", STAGE)  # records the dependency hashes in dvc.lock
    return tmp_path


def test_editing_a_gold_answer_marks_the_stage_changed(project: Path) -> None:
    assert "up to date" in _dvc(project, "status", STAGE)
    source = project / "data/sources/examples/layouts/islands/java/music.json"
    source.write_text(source.read_text().replace('"answer": 2', '"answer": 1'))
    status = _dvc(project, "status", STAGE)
    print(status)
    assert STAGE in status and "modified:" in status and "data/sources" in status
