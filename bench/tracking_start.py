"""CPU seconds a tracking stage spends before its first MLflow write (issue 47, DESIGN.md §7).

Runs a real tracking stage (``stages/track.py --benchmark B`` by default) in a child process whose
MLflow client reports the process's CPU time (user + sys, ``resource.getrusage``) at the first
call that writes: creating an experiment or run, setting a tag, logging anything. The stage runs
in a scratch copy of the project's tracked inputs (params, the benchmark's evaluation outputs and
report figures) against a copy of the project's ``mlflow.db``, so the project's own database and
markers are never touched. Each stage is run ``--repeat`` times and the median printed, with the
load average (the machine is shared: CPU seconds, not wall, are the figure).

    .venv/bin/python bench/tracking_start.py [--benchmark indoculture] [--repeat 5]

The child is ``python bench/tracking_start.py --child <stage> <args>``: it wraps MLflow's tracking
service client as the module is imported (nothing is imported early, so the import cost is the
stage's own) and prints ``FIRST_WRITE_CPU <seconds> <method>`` once.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import os
import resource
import runpy
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
CLIENT_MODULE = "mlflow.tracking._tracking_service.client"
WRITES = ("create_experiment", "set_experiment_tag", "create_run", "set_tag", "set_terminated",
          "log_batch", "log_metric", "log_param", "log_inputs", "log_artifact", "log_artifacts",
          "update_run")  # fmt: skip
"""``TrackingServiceClient`` methods that write; every fluent and client call goes through them."""


def cpu_s() -> float:
    """This process's CPU time so far (user + sys)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


class _Reporter(importlib.abc.MetaPathFinder):
    """Wrap the tracking service client's write methods when (and only when) it is imported."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != CLIENT_MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.loader is not None
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original(module)
            _wrap(module.TrackingServiceClient)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _wrap(cls: type) -> None:
    done: list[str] = []
    for method in WRITES:
        inner = getattr(cls, method, None)
        if inner is None:
            continue

        def wrapper(*args: Any, _inner: Any = inner, _name: str = method, **kwargs: Any) -> Any:
            if not done:
                done.append(_name)
                print(f"FIRST_WRITE_CPU {cpu_s():.3f} {_name}", file=sys.stderr, flush=True)
            return _inner(*args, **kwargs)

        setattr(cls, method, wrapper)


def child(stage: str, args: Sequence[str]) -> None:
    """Run ``stage`` as ``__main__`` with the reporter installed."""
    sys.meta_path.insert(0, _Reporter())
    sys.argv = [stage, *args]
    sys.path.insert(0, str(Path(stage).parent))
    runpy.run_path(stage, run_name="__main__")


def scratch(benchmark: str, into: Path, db: bool) -> None:
    """The inputs a track stage reads, copied; ``db``: with a copy of the project's mlflow.db."""
    for name in ("params.yaml", "pyproject.toml"):
        shutil.copy2(ROOT / name, into / name)
    for folder in ("stages", f"data/eval/{benchmark}", f"reports/{benchmark}", "conf"):
        if (ROOT / folder).exists():
            shutil.copytree(ROOT / folder, into / folder, symlinks=False)
    (into / "src" / "cultureqa").mkdir(parents=True)  # project_root() finds the copy
    if db and (ROOT / "mlflow.db").exists():
        shutil.copy2(ROOT / "mlflow.db", into / "mlflow.db")


def once(benchmark: str, db: bool) -> tuple[float, str, float]:
    """One stage run: CPU at the first write, the method, and the whole process's CPU."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        scratch(benchmark, work, db)
        env = {**os.environ, "DVC_ROOT": str(work)}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        cmd = [PY, str(Path(__file__).resolve()), "--child", "stages/track.py",
               "--benchmark", benchmark]  # fmt: skip
        done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(f"track stage failed ({done.returncode}):\n{done.stderr[-3000:]}")
        line = next(x for x in done.stderr.splitlines() if x.startswith("FIRST_WRITE_CPU"))
        _, first, method = line.split()
        total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return float(first), method, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--benchmark", default="indoculture")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1:])
        return 0
    print(f"track stage ({args.benchmark}): CPU s (user+sys) before the first MLflow write, "
          f"median of {args.repeat}; load average {os.getloadavg()[0]:.1f} at start")  # fmt: skip
    for label, db in (("existing mlflow.db", True), ("new mlflow.db", False)):
        runs = [once(args.benchmark, db) for _ in range(args.repeat)]
        first = statistics.median(r[0] for r in runs)
        total = statistics.median(r[2] for r in runs)
        print(
            f"  {label:20} first write {first:5.2f} CPU s ({runs[0][1]}), whole stage "
            f"{total:5.2f} CPU s  [runs: {', '.join(f'{r[0]:.2f}' for r in runs)}]"
        )
    print(f"load average {os.getloadavg()[0]:.1f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
