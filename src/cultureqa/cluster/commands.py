"""``cultureqa slurm submit`` and ``cultureqa slurm collect``.

``submit`` runs only what is missing: an experiment already on the git remote is done, a task
still pending or running is left alone, and every other experiment of the sweep goes into one
new array. ``collect`` pulls the pushed experiments (``dvc exp pull``, with their outputs) into
the project, so ``make exps`` and ``make compare`` show them, and names each missing one with
what SLURM recorded for its last task; it exits 1 while any is missing.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from cultureqa.cluster.slurm import TaskState, accounting, accounting_hint, live_tasks, sbatch
from cultureqa.cluster.sweep import (
    Job,
    Sweep,
    SweepError,
    check_pushed,
    dvc_cache,
    expand,
    git,
    pushed_experiments,
    remote_url,
    sweep_folder,
)


def add_parser(groups: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The ``slurm`` command group of ``cultureqa``."""
    slurm = groups.add_parser("slurm", help="a sweep as a SLURM job array: submit, collect")
    verbs = slurm.add_subparsers(dest="verb", required=True)
    sub = verbs.add_parser("submit", help="submit the sweep's missing experiments as one array")
    sub.add_argument("--name", required=True, help="the sweep's name (experiments NAME-1, …)")
    sub.add_argument(
        "-S", "--set-param", dest="params", action="append", default=[],
        help="as dvc exp run --queue -S (a sweep: 'model=a,b'); first submit only",
    )  # fmt: skip
    sub.add_argument("--remote", default="origin", help="the team's git remote (default: origin)")
    sub.add_argument("--setup", help="bash file each task sources first (a vLLM server, modules)")
    sub.add_argument(
        "--sbatch", default="", help="more sbatch options, as --sbatch='--gres=gpu:1 -t 2:00:00'"
    )
    sub.set_defaults(func=_submit)
    col = verbs.add_parser("collect", help="pull the pushed experiments; name each missing one")
    col.add_argument("--name", required=True, help="the sweep's name")
    col.set_defaults(func=_collect)


