"""A tree pulled from a DVC remote is up to date: no stage runs, `dvc.lock` stays as committed.

Machine A runs the IndoCulture chain (baselines only: no model download), commits `dvc.lock` and
pushes the outputs to a local-folder DVC remote standing for a shared one; machine B clones A,
pulls, and must find every stage up to date. Files the project writes at run time beside outputs
(output locks, temp files of atomic writes) must not enter a stage's hash, or B (which has none
of them) would rerun every stage downstream of them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cultureqa.core.runlock import lock_path
from tests.test_dvc_clone import INDOCULTURE, ROOT, _baseline_clone, _sh

COMMIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm"]


def test_files_written_at_run_time_are_dvc_ignored(tmp_path: Path) -> None:
    """The lock beside an output folder and an atomic write's temp file (kept by a killed run)."""
    written = [
        lock_path(Path("data/eval/indoculture/model")),
        Path("data/eval/indoculture/model/.predictions.parquet.k3j2.tmp"),
        Path("data/build/cases/analyze/.overall.parquet.x81a.tmp"),
    ]
    ignored = subprocess.run(
        [str(Path(ROOT / ".venv/bin/dvc")), "check-ignore", "--non-matching", "--details",
         *map(str, written)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    lines = ignored.stdout.strip().splitlines()
    assert len(lines) == len(written) and all(line.startswith(".dvcignore") for line in lines), (
        ignored.stdout + ignored.stderr
    )


@pytest.mark.timeout(900)
def test_a_pulled_clone_finds_every_stage_up_to_date(tmp_path: Path) -> None:
    first = _baseline_clone(tmp_path)
    _sh(first, "dvc", "remote", "add", "-d", "shared", str(tmp_path / "dvc-remote"))
    _sh(first, "dvc", "repro", *INDOCULTURE)
    assert list(first.glob("data/eval/indoculture/.*.cultureqa-lock")), "no lock to ignore"
    _sh(first, "dvc", "push", "--with-deps", *INDOCULTURE)
    _sh(first, "git", "add", "dvc.lock", "metrics", ".dvc/config")
    _sh(first, *COMMIT, "lock and remote")

    second = tmp_path / "b"
    _sh(tmp_path, "git", "clone", "--quiet", str(first), str(second))
    _sh(second, "dvc", "pull", "--with-deps", *INDOCULTURE)
    status = _sh(second, "dvc", "status", *INDOCULTURE)
    assert "Data and pipelines are up to date" in status, status
    repro = _sh(second, "dvc", "repro", *INDOCULTURE)
    assert "Running stage" not in repro, repro
    assert _sh(second, "git", "status", "--porcelain") == ""
