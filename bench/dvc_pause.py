"""DVC's own pause between the stages of ``make repro`` (issue 47 item 4, docs/measured.md).

The pause is what ``dvc repro`` spends between one stage's command ending and the next one
starting: reading ``dvc.yaml``, ``dvc.lock`` and ``params.yaml``, hashing the deps, committing
the outputs to the cache, saving the run cache, writing the lock. To see it without the stages'
own work, this script copies the project (its git-tracked files and the outputs checked out in
the workspace, ``dvc checkout``) into a scratch git + DVC project with its own cache, keeps
every stage's deps, outs and params as declared, and replaces each stage's command by one that
writes a start timestamp, restores the stage's outputs from a saved copy (as the real command
would leave them) and writes an end timestamp. ``dvc repro -f`` then runs every stage; the pause
before stage *i* is its start minus stage *i − 1*'s end, with everything DVC does in between.

The current tree's ``dvc.lock`` is first pruned as ``make repro`` prunes it
(``python -m cultureqa.dvc_deps prune-lock``). With ``--against REV`` it builds a second scratch
project whose ``dvc.yaml``, ``.dvcignore`` and ``dvc.lock`` are those of git revision ``REV``
(the rest of the tree, outputs included, is the same; nothing pruned) and alternates the two,
round by round, so both meet the same machine load. ``--profile FILE``
writes a cProfile (CPU clock) of one more ``dvc repro -f`` of five stages of the current tree
(read it with ``python -m pstats FILE``).

    .venv/bin/python bench/dvc_pause.py [--rounds 2] [--against main] [--profile dvc.prof]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
}
# The timed command of every stage: DVC sets DVC_STAGE to the stage's name.
STAMP = """s=$(date +%s.%N)
sh "{restore}/$DVC_STAGE.sh"
echo "$DVC_STAGE $s $(date +%s.%N)" >> "{times}"
"""
# Five stages in a row (the case bank's build): enough pauses to see where they go.
PROFILED = ["cases_ingest", "cases_weird", "cases_annotate", "cases_construct", "cases_shuffle"]
PROFILE = (
    "import cProfile, sys, time\n"
    "from dvc.cli import main\n"
    "p = cProfile.Profile(time.process_time)\n"
    f"rc = p.runcall(main, ['repro', '-f', '-q', '-s', *{PROFILED!r}])\n"
    "p.dump_stats(sys.argv[1])\n"
    "raise SystemExit(rc)\n"
)


def _env() -> dict[str, str]:
    env = {**os.environ, **GIT_ENV, "DVC_NO_ANALYTICS": "1"}
    env.pop("DVC_ROOT", None)
    return env


def _run(cmd: list[str], cwd: Path) -> None:
    subprocess.run(cmd, cwd=cwd, check=True, env=_env())


def _dvc(*args: str) -> list[str]:
    return [PYTHON, "-m", "dvc", *args]


def _stage_outs(folder: Path) -> dict[str, list[str]]:
    """Every stage's outputs (metrics and plots included), relative to ``folder``."""
    from dvc.repo import Repo

    with Repo(str(folder)) as repo:
        return {
            stage.name: [os.path.relpath(o.fs_path, folder) for o in stage.outs]
            for stage in repo.index.stages
        }


def _replace_commands(dvc_yaml: Path, command: str) -> None:
    """Every stage's ``cmd`` becomes ``command``; deps, outs and params stay as written."""
    from ruamel.yaml import YAML

    yaml = YAML()
    data = yaml.load(dvc_yaml.read_text(encoding="utf-8"))
    for stage in data["stages"].values():
        stage.get("do", stage)["cmd"] = command
    with dvc_yaml.open("w", encoding="utf-8") as fh:
        yaml.dump(data, fh)


def _add_missing_deps(folder: Path, rev: str) -> None:
    """Write ``rev``'s version of each dep its ``dvc.yaml`` names that this tree no longer has.

    Code moves between revisions (a module renamed, a stage script merged): without its old files
    ``rev``'s pipeline would stop on a missing dep instead of being measured.
    """
    from ruamel.yaml import YAML

    data = YAML(typ="safe").load((folder / "dvc.yaml").read_text(encoding="utf-8"))
    deps = {
        str(d)
        for stage in data["stages"].values()
        for d in stage.get("do", stage).get("deps", [])
        if "${" not in str(d) and not (folder / str(d)).exists()
    }
    for dep in sorted(deps):
        names = subprocess.run(
            ["git", "ls-tree", "-r", "-z", "--name-only", rev, "--", dep],
            cwd=ROOT, check=True, capture_output=True, text=True,
        ).stdout.split("\0")  # fmt: skip
        for name in filter(None, names):
            blob = subprocess.run(
                ["git", "show", f"{rev}:{name}"], cwd=ROOT, check=True, capture_output=True
            ).stdout
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(blob)


