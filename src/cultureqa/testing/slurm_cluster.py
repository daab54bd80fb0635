"""A one-node SLURM cluster in a temp folder, for tests: munge, slurmctld and slurmd on loopback.

Debian's ``slurm-wlm`` and ``munge`` packages (``.ci/run`` installs them). Everything the
daemons write lives in the folder: configuration, state, spool, logs, PID files, munge's socket
(so the machine's own munge, if any, is left alone) and the job completion log
(``JobCompType=jobcomp/filetxt``: the accounting this cluster keeps without a database). The
daemons run as root (``SlurmUser=root``), as CI and the development machine do. They are stopped
by the PIDs they wrote, never by name.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MUNGED = "/usr/sbin/munged"
SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"
MUNGE_KEY = Path("/etc/munge/munge.key")


class NoCluster(RuntimeError):
    """SLURM cannot be started here (not installed, not root, or a daemon did not come up)."""


@dataclass
class SlurmCluster:
    """A running one-node cluster; ``env`` points SLURM's commands at it."""

    folder: Path
    conf: Path

    @property
    def env(self) -> dict[str, str]:
        """The variables ``sbatch``, ``squeue``, ``sacct`` and ``scontrol`` need."""
        return {"SLURM_CONF": str(self.conf)}

    @property
    def jobcomp(self) -> Path:
        """The job completion log (one line per finished job or array task)."""
        return self.folder / "jobcomp.txt"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _conf(folder: Path, host: str) -> str:
    ctld, slurmd = _free_port(), _free_port()
    cpus = os.cpu_count() or 1
    return f"""\
ClusterName=cqtest
SlurmctldHost={host}
SlurmctldPort={ctld}
SlurmdPort={slurmd}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={folder}/munge.sock
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobCompType=jobcomp/filetxt
JobCompLoc={folder}/jobcomp.txt
AccountingStorageType=accounting_storage/none
NodeName={host} CPUs={cpus} RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def available() -> str | None:
    """Why no cluster can start here, or None."""
    missing = [p for p in (MUNGED, SLURMCTLD, SLURMD) if not Path(p).exists()]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "the test cluster's daemons run as root"
    if not MUNGE_KEY.exists():
        return f"{MUNGE_KEY} missing (created when munge is installed)"
    return None


def _stop(pid_file: Path) -> None:
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


@contextmanager
def one_node_cluster(start_within_s: float = 60.0) -> Iterator[SlurmCluster]:
    """Start munge, slurmctld and slurmd; yield once the node is idle; stop them by PID."""
    why = available()
    if why is not None:
        raise NoCluster(why)
    folder = Path(tempfile.mkdtemp(prefix="cq-slurm-"))
    for sub in ("state", "spool"):
        (folder / sub).mkdir()
    host = socket.gethostname().split(".")[0]
    conf = folder / "slurm.conf"
    conf.write_text(_conf(folder, host))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    pid_files = [folder / "slurmd.pid", folder / "slurmctld.pid", folder / "munged.pid"]
    try:
        _start(folder, conf, env, start_within_s)
        yield SlurmCluster(folder, conf)
    finally:
        for pid_file in pid_files:
            _stop(pid_file)
        shutil.rmtree(folder, ignore_errors=True)


def _start(folder: Path, conf: Path, env: dict[str, str], start_within_s: float) -> None:
    """Start the three daemons and wait for the node to be idle; NoCluster when it is not."""
    try:
        subprocess.run(
            [MUNGED, "--force", f"--socket={folder}/munge.sock", f"--pid-file={folder}/munged.pid",
             f"--log-file={folder}/munged.log", f"--seed-file={folder}/munge.seed",
             f"--key-file={MUNGE_KEY}"],
            check=True, capture_output=True,
        )  # fmt: skip
        subprocess.run([SLURMCTLD, "-f", str(conf)], env=env, check=True, capture_output=True)
        subprocess.run([SLURMD, "-f", str(conf)], env=env, check=True, capture_output=True)
    except subprocess.CalledProcessError as exc:
        raise NoCluster(f"{exc.cmd[0]} failed: {exc.stderr!r}") from exc
    deadline = time.monotonic() + start_within_s
    while True:
        done = subprocess.run(
            ["sinfo", "--noheader", "--format=%T"], env=env, capture_output=True, text=True
        )
        if done.stdout.strip() == "idle":
            return
        if time.monotonic() > deadline:
            log = (folder / "slurmctld.log").read_text(errors="replace")[-2000:]
            raise NoCluster(f"node not idle after {start_within_s:.0f} s: {done.stdout}{log}")
        time.sleep(0.5)