def _submit(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.core.config import print_error

    try:
        line = submit(
            root, args.name, args.params, args.remote, args.setup, shlex.split(args.sbatch)
        )
    except SweepError as exc:
        print_error(f"slurm submit: {exc}")
        return 2
    print(line)
    return 0


def _collect(args: argparse.Namespace, root: Path) -> int:
    from cultureqa.core.config import print_error

    try:
        result = collect(root, args.name)
    except SweepError as exc:
        print_error(f"slurm collect: {exc}")
        return 2
    print(result.render())
    return 0 if not result.missing else 1


def _require_team_store() -> None:
    """Tasks must share one store: with SQLite each clone would pay for every prompt again."""
    from cultureqa.llm.store import store_location

    if not isinstance(store_location(), str):
        raise SweepError(
            "CULTUREQA_STORE_URL is not a postgresql:// URL: each task would keep its own "
            "SQLite store in its clone and pay again for prompts another task sent; set it to "
            "the team's PostgreSQL (docs/team.md) in the shell that submits"
        )


def submit(
    root: Path,
    name: str,
    params: list[str],
    remote: str = "origin",
    setup: str | None = None,
    sbatch_args: list[str] | None = None,
) -> str:
    """Submit the experiments of sweep ``name`` that are neither pushed nor live; a summary line."""
    _require_team_store()
    state = sweep_folder(root, name) / "sweep.json"
    if state.exists():
        sweep = Sweep.load(state)
        if params and [e.overrides for e in expand(name, params)] != [
            e.overrides for e in sweep.experiments
        ]:
            raise SweepError(
                f"sweep {name!r} was submitted with -S {' -S '.join(sweep.params)}; resubmit "
                "it without -S (it reruns what is missing) or give the new sweep another --name"
            )
    else:
        commit = git(root, "rev-parse", "HEAD").strip()
        check_pushed(root, remote, commit)
        sweep = Sweep(
            name, str(root.resolve()), commit, remote, remote_url(root, remote), list(params),
            expand(name, params), dvc_cache(root), str(Path(setup).resolve()) if setup else None,
        )  # fmt: skip
    done = pushed_experiments(root, sweep.remote, sweep.commit)
    live = live_tasks([j.job_id for j in sweep.jobs])
    running = {t for (job, t), s in live.items() if s.live}
    todo = [i for i, e in enumerate(sweep.experiments) if e.name not in done and i not in running]
    summary = (
        f"sweep {name}: {len(sweep.experiments)} experiments, {len(done)} pushed, "
        f"{len(running)} pending or running"
    )
    if not todo:
        return f"{summary}; nothing to submit"
    script = _write_script(sweep)
    logs = sweep.folder / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    job = sbatch(script, todo, f"cultureqa-{name}", logs / "%A_%a.out", sbatch_args or [])
    sweep.jobs.append(Job(job, todo))
    sweep.save()
    listed = ", ".join(sweep.experiments[i].name for i in todo)
    return f"{summary}; submitted job {job} with {len(todo)} tasks: {listed}"


def _write_script(sweep: Sweep) -> Path:
    """The array's batch script: the optional setup, then this interpreter runs the task."""
    sweep.folder.mkdir(parents=True, exist_ok=True)
    sweep.save()
    lines = ["#!/bin/bash", "set -eo pipefail"]
    if sweep.setup:
        lines.append(f"source {shlex.quote(sweep.setup)}")
    lines.append(
        f"{shlex.quote(sys.executable)} -m cultureqa.cluster.task "
        f"{shlex.quote(str(sweep.folder / 'sweep.json'))}"
    )
    script = sweep.folder / "task.sh"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    script.chmod(0o755)
    return script


@dataclass
class Collected:
    """What ``collect`` found: experiments pulled, and each missing one with its last state."""

    sweep: Sweep
    pulled: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)

    def render(self) -> str:
        """A line per experiment, then what to do next."""
        rows = [f"sweep {self.sweep.name}: {len(self.pulled)} of "
                f"{len(self.sweep.experiments)} experiments collected"]  # fmt: skip
        for exp in self.sweep.experiments:
            what = "collected" if exp.name in self.pulled else self.missing.get(exp.name, "")
            rows.append(f"  {exp.name:<24} {what:<40} {exp.label()}")
        if self.missing:
            rows.append(
                f"resubmit the missing ones: cultureqa slurm submit --name {self.sweep.name} "
                f"(logs: {self.sweep.folder / 'logs'})"
            )
        else:
            rows.append("every experiment is here: make exps, make compare")
        return "\n".join(rows)


def collect(root: Path, name: str) -> Collected:
    """Pull the sweep's pushed experiments into ``root``; name the state of each missing one."""
    state = sweep_folder(root, name) / "sweep.json"
    if not state.exists():
        raise SweepError(f"no sweep {name!r} was submitted from {root} ({state} not found)")
    sweep = Sweep.load(state)
    done = pushed_experiments(root, sweep.remote, sweep.commit)
    result = Collected(sweep, [e.name for e in sweep.experiments if e.name in done])
    if result.pulled:
        pulled = subprocess.run(
            [str(Path(sys.executable).parent / "dvc"), "exp", "pull", sweep.remote, *result.pulled],
            cwd=root, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if pulled.returncode != 0:
            raise SweepError(f"dvc exp pull {sweep.remote}: {pulled.stderr.strip()[-500:]}")
    ids = [j.job_id for j in sweep.jobs]
    known: dict[tuple[str, int], TaskState] = {**accounting(ids), **live_tasks(ids)}
    for i, exp in enumerate(sweep.experiments):
        if exp.name in done:
            continue
        last = [j for j in sweep.jobs if i in j.tasks]
        if not last:
            result.missing[exp.name] = "never submitted"
            continue
        job = last[-1].job_id
        task_state = known.get((job, i))
        result.missing[exp.name] = (
            f"{task_state.describe()}, job {job}_{i}" if task_state else f"job {job}_{i}: "
            f"{accounting_hint()}"
        )  # fmt: skip
    return result
