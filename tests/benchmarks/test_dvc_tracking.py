"""A declared source is a DVC dependency: editing a gold answer makes ``dvc status`` say so.

DVC runs in this process through its ``Repo`` API, the calls ``dvc init``, ``dvc commit`` and
``dvc status --json`` make (``status`` returns the dict the CLI prints): what DVC decides is the
subject here, not its command line, and each ``dvc`` process paid about 2 CPU s of imports first.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from cultureqa.core.params_digest import register as register_digest

ROOT = Path(__file__).resolve().parents[2]
STAGE = "validate@island_culture"


def _commit(root: Path, *targets: str) -> None:
    """``dvc commit -f TARGETS``: records the targets' dependency and output hashes in dvc.lock."""
    from dvc.repo import Repo

    with contextlib.chdir(root), Repo(str(root)) as repo:
        for target in targets:  # the CLI commits its targets one by one, as here
            repo.commit(target, force=True)


def _status(root: Path, *targets: str) -> dict[str, Any]:
    """``dvc status --json TARGETS``: each changed stage and what changed; empty when up to date."""
    from dvc.repo import Repo

    with contextlib.chdir(root), Repo(str(root)) as repo:
        status: dict[str, Any] = repo.status(targets=list(targets))
    return status


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
    register_digest()  # the config's ${cultureqa_digest:}, resolved as composing conf/ does
    OmegaConf.save(params, tmp_path / "params.yaml", resolve=True)
    (tmp_path / "metrics/validate").mkdir(parents=True)
    (tmp_path / "metrics/validate/island_culture.json").write_text("{}\n")
    from dvc.repo import Repo

    Repo.init(str(tmp_path), no_scm=True).close()
    _commit(tmp_path, STAGE)
    return tmp_path


def test_editing_a_gold_answer_marks_the_stage_changed(project: Path) -> None:
    assert _status(project, STAGE) == {}  # the CLI prints this as "up to date"
    source = project / "data/sources/island_culture/islands/java/music.json"
    source.write_text(source.read_text().replace('"answer": 2', '"answer": 1'))
    status = _status(project, STAGE)
    print(status)
    changed = [c["changed deps"] for c in status.get(STAGE, []) if "changed deps" in c]
    assert changed and any(
        path.startswith("data/sources") and state == "modified"
        for deps in changed
        for path, state in deps.items()
    ), status


def _placeholders(root: Path, targets: list[str]) -> None:
    """Stand-ins for the targets' missing deps and outs, so ``dvc commit`` can record a lock."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        stages = [s for s in repo.index.stages if s.name.split("@")[0] in targets]
        paths = [Path(o.fs_path) for s in stages for o in (*s.deps, *s.outs) if o.def_path]
    for path in paths:
        if not path.exists() and path.name != "params.yaml":
            target = path if path.suffix else path / "placeholder"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("{}\n")


def test_adding_a_benchmark_changes_only_its_own_stages(project: Path) -> None:
    targets = ["validate", "evaluate", "analyze", "track", "mocqa_evaluate"]
    _placeholders(project, targets)
    _commit(project, *targets)
    assert _status(project, *targets) == {}
    new = project / "data/sources/capitals/capitals.jsonl"
    new.parent.mkdir(parents=True)
    shutil.copy(project / "data/sources/province_capitals/province_capitals.jsonl", new)
    suite = project / "expectations/capitals_items.json"
    shutil.copy(project / "expectations/generic_mcq_items.json", suite)
    params = OmegaConf.load(project / "params.yaml")
    bench = OmegaConf.load(ROOT / "conf/benchmark/province_capitals.yaml")
    bench.name, bench.source.path = "capitals", "data/sources/capitals/capitals.jsonl"
    bench.expectations = "expectations/capitals_items.json"
    params.benchmarks.capitals = bench
    params.evaluate.benchmarks = [*params.evaluate.benchmarks, "capitals"]
    OmegaConf.save(params, project / "params.yaml")
    changed = set(_status(project, *targets))
    # the one track stage logs every benchmark: it runs again, and skips the others' parts
    assert "track" in changed, changed
    changed.discard("track")
    assert changed and all("@capitals" in s for s in changed), changed
