"""SLURM's commands as this project uses them: submit an array, list live tasks, read accounting.

The accounting names each failure: ``sacct`` where the cluster keeps accounting (slurmdbd);
where it keeps none (``AccountingStorageType=accounting_storage/none``, ``sacct`` then exits 1
with "Slurm accounting storage is disabled"), the job completion log that
``JobCompType=jobcomp/filetxt`` writes (one ``key=value`` line per finished job: state, exit
code, signal). A cluster with neither cannot say why a task failed: its state reads
``no record`` and the line says which setting records it.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cultureqa.cluster.sweep import SweepError

_LIVE = ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED")


@dataclass(frozen=True)
class TaskState:
    """What SLURM says of one array task: its state, exit code and the signal that ended it."""

    state: str
    exit_code: int = 0
    signal: int = 0

    @property
    def live(self) -> bool:
        """Pending or running: a resubmission must not run it a second time."""
        return self.state in _LIVE

    def describe(self) -> str:
        """``FAILED (exit 2)``, ``CANCELLED (signal 15)``, ``OUT_OF_MEMORY``, ``RUNNING``."""
        parts = [f"exit {self.exit_code}"] if self.exit_code else []
        parts += [f"signal {self.signal}"] if self.signal else []
        return f"{self.state} ({', '.join(parts)})" if parts else self.state


def _run(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(args), capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise SweepError(
            f"{args[0]}: not found; run this on a SLURM login node (or install slurm-wlm)"
        ) from exc


def sbatch(
    script: Path, tasks: Sequence[int], job_name: str, log: Path, extra: Sequence[str]
) -> str:
    """Submit ``script`` as an array of ``tasks``; returns the job id."""
    args = [
        "sbatch",
        "--parsable",
        f"--array={','.join(str(t) for t in tasks)}",
        f"--job-name={job_name}",
        f"--output={log}",
        *extra,
        str(script),
    ]
    done = _run(args)
    if done.returncode != 0:
        raise SweepError(f"{shlex.join(args)}: {(done.stderr or done.stdout).strip()}")
    return done.stdout.strip().split(";")[0]  # "JOBID" or "JOBID;CLUSTER"


def live_tasks(job_ids: Sequence[str]) -> dict[tuple[str, int], TaskState]:
    """Pending and running tasks of ``job_ids`` (``squeue``); a pending range is expanded."""
    if not job_ids:
        return {}
    done = _run(
        ["squeue", "--noheader", "--array", "--format=%i|%T", f"--jobs={','.join(job_ids)}"]
    )
    if done.returncode != 0:  # squeue fails for ids it no longer knows: none of them is live
        return {}
    out: dict[tuple[str, int], TaskState] = {}
    for line in done.stdout.split():
        ident, _, state = line.partition("|")
        job, _, task = ident.partition("_")
        for index in _indices(task):
            out[(job, index)] = TaskState(state)
    return out


def _indices(text: str) -> list[int]:
    """``3`` → [3]; ``[1,4-5%2]`` → [1, 4, 5] (squeue's pending array ranges)."""
    text = text.strip("[]").split("%")[0]
    out: list[int] = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        if low.isdigit():
            out.extend(range(int(low), int(high or low) + 1))
    return out


def accounting(job_ids: Sequence[str]) -> dict[tuple[str, int], TaskState]:
    """Finished tasks of ``job_ids``: from ``sacct``, else from the job completion file."""
    if not job_ids:
        return {}
    done = _run(
        ["sacct", "--noheader", "--parsable2", "--allocations",
         "--format=JobID,State,ExitCode", f"--jobs={','.join(job_ids)}"]
    )  # fmt: skip
    if done.returncode == 0 and done.stdout.strip():
        return _from_sacct(done.stdout)
    jobcomp = _jobcomp_file()
    return _from_jobcomp(jobcomp.read_text(errors="replace"), job_ids) if jobcomp else {}


def accounting_hint() -> str:
    """What to configure when neither ``sacct`` nor a job completion file has a record."""
    return (
        "no accounting record: configure slurmdbd (sacct) or JobCompType=jobcomp/filetxt "
        "in slurm.conf to have each failure named"
    )


def _from_sacct(text: str) -> dict[tuple[str, int], TaskState]:
    out: dict[tuple[str, int], TaskState] = {}
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) < 3 or "_" not in fields[0]:
            continue
        job, _, task = fields[0].partition("_")
        code, _, sig = fields[2].partition(":")
        for index in _indices(task):
            out[(job, index)] = TaskState(fields[1].split()[0], int(code or 0), int(sig or 0))
    return out


_FIELD = re.compile(r"(\w+)=(\S*)")


def _from_jobcomp(text: str, job_ids: Sequence[str]) -> dict[tuple[str, int], TaskState]:
    """Lines of ``jobcomp/filetxt``; a task that ran twice keeps its last line."""
    wanted = set(job_ids)
    out: dict[tuple[str, int], TaskState] = {}
    for line in text.splitlines():
        fields = dict(_FIELD.findall(line))
        job, task = fields.get("ArrayJobId", ""), fields.get("ArrayTaskId", "")
        if job not in wanted or not task.isdigit():
            continue
        code, _, sig = fields.get("ExitCode", "0:0").partition(":")
        out[(job, int(task))] = TaskState(
            fields.get("JobState", "UNKNOWN"), int(code), int(sig or 0)
        )
    return out


def _jobcomp_file() -> Path | None:
    """``JobCompLoc`` when ``JobCompType`` is ``jobcomp/filetxt`` (``scontrol show config``)."""
    done = _run(["scontrol", "show", "config"])
    conf = dict(
        (k.strip(), v.strip())
        for k, _, v in (line.partition("=") for line in done.stdout.splitlines())
    )
    if conf.get("JobCompType") != "jobcomp/filetxt":
        return None
    path = Path(conf.get("JobCompLoc", ""))
    return path if path.is_file() else None
