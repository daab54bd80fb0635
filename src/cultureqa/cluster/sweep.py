"""The experiments of a sweep, the state a sweep keeps, and which experiments are pushed.

A sweep is fixed when first submitted: its commit (the experiments' baseline, which must be on
the team's git remote, since tasks clone from there), the URL of that remote, and the list of
experiments with their ``-S`` overrides. Submitting again reads that state, so a resubmission
runs the same experiments at the same commit, whatever the checkout holds by then.

An experiment is done when its ref is on the git remote: ``dvc exp push`` writes
``refs/exps/<baseline[:2]>/<baseline[2:]>/<name>`` there, after its outputs reached the DVC
remote. Nothing else counts (a task that ran but could not push has to run again).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cultureqa.core.io import write_text


class SweepError(ValueError):
    """A sweep cannot be submitted or collected as asked; the message says what to do."""


@dataclass(frozen=True)
class Experiment:
    """One experiment of a sweep: its DVC name and its ``-S`` overrides."""

    name: str
    overrides: tuple[str, ...]

    def label(self) -> str:
        """The overrides as typed on a command line (for tables and logs)."""
        return " ".join(f"-S {o}" for o in self.overrides) or "(no overrides)"


@dataclass
class Job:
    """One ``sbatch --array`` of this sweep: its job id and the task indices it ran."""

    job_id: str
    tasks: list[int]


@dataclass
class Sweep:
    """A submitted sweep, saved as ``sweep.json`` in its folder (logs and workspaces beside it)."""

    name: str
    root: str
    """The project the sweep was submitted from (its DVC cache is shared with the tasks)."""
    commit: str
    remote: str
    """Name of the git remote (``dvc exp push``/``pull`` take it) in the project."""
    remote_url: str
    """What tasks clone (an absolute path or a URL)."""
    params: list[str]
    experiments: list[Experiment]
    cache: str = ""
    """The project's DVC cache (``dvc cache dir``), which the tasks' clones use."""
    setup: str | None = None
    """A bash file each task sources before its experiment (a vLLM server, modules)."""
    jobs: list[Job] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        """Where ``sweep.json``, the task script, the logs and the task workspaces live."""
        return sweep_folder(Path(self.root), self.name)

    def save(self) -> None:
        """Write ``sweep.json`` (temp file, then rename)."""
        data = asdict(self)
        write_text(self.folder / "sweep.json", json.dumps(data, indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> Sweep:
        """Read a ``sweep.json``."""
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        data["experiments"] = [
            Experiment(e["name"], tuple(e["overrides"])) for e in data["experiments"]
        ]
        data["jobs"] = [Job(**j) for j in data.get("jobs", [])]
        return cls(**data)


def sweep_folder(root: Path, name: str) -> Path:
    """``<state dir>/slurm/<name>``: on a cluster, a folder every node sees (the project's)."""
    chosen = Path(os.environ.get("CULTUREQA_STATE_DIR") or ".cultureqa")
    return (chosen if chosen.is_absolute() else root / chosen) / "slurm" / name


def expand(name: str, params: list[str]) -> list[Experiment]:
    """The experiments ``dvc exp run --queue -n NAME -S …`` would queue, named as it names them.

    DVC's own parser does the expansion (Hydra's sweep syntax: ``a=1,2``, ``range(…)``,
    ``choice(…)``), so a sweep means here what it means to ``dvc exp run``; like DVC, a sweep
    of several experiments names them ``NAME-1``, ``NAME-2``, … and a single one ``NAME``.
    """
    from dvc.exceptions import InvalidArgumentError
    from dvc.utils.cli_parse import to_path_overrides
    from dvc.utils.hydra import get_hydra_sweeps

    if not params:
        return [Experiment(name, ())]
    try:
        sweeps = get_hydra_sweeps(to_path_overrides(params))
    except (InvalidArgumentError, ValueError) as exc:
        raise SweepError(f"-S {' -S '.join(params)}: {exc}") from exc
    out: list[Experiment] = []
    for i, by_path in enumerate(sweeps):
        overrides = tuple(
            o if path == "params.yaml" else f"{path}:{o}"
            for path, each in by_path.items()
            for o in each
        )
        out.append(Experiment(f"{name}-{i + 1}" if len(sweeps) > 1 else name, overrides))
    return out


def git(root: Path, *args: str) -> str:
    """``git ARGS`` in ``root``; its stdout, or a SweepError with git's own message."""
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [x for x in (done.stderr or done.stdout).splitlines() if x.strip()]
        said = next((x for x in lines if x.startswith("fatal:")), lines[0] if lines else "")
        raise SweepError(f"git {' '.join(args)}: {said or f'exit {done.returncode}'}")
    return done.stdout


def remote_url(root: Path, remote: str) -> str:
    """The URL tasks clone: a relative path is made absolute (tasks run elsewhere)."""
    url = git(root, "remote", "get-url", remote).strip()
    if "://" not in url and ":" not in url.split("/")[0]:  # a path, not a URL or scp-like
        return str((root / url).resolve())
    return url


def dvc_cache(root: Path) -> str:
    """The project's DVC cache folder, as ``dvc cache dir`` names it (a custom one included)."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "dvc"), "cache", "dir"],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SweepError(f"dvc cache dir: {done.stderr.strip() or done.returncode}")
    return str(Path(done.stdout.strip()).resolve())


def check_pushed(root: Path, remote: str, commit: str) -> None:
    """Refuse a commit the remote lacks: the tasks clone from the remote, not from here."""
    git(root, "fetch", "--quiet", remote)
    if not git(root, "branch", "--remotes", "--contains", commit).strip():
        raise SweepError(
            f"commit {commit[:10]} is not on the git remote {remote!r}: the tasks clone from "
            f"there; commit your changes and `git push {remote}` first"
        )


def pushed_experiments(root: Path, remote: str, commit: str) -> set[str]:
    """Names of the experiments of baseline ``commit`` on the git remote."""
    prefix = f"refs/exps/{commit[:2]}/{commit[2:]}/"
    listed = git(root, "ls-remote", remote, f"{prefix}*")
    return {
        line.split("\t", 1)[1][len(prefix) :]
        for line in listed.splitlines()
        if "\t" in line and line.split("\t", 1)[1].startswith(prefix)
    }
