"""Provenance stamped on every result file and MLflow run (inspect_ai's EvalSpec idea).

A number without its config, data hash, code revision and package versions cannot be reproduced,
so every artifact carries them.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

TRACKED_PACKAGES = (
    "cultureqa",
    "dvc",
    "hydra-core",
    "omegaconf",
    "mlflow",
    "litellm",
    "great-expectations",
    "pandas",
    "torch",
    "transformers",
)


def file_md5(path: str | Path) -> str:
    """MD5 of a file's bytes: the same hash DVC records for a file dependency."""
    digest = hashlib.md5(usedforsecurity=False)
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


PIPELINE_RECORDS = ("dvc.lock", "metrics")
"""Git-tracked files the pipeline itself writes. DVC deletes a stage's metrics before running it
and rewrites ``dvc.lock`` after every stage, so counting them would mark every run of a clean
checkout dirty; ``dirty`` means uncommitted changes to code, configs or data."""


EXPERIMENT_RECORDS = ("params.yaml",)
"""Written by DVC itself when an experiment starts (the Hydra composition of ``conf/``): inside
an experiment (``DVC_EXP_NAME`` set) its change is the experiment's params, not an uncommitted
edit. A hand edit of params.yaml outside an experiment still counts."""


def git_revision(root: Path) -> dict[str, Any]:
    """Commit and dirty flag of the repository (pipeline records excluded), or nulls outside git."""

    def run(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = run("rev-parse", "HEAD")
    records = PIPELINE_RECORDS + (EXPERIMENT_RECORDS if os.environ.get("DVC_EXP_NAME") else ())
    excluded = [f":(exclude){path}" for path in records]
    status = run("status", "--porcelain", "--untracked-files=no", "--", ".", *excluded)
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def package_versions(names: tuple[str, ...] = TRACKED_PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that shape results."""
    return dict(_package_versions(names))


@functools.cache
def _package_versions(names: tuple[str, ...]) -> dict[str, str]:
    """Read once per process (60 ms: each name scans the installed distributions)."""
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def provenance(root: Path, dataset: dict[str, Any]) -> dict[str, Any]:
    """The provenance block written into result files: what made the result, not when.

    The git revision and DVC experiment name change with every commit and experiment while the
    result does not; they go to the run log (:mod:`cultureqa.core.runlog`), which the track stages
    join back, so DVC outputs hash the same in a fresh clone. ``root`` is kept for callers.
    """
    del root
    return {
        "packages": package_versions(),
        "dataset": dataset,
        "dvc_stage": os.environ.get("DVC_STAGE"),
    }
