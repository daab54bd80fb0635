"""The parts of ``cultureqa slurm`` that need no cluster: the sweep's experiments, the refusal
of a store each task would keep for itself, and reading SLURM's job completion log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cultureqa.cluster.slurm import TaskState, _from_jobcomp, _from_sacct, _indices
from cultureqa.cluster.sweep import SweepError, expand

ROOT = Path(__file__).resolve().parents[2]


def test_a_sweep_expands_as_dvc_queues_it_and_is_named_as_dvc_names_it() -> None:
    exps = expand("sw", ["model=a,b", "prompt=x,y", "spend.team=t"])
    assert [e.name for e in exps] == ["sw-1", "sw-2", "sw-3", "sw-4"]
    assert exps[0].overrides == ("model=a", "prompt=x", "spend.team=t")
    assert exps[3].label() == "-S model=b -S prompt=y -S spend.team=t"
    assert [e.name for e in expand("one", ["model=a"])] == ["one"]
    assert expand("sw", ["other.yaml:x=1,2"])[1].overrides == ("other.yaml:x=2",)
    with pytest.raises(SweepError, match=r"-S model=glob\(\*\)"):
        expand("sw", ["model=glob(*)"])


def test_submit_refuses_a_store_each_task_would_keep_for_itself(tmp_path: Path) -> None:
    """The plant: without a PostgreSQL URL, each clone would pay for every prompt again."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src"), "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "cultureqa.cli", "slurm", "submit", "--name", "sw", "-S", "x=1,2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert line.startswith("error: slurm submit: CULTUREQA_STORE_URL is not a postgresql:// URL")
    assert "\n" not in line


def test_the_job_completion_log_and_sacct_name_each_failure() -> None:
    log = (
        "JobId=7 UserId=root(0) JobState=COMPLETED ArrayJobId=5 ArrayTaskId=0 ExitCode=0:0 \n"
        "JobId=8 UserId=root(0) JobState=FAILED ArrayJobId=5 ArrayTaskId=1 ExitCode=2:0 \n"
        "JobId=9 UserId=root(0) JobState=FAILED ArrayJobId=5 ArrayTaskId=3 ExitCode=0:9 \n"
        "JobId=4 UserId=root(0) JobState=OUT_OF_MEMORY ArrayJobId=3 ArrayTaskId=1 ExitCode=0:0 \n"
    )
    found = _from_jobcomp(log, ["5"])
    assert found[("5", 1)].describe() == "FAILED (exit 2)"
    assert found[("5", 3)].describe() == "FAILED (signal 9)"
    assert ("3", 1) not in found  # another sweep's job
    sacct = "5_0|COMPLETED|0:0\n5_2|CANCELLED by 0|0:15\n5_[4-5]|PENDING|0:0\n"
    parsed = _from_sacct(sacct)
    assert parsed[("5", 2)] == TaskState("CANCELLED", 0, 15)
    assert parsed[("5", 5)].live and not parsed[("5", 0)].live
    assert _indices("[1,4-6%2]") == [1, 4, 5, 6]
