"""``collect`` names failures from ``sacct`` on a cluster that keeps accounting (slurmdbd).

The cluster of ``slurm_accounting`` stores its accounting in slurmdbd over a MariaDB server and
writes no job completion log, so every state here comes from ``sacct`` (the job completion path
is tested by ``test_slurm_sweep.py`` on the cluster without a database). An array of three tasks:
one succeeds, one exits 3, one is cancelled with ``scancel`` while it runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from cultureqa.cluster import slurm
from cultureqa.testing.slurm_cluster import SlurmCluster

TASK = 'case "$SLURM_ARRAY_TASK_ID" in 1) exit 3 ;; 2) touch "$MARK"; sleep 300 ;; esac'


def test_sacct_names_each_task_of_an_array(
    slurm_accounting: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(slurm_accounting.conf))
    env = {**os.environ, "MARK": str(tmp_path / "running")}
    job = subprocess.run(
        ["sbatch", "--parsable", "--array=0-2", f"--output={tmp_path}/%A_%a.out", "--wrap", TASK],
        env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    deadline = time.monotonic() + 120
    while not (tmp_path / "running").exists():
        assert time.monotonic() < deadline, "task 2 never started"
        time.sleep(0.2)
    subprocess.run(["scancel", f"{job}_2"], env=env, check=True)
    while set(slurm.accounting([job])) != {(job, 0), (job, 1), (job, 2)} or any(
        state.live for state in slurm.accounting([job]).values()
    ):
        assert time.monotonic() < deadline, f"sacct: {slurm.accounting([job])}"
        time.sleep(0.5)
    config = subprocess.run(
        ["scontrol", "show", "config"], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r"^JobCompType\s*=\s*(jobcomp/)?none", config, re.M), "a jobcomp log is on"
    assert re.search(r"^AccountingStorageType\s*=\s*accounting_storage/slurmdbd", config, re.M)
    states = {task: state.describe() for (_, task), state in slurm.accounting([job]).items()}
    assert states == {0: "COMPLETED", 1: "FAILED (exit 3)", 2: "CANCELLED"}
