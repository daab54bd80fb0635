"""Keep every declared source file a DVC dependency of the stages that read it.

``dvc.yaml`` lists folders (``data/sources``) as dependencies of ``validate`` and ``evaluate``; a
source outside them would change without DVC noticing ("Data and pipelines are up to date" after
a gold answer was edited). :func:`check_tracked` makes that an error that says how to fix it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from cultureqa.benchmarks.sources import source_files
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.io import SourceError

STAGES = ("validate", "evaluate")
"""The per-benchmark stages whose deps must cover every source file."""


def stage_deps(root: Path) -> dict[str, list[Path]]:
    """Literal (uninterpolated) dependency paths of each of :data:`STAGES` in ``dvc.yaml``."""
    path = root / "dvc.yaml"
    if not path.exists():
        raise SourceError(path, "not found; run from the project root")
    stages: dict[str, Any] = (yaml.safe_load(path.read_text(encoding="utf-8")) or {})["stages"]
    deps = {}
    for name in STAGES:
        stage = stages.get(name) or {}
        listed = (stage.get("do") or stage).get("deps") or []
        deps[name] = [root / str(d) for d in listed if "${" not in str(d)]
    return deps


def untracked(spec: BenchmarkSpec, root: Path) -> dict[str, list[str]]:
    """Source file → the stages whose deps do not cover it (empty when all are covered)."""
    if spec.source.kind == "hf" and not spec.source.path:
        return {}
    deps = stage_deps(root)
    missing: dict[str, list[str]] = {}
    for file, _ in source_files(spec, root):
        resolved = file.resolve()
        for stage, paths in deps.items():
            if not any(resolved == p.resolve() or p.resolve() in resolved.parents for p in paths):
                missing.setdefault(_shown(resolved, root), []).append(stage)
    return missing


def check_tracked(spec: BenchmarkSpec, root: Path) -> None:
    """Raise :class:`SourceError` naming the first untracked source file and the fix."""
    missing = untracked(spec, root)
    if not missing:
        return
    file, stages = next(iter(missing.items()))
    more = f" (and {len(missing) - 1} more file(s))" if len(missing) > 1 else ""
    raise SourceError(
        file,
        f"source of benchmark '{spec.name}' is not a DVC dependency of stage(s) {stages}{more}, "
        "so editing it would not rerun them; move it under data/sources/ or add its folder to "
        f"the deps of {list(STAGES)} in dvc.yaml",
    )


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root.resolve()))
    except ValueError:
        return str(path)
