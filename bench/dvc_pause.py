"""DVC's own pause between the stages of ``make repro`` (issue 47 item 4, docs/measured.md).

The pause is what ``dvc repro`` spends between one stage's command ending and the next one
starting: reading ``dvc.yaml``, ``dvc.lock`` and the params of each stage, hashing deps and
outputs, writing the lock. To see it without the stages' own work, this script builds a scratch
DVC project that has the project's ``params.yaml`` and one stage for each stage of the
project's pipeline, in the same order, each declaring the same params keys; the commands only
write two timestamps (start, end) into their output, and each stage depends on the previous
one's output so DVC runs them one after another. The pause before stage *i* is its start minus
stage *i − 1*'s end.

It runs the scratch pipeline ``--rounds`` times with the environment as installed (ruamel's
C parser) and, alternated, with the C parser hidden (ruamel falls back to pure Python), and
prints the median pause of each with the load average.

    .venv/bin/python bench/dvc_pause.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
DVC = str(Path(sys.executable).with_name("dvc"))
HIDE_C_PARSER = "raise ImportError('the C parser is hidden by bench/dvc_pause.py')\n"


def project_stage_params() -> list[tuple[str, list[str]]]:
    """(name, params keys) of every stage of the project's pipeline, in DVC's order."""
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    with Repo(str(ROOT)) as repo:
        stages = list(repo.index.stages)
        out: list[tuple[str, list[str]]] = []
        for stage in stages:
            keys: list[str] = []
            for dep in stage.deps:
                if isinstance(dep, ParamsDependency) and Path(dep.def_path).name == "params.yaml":
                    keys.extend(str(k) for k in dep.params)
            out.append((stage.addressing, keys))
    return out


def write_scratch(folder: Path, stages: list[tuple[str, list[str]]]) -> None:
    """A git + DVC project with the params file and one timestamp stage per project stage."""
    shutil.copy(ROOT / "params.yaml", folder / "params.yaml")
    pipeline: dict[str, object] = {}
    previous = ""
    for i, (name, keys) in enumerate(stages):
        out = f"t/{i:02d}.txt"
        cmd = f"mkdir -p t && date +%s.%N > {out} && date +%s.%N >> {out}"
        stage: dict[str, object] = {"cmd": cmd, "outs": [out]}
        if previous:
            stage["deps"] = [previous]
        if keys:
            stage["params"] = keys
        pipeline[f"s{i:02d}_{name.replace('@', '_')}"] = stage
        previous = out
    with (folder / "dvc.yaml").open("w") as fh:
        YAML().dump({"stages": pipeline}, fh)
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost"}
    env |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}
    setup = (["git", "init", "-q"], [DVC, "init", "-q"], [DVC, "config", "core.analytics", "false"])
    for cmd in setup:
        subprocess.run(cmd, cwd=folder, check=True, env=env)


def pauses(folder: Path, hide_c_parser: bool) -> list[float]:
    """Run the scratch pipeline from scratch once and return the pause before each stage."""
    shutil.rmtree(folder / "t", ignore_errors=True)
    (folder / "dvc.lock").unlink(missing_ok=True)
    env = dict(os.environ)
    if hide_c_parser:
        hide = folder.parent / "hide"
        hide.mkdir(exist_ok=True)
        (hide / "_ruamel_yaml.py").write_text(HIDE_C_PARSER)
        env["PYTHONPATH"] = str(hide)
    subprocess.run([DVC, "repro", "-q"], cwd=folder, check=True, env=env)
    times = [
        [float(x) for x in p.read_text().split()] for p in sorted((folder / "t").glob("*.txt"))
    ]
    return [times[i][0] - times[i - 1][1] for i in range(1, len(times))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    stages = project_stage_params()
    with_params = sum(1 for _, keys in stages if keys)
    print(f"{len(stages)} stages ({with_params} declare params.yaml keys); load {os.getloadavg()}")
    results: dict[str, list[float]] = {"C parser": [], "pure-Python parser": []}
    with tempfile.TemporaryDirectory(prefix="dvc-pause-") as tmp:
        folder = Path(tmp) / "project"
        folder.mkdir()
        write_scratch(folder, stages)
        for _ in range(args.rounds):
            for label, hide in (("C parser", False), ("pure-Python parser", True)):
                round_pauses = pauses(folder, hide)
                results[label].append(statistics.median(round_pauses))
                print(
                    f"  {label}: median pause {statistics.median(round_pauses):.2f} s, "
                    f"total {sum(round_pauses):.1f} s over {len(round_pauses)} stages"
                )
    c, pure = (statistics.median(results[k]) for k in ("C parser", "pure-Python parser"))
    print(f"median of rounds: C parser {c:.2f} s, pure Python {pure:.2f} s, ratio {c / pure:.2f}")
    print(f"load at the end {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
