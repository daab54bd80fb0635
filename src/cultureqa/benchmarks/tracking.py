"""Keep every declared source file a DVC dependency of its own benchmark's ``validate`` stage.

``dvc.yaml`` gives each benchmark its own source folder as a dependency of ``validate@<name>``
(``data/sources/${key}``), and ``evaluate`` depends on validate's output, which records every
source file's MD5. So a file outside that folder would change without DVC noticing ("Data and
pipelines are up to date" after a gold answer was edited), and a shared folder dependency would mark
every benchmark changed when one is added. :func:`check_tracked` makes a source outside the
benchmark's folder (or outside the project) an error that says how to fix it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from cultureqa.benchmarks.source_files import source_files
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.io import SourceError

STAGES = ("validate", "evaluate")
"""The per-benchmark stages of ``dvc.yaml`` whose deps may cover a source file (one must)."""
_NAME = ("${key}", "${item}", "${item.benchmark}")


def stage_deps(root: Path, name: str) -> dict[str, list[Path]]:
    """Dependency paths of each of :data:`STAGES` in ``dvc.yaml`` for benchmark ``name``.

    Outside a DVC project (a scratch copy without ``dvc.yaml``, or one whose stages declare no
    dependencies) nothing tracks files, and the rule left is that the source lies inside the
    project.
    """
    path = root / "dvc.yaml"
    if not path.exists():
        return {"project": [root]}
    stages: dict[str, Any] = (yaml.safe_load(path.read_text(encoding="utf-8")) or {})["stages"]
    deps = {}
    for stage in (s for s in STAGES if s in stages):
        listed = ((stages.get(stage) or {}).get("do") or stages.get(stage) or {}).get("deps") or []
        paths = []
        for dep in map(str, listed):
            for mark in _NAME:
                dep = dep.replace(mark, name)
            if "${" not in dep:
                paths.append(root / dep)
        if listed:
            deps[stage] = paths
    return deps or {"project": [root]}


def untracked(spec: BenchmarkSpec, root: Path) -> dict[str, list[str]]:
    """Source file → the stages whose deps do not cover it (empty when all are covered)."""
    if spec.source.kind == "hf" and not spec.source.path:
        return {}
    deps = stage_deps(root, spec.name)
    missing: dict[str, list[str]] = {}
    for file, _ in source_files(spec, root):
        resolved = file.resolve()
        covered = [
            stage
            for stage, paths in deps.items()
            if any(resolved == p.resolve() or p.resolve() in resolved.parents for p in paths)
        ]
        if not covered:
            missing[_shown(resolved, root)] = [f"{stage}@{spec.name}" for stage in deps]
    return missing


def check_tracked(spec: BenchmarkSpec, root: Path) -> None:
    """Raise :class:`SourceError` naming the first untracked source file and the fix."""
    missing = untracked(spec, root)
    if not missing:
        return
    file, stages = next(iter(missing.items()))
    more = f" (and {len(missing) - 1} more file(s))" if len(missing) > 1 else ""
    folder = f"data/sources/{spec.name}/"
    raise SourceError(
        file,
        f"source of benchmark '{spec.name}' is not a DVC dependency of {stages}{more}, so "
        f"editing it would not rerun them; move it under {folder} (its own dependency; "
        "`cultureqa benchmark add` copies it there) and set source.path to the new place",
    )


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root.resolve()))
    except ValueError:
        return str(path)
