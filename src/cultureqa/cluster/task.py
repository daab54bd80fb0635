"""One array task: clone the sweep's commit, run its experiment, push it; the exit code says how.

Run by the task script ``cultureqa slurm submit`` writes (``python -m cultureqa.cluster.task
SWEEP_JSON``), with ``SLURM_ARRAY_TASK_ID`` choosing the experiment. The workspace is a fresh
clone of the team's git remote in the sweep's folder: DVC's experiments need a git repository of
their own per process, and a clone is what another node can make. Its DVC cache is the
project's (shared file system), so outputs already computed there are not computed again.

The task's environment is the submitting shell's (``sbatch`` exports it): the response store
(``CULTUREQA_STORE_URL``, which ``submit`` requires to be PostgreSQL, so that every task shares
one store, its leases and its team budget), the MLflow server, API keys.

Exit codes: 0 done and pushed; the failing command's code otherwise (the accounting keeps it);
the workspace is kept on failure (its path is in the log) and removed on success.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from cultureqa.cluster.sweep import Sweep

_DROP = ("DVC_ROOT", "DVC_EXP_NAME", "DVC_EXP_BASELINE_REV", "CULTUREQA_STATE_DIR")
"""Set by an enclosing DVC run or by the submitting shell's own project; a task has its own."""


def _step(ws: Path, env: dict[str, str], *args: str) -> int:
    """Run one command in the workspace, its output into the task's log; its exit code."""
    print(f"[{time.strftime('%H:%M:%S')}] $ {' '.join(args)}", flush=True)
    return subprocess.run(list(args), cwd=ws, env=env, check=False).returncode


def run_task(sweep_file: Path, index: int) -> int:
    """Run experiment ``index`` of the sweep; 0 once it is pushed."""
    sweep = Sweep.load(sweep_file)
    exp = sweep.experiments[index]
    job = os.environ.get("SLURM_ARRAY_JOB_ID") or os.environ.get("SLURM_JOB_ID") or "local"
    ws = sweep.folder / "work" / f"{exp.name}.{job}"
    env = {k: v for k, v in os.environ.items() if k not in _DROP}
    env["DVC_NO_ANALYTICS"] = "1"
    print(f"task {index}: experiment {exp.name} ({exp.label()}) in {ws}", flush=True)
    if ws.exists():
        shutil.rmtree(ws)
    ws.parent.mkdir(parents=True, exist_ok=True)
    dvc = str(Path(sys.executable).parent / "dvc")
    steps = [
        ("git", "clone", "--quiet", "--no-checkout", sweep.remote_url, str(ws)),
        ("git", "checkout", "--quiet", "--detach", sweep.commit),
        (dvc, "cache", "dir", "--local", sweep.cache),
        (dvc, "exp", "run", "--pull", "--name", exp.name,
         *(a for o in exp.overrides for a in ("-S", o))),
        (dvc, "exp", "push", sweep.remote, exp.name),
    ]  # fmt: skip
    for i, step in enumerate(steps):
        code = _step(ws if i else ws.parent, env, *step)
        if code != 0:
            print(f"task {index}: {step[0]} {step[1]} exited {code}; workspace kept: {ws}")
            return code
    print(f"task {index}: experiment {exp.name} pushed to {sweep.remote}", flush=True)
    shutil.rmtree(ws, ignore_errors=True)
    return 0


def main() -> int:
    """``python -m cultureqa.cluster.task SWEEP_JSON`` inside an array task."""
    task = os.environ.get("SLURM_ARRAY_TASK_ID")
    if len(sys.argv) != 2 or task is None:
        print("usage: SLURM_ARRAY_TASK_ID=N python -m cultureqa.cluster.task SWEEP_JSON")
        return 2
    return run_task(Path(sys.argv[1]), int(task))


if __name__ == "__main__":
    sys.exit(main())
