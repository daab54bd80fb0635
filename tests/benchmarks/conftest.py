"""A scratch copy of the project for tests that run ``cultureqa benchmark add/check`` in it."""

from __future__ import annotations

import runpy
import shutil
from collections.abc import Callable
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


@pytest.fixture
def contract(project: Path) -> Callable[[str], None]:
    """The contract test on one benchmark of ``project``, run in this process.

    ``cultureqa benchmark add`` runs the project's ``tests/benchmarks/test_contract.py`` with
    ``-k NAME`` in a pytest subprocess, about 5 CPU s each, mostly importing Great Expectations
    and the evaluation path before the five-row check. Tests whose subject is what ``add`` wrote
    (the config, the copied files, ``benchmark check``'s output) pass ``--no-test`` and call this:
    the same test function from the project's copy (its ``ROOT`` is the project), on the same
    config, raising its ``AssertionError`` where the contract breaks. The subprocess itself, its
    exit code and the ``error:`` line ``add`` prints on a failed contract, stays the subject of
    ``test_cli.py::test_add_writes_config_fixture_entries_and_passes_the_contract`` and
    ``test_item_scripts.py::test_add_refuses_a_language_its_rows_contradict``.
    """

    def run(name: str) -> None:
        module = runpy.run_path(str(project / "tests/benchmarks/test_contract.py"))
        module["test_benchmark_contract"](project / "conf/benchmark" / f"{name}.yaml")

    return run
