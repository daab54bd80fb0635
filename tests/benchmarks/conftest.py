"""A scratch copy of the project for tests that run ``cultureqa benchmark add/check`` in it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Configs, prompts, suites, sources, fixtures and the contract test, copied under tmp."""
    for folder in ("conf", "prompts", "expectations", "data/sources", "data/knowledge",
                   "tests/fixtures/benchmarks"):  # fmt: skip
        shutil.copytree(ROOT / folder, tmp_path / folder)
    (tmp_path / "tests/benchmarks").mkdir()
    for file in ("params.yaml", "dvc.yaml", "pyproject.toml", "tests/conftest.py",
                 "tests/benchmarks/test_contract.py"):  # fmt: skip
        shutil.copy(ROOT / file, tmp_path / file)
    return tmp_path
