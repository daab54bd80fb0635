"""CPU seconds the tracking of one ``dvc repro`` costs, before its first MLflow write and in all.

Runs the real track stage (``stages/track.py``, every part) in a child process whose MLflow
client reports the process's CPU time (user + sys, ``resource.getrusage``) at the first call that
writes: creating an experiment or run, setting a tag, logging anything. ``--before`` also runs
the six tracking stages it replaced (``track@indoculture``, ``mocqa_track``, ``cases_track``,
``track_build_cases``, ``track_build_twohop@{indonesia,un_members}``), their scripts taken from
the last git revision that had them, one after another as ``dvc repro`` ran them, and sums them.
Everything runs in a scratch copy of the tracked inputs (params, evaluation outputs, report
figures, build metrics), against a copy of the project's ``mlflow.db`` or a new one, so the
project's own database and markers are never touched. Each configuration is run ``--repeat``
times and the median printed, with the load average (the machine is shared: CPU seconds, not
wall, are the figure). A last line gives the stage re-run with nothing changed (every part
skipped: no MLflow import).

    .venv/bin/python bench/tracking_start.py [--repeat 3] [--before]

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


INPUTS = ("data/eval", "reports", "metrics/cases", "metrics/twohop", "conf")
OLD = ("track", "mocqa_track", "cases_track", "track_build")
"""The scripts of the six tracking stages the one track stage replaced."""


def old_commands(params: Any) -> list[list[str]]:
    """The six stages' commands, as the last ``dvc.yaml`` that had them ran them."""
    builds = [
        [
            "--build",
            "cases",
            "--params",
            "cases.construct",
            "cases.annotate",
            "cases.seeds",
            "--metrics",
            *(
                f"metrics/cases/{s}.json"
                for s in ("ingest", "annotate", "construct", "shuffle", "validate")
            ),
        ]
    ]
    for hop_set in params["twohop"]["hop_sets"]:
        builds.append(
            [
                "--build",
                f"twohop-{hop_set}",
                "--params",
                "twohop",
                f"region_sets.{hop_set}",
                "generator",
                "judge",
                "--metrics",
                f"metrics/twohop/{hop_set}/build.json",
                f"metrics/twohop/{hop_set}/hop.json",
            ]
        )
    evals = [["before/track.py", "--benchmark", b] for b in params["evaluate"]["benchmarks"]]
    return [*evals, ["before/mocqa_track.py"], ["before/cases_track.py"],
            *(["before/track_build.py", *b] for b in builds)]  # fmt: skip


def scratch(into: Path, db: bool, before: str | None) -> None:
    """The inputs the track stage reads, copied; ``db``: with a copy of the project's mlflow.db.

    ``before``: the git revision whose six tracking scripts go to ``stages/before/``.
    """
    for name in ("params.yaml", "pyproject.toml"):
        shutil.copy2(ROOT / name, into / name)
    for folder in ("stages", *INPUTS):
        if (ROOT / folder).exists():
            shutil.copytree(ROOT / folder, into / folder, symlinks=False)
    (into / "src" / "cultureqa").mkdir(parents=True)  # project_root() finds the copy
    if db and (ROOT / "mlflow.db").exists():
        shutil.copy2(ROOT / "mlflow.db", into / "mlflow.db")
    if before:
        (into / "stages" / "before").mkdir()
        shutil.copy2(ROOT / "stages" / "_environment.py", into / "stages/before/_environment.py")
        for name in OLD:
            text = subprocess.run(["git", "show", f"{before}:stages/{name}.py"], cwd=ROOT,
                                  capture_output=True, text=True, check=True).stdout  # fmt: skip
            (into / "stages" / "before" / f"{name}.py").write_text(text, encoding="utf-8")


def run_stage(work: Path, argv: list[str]) -> tuple[float | None, str, float]:
    """One stage process: CPU at its first write (None: it wrote nothing), the method, all CPU."""
    env = {**os.environ, "DVC_ROOT": str(work)}
    env.pop("DVC_EXP_NAME", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [PY, str(Path(__file__).resolve()), "--child", f"stages/{argv[0]}", *argv[1:]]
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{argv} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    line = next((x for x in done.stderr.splitlines() if x.startswith("FIRST_WRITE_CPU")), None)
    if line is None:
        return None, "-", total
    _, first, method = line.split()
    return float(first), method, total


def once(db: bool, before: str | None) -> dict[str, Any]:
    """One ``dvc repro``'s tracking: the one stage, then (``before``) the six old ones.

    Each in its own scratch copy from the same database, so neither finds the other's runs.
    """
    import yaml

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        scratch(work, db, None)
        first, method, total = run_stage(work, ["track.py"])
        _, _, skipped = run_stage(work, ["track.py"])  # nothing changed: every part skipped
        out: dict[str, Any] = {"first": first, "method": method, "total": total,
                               "skipped": skipped}  # fmt: skip
    if before:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            scratch(work, db, before)
            params = yaml.safe_load((work / "params.yaml").read_text(encoding="utf-8"))
            old = [run_stage(work, argv) for argv in old_commands(params)]
            out["old_first"] = [o[0] for o in old]
            out["old_total"] = [o[2] for o in old]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", action="store_true", help="also the six stages it replaced")
    parser.add_argument(
        "--db",
        choices=("existing", "new", "both"),
        default="both",
        help="which mlflow.db to start from",
    )
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1:])
        return 0
    rev = None
    if args.before:
        last = ["git", "rev-list", "-n1", "HEAD", "--", "stages/mocqa_track.py"]
        found = subprocess.run(last, cwd=ROOT, capture_output=True, text=True, check=True).stdout
        rev = f"{found.strip()}^"
    print(f"tracking of one dvc repro: CPU s (user+sys), median of {args.repeat}; load average "
          f"{os.getloadavg()[0]:.1f} at start")  # fmt: skip
    med = statistics.median
    dbs = [
        (f"{d} mlflow.db", d == "existing") for d in ("existing", "new") if args.db in (d, "both")
    ]
    for label, db in dbs:
        runs = [once(db, rev) for _ in range(args.repeat)]
        print(f"  {label}:")
        firsts = ", ".join(f"{r['first']:.2f}" for r in runs)
        print(
            f"    one track stage   first write {med(r['first'] for r in runs):5.2f} "
            f"({runs[0]['method']}), whole {med(r['total'] for r in runs):6.2f}  "
            f"[first writes: {firsts}]"
        )
        print(f"    again, unchanged  whole {med(r['skipped'] for r in runs):6.2f} "
              "(every part skipped, no MLflow import)")  # fmt: skip
        if rev:
            stages = range(len(runs[0]["old_first"]))
            firsts = [med(r["old_first"][i] for r in runs) for i in stages]
            totals = [sum(r["old_total"]) for r in runs]
            print(
                f"    six old stages    first writes {sum(firsts):5.2f} summed "
                f"({', '.join(f'{f:.2f}' for f in firsts)}), whole {med(totals):6.2f}"
            )
    print(f"load average {os.getloadavg()[0]:.1f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
