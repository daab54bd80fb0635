"""Benchmark: the newcomer's loop in a fresh clone — set-up, first `make repro`, `make test`.

Clones the repository's HEAD into a temp folder and times, as a user would run them:

- ``setup``: ``make setup`` with empty installer caches (``XDG_CACHE_HOME`` points at an empty
  folder, so pip's and uv's caches start empty; nothing under ``~/.cache`` is touched);
- ``repro``: ``make repro`` (the embedded model's converted weights come from the usual cache,
  ``~/.cache/cultureqa``, unless ``--cold-model``), then ``git status --porcelain`` must be empty;
- ``test``: ``make test`` with ``--durations=15`` (the slowest tests are printed).

Each phase reports wall time, the CPU time of its processes (user + sys, from ``wait4``), and the
load average before and after, and its ratio to the figures issue #24 started from (set-up
2 min 18 s with pip and a warm cache, first repro 13 min 58 s, tests 9 min) and to the targets
(set-up < 60 s, repro < 8 min, tests < 4 min), and the test phase's CPU to issue #47's target
(``make test`` under 400 CPU s). On a shared machine wall time is noisy: rerun it (``--repeat``)
and read the CPU column beside the load.

Usage:  python bench/loop.py [--phases setup,repro,test] [--repeat N] [--keep] [--json out.json]
        [--test-workers 0]   (the suite in one process, as `make test` ran before issue #24)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE_S = {"setup": 138.0, "repro": 838.0, "test": 540.0}  # issue #24's starting figures
TARGET_S = {"setup": 60.0, "repro": 480.0, "test": 240.0}
TARGET_CPU_S = {"test": 400.0}  # issue #47: `make test` under 400 CPU s on a fresh clone
COMMANDS = {
    "setup": ["make", "setup"],
    "repro": ["make", "repro"],
    "test": ["make", "test", "ARGS=--durations=15"],
}


@dataclass
class Timing:
    """One phase's measurement."""

    phase: str
    wall_s: float
    cpu_s: float
    load_before: float
    load_after: float
    rc: int
    note: str = ""


def run_timed(
    cmd: list[str], cwd: Path, env: dict[str, str], log: Path
) -> tuple[int, float, float]:
    """Run ``cmd`` to completion; exit code, wall seconds, CPU seconds of the whole process tree."""
    started = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        before = os.times()
        proc.wait()
        after = os.times()
    wall = time.perf_counter() - started
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return proc.returncode, wall, cpu


def phase(name: str, clone: Path, env: dict[str, str], logs: Path, extra: list[str]) -> Timing:
    """Time one phase in ``clone``; ``repro`` also checks that git status stays clean."""
    load_before = os.getloadavg()[0]
    log = logs / f"{name}.log"
    rc, wall, cpu = run_timed([*COMMANDS[name], *extra], clone, env, log)
    note = ""
    if name == "repro" and rc == 0:
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True
        ).stdout
        note = "git status clean" if not status.strip() else f"git status DIRTY:\n{status}"
    if name == "test":
        note = _slowest(log.read_text(errors="replace"))
    if name == "setup":
        note = next((ln for ln in log.read_text().splitlines() if ln.startswith("setup:")), "")
    return Timing(name, wall, cpu, load_before, os.getloadavg()[0], rc, note)


def _slowest(text: str) -> str:
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if "slowest 15 durations" in ln), None)
    summary = [ln for ln in lines if " passed" in ln or " failed" in ln][-1:]
    # A failure in a fresh clone is the finding itself: name it even when the log is not kept.
    failed = [ln for ln in lines if ln.startswith(("FAILED ", "ERROR "))]
    slowest = lines[start : start + 16] if start is not None else []
    return "\n".join([*slowest, *failed, *summary])


def fresh_clone(workdir: Path) -> Path:
    """A clone of HEAD, as a new user gets it (uncommitted changes are not benchmarked)."""
    clone = workdir / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    return clone


def environment(workdir: Path, cold_model: bool) -> dict[str, str]:
    """Empty installer caches; the model cache stays the user's unless ``cold_model``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "UV_"))}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if "/.venv/" not in p
    )
    models = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cultureqa"
    env["XDG_CACHE_HOME"] = str(workdir / "cache")  # pip, uv, HF: all start empty
    env["CULTUREQA_CACHE_DIR"] = str(workdir / "cache" / "cultureqa" if cold_model else models)
    return env


def report(timings: list[Timing]) -> str:
    """The table with the ratios to the starting figures and the targets."""
    rows = [
        f"{'phase':<6} {'wall':>8} {'cpu':>8} {'load':>11} {'×before':>8} {'×target':>8}"
        f" {'cpu×target':>10}  rc"
    ]
    for t in timings:
        cpu_target = TARGET_CPU_S.get(t.phase)
        cpu_ratio = f"{t.cpu_s / cpu_target:10.2f}" if cpu_target else f"{'':>10}"
        rows.append(
            f"{t.phase:<6} {t.wall_s:7.1f}s {t.cpu_s:7.1f}s"
            f" {t.load_before:5.1f}→{t.load_after:<5.1f}"
            f" {t.wall_s / BEFORE_S[t.phase]:8.2f} {t.wall_s / TARGET_S[t.phase]:8.2f}"
            f" {cpu_ratio}  {t.rc}"
        )
    notes = [f"[{t.phase}] {t.note}" for t in timings if t.note]
    return "\n".join([*rows, *notes])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phases", default="setup,repro,test")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the clone and its logs")
    parser.add_argument("--cold-model", action="store_true", help="convert the model afresh")
    parser.add_argument("--json", type=Path, help="also write the timings as JSON")
    parser.add_argument(
        "--test-workers", type=int, help="make test TEST_WORKERS=N (0: one process, as before)"
    )
    args = parser.parse_args(argv)
    phases = [p for p in args.phases.split(",") if p]
    unknown = sorted(set(phases) - set(COMMANDS))
    if unknown:
        parser.error(f"unknown phase(s) {unknown}; choose from {sorted(COMMANDS)}")
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; HEAD of {ROOT}")
    timings: list[Timing] = []
    for _ in range(args.repeat):
        workdir = Path(tempfile.mkdtemp(prefix="cultureqa-loop-"))
        clone, env = fresh_clone(workdir), environment(workdir, args.cold_model)
        for name in ["setup", *[p for p in phases if p != "setup"]]:  # every phase needs .venv
            extra = (
                []
                if name != "test" or args.test_workers is None
                else [f"TEST_WORKERS={args.test_workers}"]
            )
            timings.append(phase(name, clone, env, workdir, extra))
            print(report(timings[-1:]).splitlines()[1], flush=True)
            if timings[-1].rc != 0:
                print(f"{name} failed; log: {workdir / (name + '.log')}")
                break
        if args.keep:
            print(f"kept: {workdir}")
        else:
            subprocess.run(["rm", "-rf", str(workdir)], check=False)
    print(report(timings))
    if args.json:
        args.json.write_text(json.dumps([asdict(t) for t in timings], indent=2))
    return 0 if all(t.rc == 0 for t in timings) else 1


if __name__ == "__main__":
    sys.exit(main())