def build(folder: Path, rev: str | None) -> None:
    """A scratch copy of the project whose stages restore their outputs from a saved copy."""
    folder.mkdir(parents=True)
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split("\0")
    for name in filter(None, tracked):
        src = ROOT / name
        if src.is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, folder / name)
    if rev is not None:
        for name in ("dvc.yaml", ".dvcignore", "dvc.lock"):
            text = subprocess.run(
                ["git", "show", f"{rev}:{name}"], cwd=ROOT, check=True, capture_output=True,
                text=True,
            ).stdout  # fmt: skip
            (folder / name).write_text(text, encoding="utf-8")
        _add_missing_deps(folder, rev)
    saved, restore = (
        folder.parent / f"{folder.name}-saved",
        folder.parent / f"{folder.name}-restore",
    )
    restore.mkdir()
    _run(["git", "init", "-q"], folder)
    outs = _stage_outs(folder)
    for stage, paths in outs.items():
        lines = []
        for rel in paths:
            src = ROOT / rel
            if not src.exists():
                raise SystemExit(f"dvc_pause: {rel} ({stage}) is not checked out; run dvc checkout")
            if src.is_dir():
                shutil.copytree(src, folder / rel, dirs_exist_ok=True)
                shutil.copytree(src, saved / rel, dirs_exist_ok=True)
            else:
                for base in (folder, saved):
                    (base / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, base / rel)
            copy = f"cp -R '{saved / rel}' '{rel}'"
            lines.append(f"rm -rf '{rel}' && mkdir -p \"$(dirname '{rel}')\" && {copy}")
        (restore / f"{stage}.sh").write_text("\n".join(lines) + "\n", encoding="utf-8")
    stamp = folder.parent / f"{folder.name}-stamp.sh"
    times = folder.parent / f"{folder.name}-times.txt"
    stamp.write_text(STAMP.format(restore=restore, times=times), encoding="utf-8")
    _replace_commands(folder / "dvc.yaml", f"sh {stamp}")
    _run(["git", "add", "-A"], folder)
    _run(["git", "commit", "-q", "-m", "scratch"], folder)
    _run(_dvc("config", "--local", "core.analytics", "false"), folder)
    if rev is None:  # as make repro does before dvc repro
        _run([PYTHON, "-m", "cultureqa.dvc_deps", "prune-lock"], folder)
    # Warms DVC's hash state, as a workspace in use has it; exits 1 (the commands changed).
    subprocess.run(_dvc("status", "-q"), cwd=folder, check=False, env=_env())


def pauses(folder: Path) -> tuple[list[float], float]:
    """Run every stage once (``dvc repro -f``): the pause before each but the first, and CPU s.

    The CPU seconds are the ``dvc repro`` process's with its commands' (a shell, ``date`` and
    ``cp`` a stage): unlike the wall pause they barely move with the machine's load.
    """
    times = folder.parent / f"{folder.name}-times.txt"
    times.unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    _run(_dvc("repro", "-f", "-q"), folder)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    stamps = [line.split() for line in times.read_text(encoding="utf-8").splitlines()]
    return [float(stamps[i][1]) - float(stamps[i - 1][2]) for i in range(1, len(stamps))], cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", metavar="REV", help="also measure REV's dvc.yaml/.dvcignore")
    parser.add_argument("--profile", metavar="FILE", help="cProfile (CPU clock) one more run")
    args = parser.parse_args(argv)
    print(f"load at the start {os.getloadavg()}")
    variants = {"current": None} | ({args.against: args.against} if args.against else {})
    results: dict[str, list[list[float]]] = {label: [] for label in variants}
    cpus: dict[str, list[float]] = {label: [] for label in variants}
    with tempfile.TemporaryDirectory(prefix="dvc-pause-") as tmp:
        folders = {label: Path(tmp) / f"p{i}" for i, label in enumerate(variants)}
        for label, rev in variants.items():
            build(folders[label], rev)
        for _ in range(args.rounds):
            for label in variants:
                got, cpu = pauses(folders[label])
                results[label].append(got)
                cpus[label].append(cpu)
                median = statistics.median(got)
                lock_kb = (folders[label] / "dvc.lock").stat().st_size / 1000
                print(
                    f"  {label}: {len(got) + 1} stages, median pause {median:.2f} s,"
                    f" total {sum(got):.1f} s, {cpu:.1f} CPU s, dvc.lock {lock_kb:.1f} KB;"
                    f" load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        if args.profile:
            code = folders["current"].parent / "dvc_pause_profiled.py"
            code.write_text(PROFILE, encoding="utf-8")
            _run([PYTHON, str(code), str(Path(args.profile).resolve())], folders["current"])
    summary = {
        label: {
            "median_pause_s": round(statistics.median(p for r in rounds for p in r), 3),
            "total_s_per_round": [round(sum(r), 1) for r in rounds],
            "cpu_s_per_round": [round(c, 1) for c in cpus[label]],
        }
        for label, rounds in results.items()
        if rounds
    }
    print(json.dumps(summary))
    print(f"load at the end {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
