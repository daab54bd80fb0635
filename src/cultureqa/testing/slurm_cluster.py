"""A one-node SLURM cluster in a temp folder, for tests: munge, slurmctld and slurmd on loopback.

Debian's ``slurm-wlm`` and ``munge`` packages (``.ci/run`` installs them). Everything the
daemons write lives in the folder: configuration, state, spool, logs, PID files, munge's socket
(so the machine's own munge, if any, is left alone) and the job completion log
(``JobCompType=jobcomp/filetxt``: the accounting this cluster keeps without a database). The
daemons run as root (``SlurmUser=root``), as CI and the development machine do. They are stopped
by the PIDs they wrote, never by name.

With ``accounting=True`` the cluster keeps SLURM's accounting as a site does: a MariaDB server
(Debian's ``mariadb-server-core``, its data folder made by ``mariadb-install-db``, on a loopback
port) behind ``slurmdbd`` (``slurmdbd``, ``slurm-wlm-mysql-plugin``), so ``sacct`` answers; the
job completion log is off, so nothing but ``sacct`` can name a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MUNGED = "/usr/sbin/munged"
SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"
SLURMDBD = "/usr/sbin/slurmdbd"
MARIADBD = "/usr/sbin/mariadbd"
INSTALL_DB = "/usr/bin/mariadb-install-db"
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


def _conf(folder: Path, host: str, dbd_port: int | None = None) -> str:
    ctld, slurmd = _free_port(), _free_port()
    cpus = os.cpu_count() or 1
    if dbd_port is None:
        accounting = f"""\
JobCompType=jobcomp/filetxt
JobCompLoc={folder}/jobcomp.txt
AccountingStorageType=accounting_storage/none
"""
    else:
        accounting = f"""\
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePass={folder}/munge.sock
AccountingStoragePort={dbd_port}
"""
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
{accounting}NodeName={host} CPUs={cpus} RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _dbd_conf(folder: Path, host: str, dbd_port: int, db_port: int) -> str:
    return f"""\
DbdHost={host}
DbdAddr=127.0.0.1
DbdPort={dbd_port}
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket={folder}/munge.sock
PidFile={folder}/slurmdbd.pid
LogFile={folder}/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db_port}
StorageUser=root
StorageLoc=slurm_acct_db
"""


def available(accounting: bool = False) -> str | None:
    """Why no cluster can start here, or None."""
    missing = [p for p in (MUNGED, SLURMCTLD, SLURMD) if not Path(p).exists()]
    if missing:
        return f"{', '.join(missing)} not installed (apt-get install slurm-wlm munge)"
    absent = [p for p in (SLURMDBD, MARIADBD, INSTALL_DB) if not Path(p).exists()]
    if accounting and absent:
        return (
            f"{', '.join(absent)} not installed "
            "(apt-get install slurmdbd mariadb-server-core mariadb-client-core)"
        )
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
def one_node_cluster(
    start_within_s: float = 60.0, accounting: bool = False
) -> Iterator[SlurmCluster]:
    """Start munge, slurmctld and slurmd; yield once the node is idle; stop them by PID.

    ``accounting``: also MariaDB and slurmdbd (``sacct`` answers; no job completion log).
    """
    why = available(accounting)
    if why is not None:
        raise NoCluster(why)
    folder = Path(tempfile.mkdtemp(prefix="cq-slurm-"))
    for sub in ("state", "spool"):
        (folder / sub).mkdir()
    host = socket.gethostname().split(".")[0]
    conf = folder / "slurm.conf"
    dbd_port = _free_port() if accounting else None
    conf.write_text(_conf(folder, host, dbd_port))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    pid_files = [folder / "slurmd.pid", folder / "slurmctld.pid", folder / "slurmdbd.pid"]
    pid_files += [folder / "mariadb.pid", folder / "munged.pid"]
    try:
        _start_munge(folder)
        if dbd_port is not None:
            _start_accounting(folder, host, dbd_port, env, start_within_s)
        _start(folder, conf, env, start_within_s)
        yield SlurmCluster(folder, conf)
    finally:
        for pid_file in pid_files:
            _stop(pid_file)
        shutil.rmtree(folder, ignore_errors=True)


def _start_munge(folder: Path) -> None:
    try:
        subprocess.run(
            [MUNGED, "--force", f"--socket={folder}/munge.sock", f"--pid-file={folder}/munged.pid",
             f"--log-file={folder}/munged.log", f"--seed-file={folder}/munge.seed",
             f"--key-file={MUNGE_KEY}"],
            check=True, capture_output=True,
        )  # fmt: skip
    except subprocess.CalledProcessError as exc:
        raise NoCluster(f"{exc.cmd[0]} failed: {exc.stderr!r}") from exc


def _start_accounting(
    folder: Path, host: str, dbd_port: int, env: dict[str, str], start_within_s: float
) -> None:
    """MariaDB on a loopback port, slurmdbd in front of it, and the cluster registered there."""
    data, db_port = folder / "db", _free_port()
    try:
        subprocess.run(
            [INSTALL_DB, "--no-defaults", f"--datadir={data}", "--user=root",
             "--auth-root-authentication-method=normal", "--skip-test-db"],
            check=True, capture_output=True,
        )  # fmt: skip
    except subprocess.CalledProcessError as exc:
        raise NoCluster(f"{INSTALL_DB} failed: {exc.stderr!r}") from exc
    subprocess.Popen(
        [MARIADBD, "--no-defaults", f"--datadir={data}", "--user=root", f"--port={db_port}",
         "--bind-address=127.0.0.1", f"--socket={folder}/mariadb.sock",
         f"--pid-file={folder}/mariadb.pid", f"--log-error={folder}/mariadb.log",
         "--innodb-buffer-pool-size=16M", "--skip-log-bin"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    dbd = folder / "slurmdbd.conf"  # read from slurm.conf's folder; slurmdbd wants mode 600
    dbd.write_text(_dbd_conf(folder, host, dbd_port, db_port))
    dbd.chmod(0o600)
    _until(lambda: _listening(db_port), start_within_s, folder / "mariadb.log", "MariaDB")
    done = subprocess.run([SLURMDBD], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise NoCluster(f"{SLURMDBD} failed: {done.stderr!r}")

    said: list[str] = []

    def registered() -> bool:
        add = ["sacctmgr", "--immediate", "add", "cluster", "cqtest"]
        done = subprocess.run(add, env=env, capture_output=True, text=True)
        said[:] = [done.stdout + done.stderr]
        return done.returncode == 0

    try:
        _until(registered, start_within_s, folder / "slurmdbd.log", "slurmdbd")
    except NoCluster as exc:
        raise NoCluster(f"{exc}; sacctmgr said: {said[0] if said else ''}") from exc


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _until(ready: Callable[[], bool], within_s: float, log: Path, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not ready():
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
            raise NoCluster(f"{what} not up after {within_s:.0f} s: {tail}")
        time.sleep(0.5)


def _start(folder: Path, conf: Path, env: dict[str, str], start_within_s: float) -> None:
    """Start slurmctld and slurmd and wait for the node to be idle; NoCluster when it is not."""
    try:
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
