"""A sweep as a SLURM job array on a real one-node cluster (docs/team.md, "A sweep on SLURM").

The project is a workspace with one ``evaluate`` stage, a bare git remote and a local-folder
DVC remote standing for the team's; the tasks share one PostgreSQL store and call the fake
OpenAI-compatible server of this test process. Four experiments: two benchmark files with
three questions in common × two concurrencies (not part of a prompt's key), so the four runs
need 9 distinct prompts, most of them by two or four tasks at once.

One task is cancelled with ``scancel`` while its requests are in flight; ``collect`` names it
from SLURM's accounting, a resubmission runs only that one, and in the end the server has seen
each of the 9 prompts once, plus at most the cancelled task's requests in flight.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from cultureqa.testing import FakeOpenAIServer
from cultureqa.testing.slurm_cluster import SlurmCluster
from cultureqa.testing.workspace import make_api_workspace

ROOT = Path(__file__).resolve().parents[2]
EVALUATE = f"{sys.executable} {ROOT / 'stages' / 'evaluate.py'}"
BIN = Path(sys.executable).parent
GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@t"]
FILES = {"data/a.jsonl": range(0, 6), "data/b.jsonl": range(3, 9)}  # 3 questions in common
CONCURRENCY = (1, 2)
LATENCY_S = 0.6
RIGHT_BELOW = 5  # the fake model knows questions 0-4 and answers A to the others


def _answer(messages: list[dict[str, Any]]) -> str:
    text = " ".join(str(m.get("content", "")) for m in messages)
    found = re.search(r"Synthetic question (\d+)\?", text)
    i = int(found.group(1)) if found else -1
    return "ABC"[i % 3] if 0 <= i < RIGHT_BELOW else "A"


def _expected_accuracy(items: range) -> float:
    return sum(("ABC"[i % 3] if i < RIGHT_BELOW else "A") == "ABC"[i % 3] for i in items) / len(
        items
    )


def _env(cluster: SlurmCluster, url: str) -> dict[str, str]:
    env = {
        **os.environ,
        **cluster.env,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT / "src"),
        "DVC_NO_ANALYTICS": "1",
        "CULTUREQA_LOG_LEVEL": "WARNING",
        "CULTUREQA_STORE_URL": url,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for key in ("DVC_ROOT", "CULTUREQA_STATE_DIR", "DVC_EXP_NAME"):
        env.pop(key, None)
    return env


def _sh(cwd: Path, env: dict[str, str], *args: str, ok: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode in ok, f"{' '.join(args)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout


def _project(tmp: Path, env: dict[str, str], api_base: str) -> Path:
    """The team's project: pushed to a bare git remote, with a local-folder DVC remote."""
    origin, remote, ws = tmp / "origin.git", tmp / "dvc-remote", tmp / "project"
    remote.mkdir()
    _sh(tmp, env, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    make_api_workspace(ROOT, ws, 3, api_base, concurrency=1)
    _compose_through_hydra(ws)
    for name, items in FILES.items():
        rows = [
            {"id": f"s{i}", "question": f"Synthetic question {i}?",
             "options": ["alpha", "beta", "gamma"], "answer": "ABC"[i % 3]}
            for i in items
        ]  # fmt: skip
        (ws / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (ws / "dvc.yaml").write_text(
        textwrap.dedent(
            f"""\
            stages:
              evaluate:
                cmd: {EVALUATE} --benchmark synthetic --model model
                deps:
                  - data/a.jsonl
                  - data/b.jsonl
                params:
                  - model
                  - benchmarks.synthetic
                outs:
                  - data/eval/synthetic/model
                metrics:
                  - metrics/eval/synthetic/model.json:
                      cache: false
            """
        )
    )
    (ws / ".gitignore").write_text("/.cultureqa/\n/.runlog/\n")
    _sh(ws, env, "git", "init", "-q", "-b", "main")
    _sh(ws, env, "dvc", "init", "-q")
    _sh(ws, env, "dvc", "config", "hydra.enabled", "true")
    _sh(ws, env, "dvc", "config", "hydra.plugins_path", "dvc_hydra_plugins")
    _sh(ws, env, "dvc", "remote", "add", "-d", "shared", str(remote))
    _sh(ws, env, "git", "add", "-A")
    _sh(ws, env, "git", *GIT_ID, "commit", "-qm", "project")
    _sh(ws, env, "git", "remote", "add", "origin", str(origin))
    _sh(ws, env, "git", "push", "-q", "origin", "main")
    return ws


def _compose_through_hydra(ws: Path) -> None:
    """``dvc exp run -S`` composes conf/ as in the project, so the benchmark's digest follows.

    The workspace's params become its ``conf/config.yaml`` (the option groups stay, for the
    params key check), with ``digest: ${cultureqa_digest:}`` in the benchmark the sweep
    overrides: without composition a ``-S`` would edit params.yaml by hand and the stage would
    refuse the stale digest (``cultureqa.core.params_digest``).
    """
    params = OmegaConf.load(ws / "params.yaml")
    params.benchmarks.synthetic.digest = "${cultureqa_digest:}"
    (ws / "conf" / "config.yaml").write_text(OmegaConf.to_yaml(params), encoding="utf-8")
    shutil.copytree(ROOT / "dvc_hydra_plugins", ws / "dvc_hydra_plugins")


def _cli(ws: Path, env: dict[str, str], *args: str, ok: tuple[int, ...] = (0,)) -> str:
    return _sh(ws, env, sys.executable, "-m", "cultureqa.cli", *args, ok=ok)


def _queue(env: dict[str, str]) -> dict[str, str]:
    """Task id → state of every task SLURM still holds."""
    out = _sh(Path("/"), env, "squeue", "--noheader", "--array", "--format=%i %T")
    return dict(line.split() for line in out.splitlines() if line.strip())


def _wait_until_empty(env: dict[str, str], timeout: float = 400.0) -> None:
    deadline = time.monotonic() + timeout
    while _queue(env):
        assert time.monotonic() < deadline, f"tasks still queued: {_queue(env)}"
        time.sleep(1.0)


def _prompts(server: FakeOpenAIServer) -> Counter[str]:
    return Counter(json.dumps(r.messages, sort_keys=True) for r in server.records)


@pytest.mark.timeout(900)  # four `dvc exp run` start-ups and a resubmission on 2 shared cores
def test_a_sweep_runs_as_an_array_a_cancelled_task_is_named_and_resubmitted_alone(
    slurm: SlurmCluster, pg_url: str, tmp_path: Path
) -> None:
    with FakeOpenAIServer(responder=_answer, latency_s=LATENCY_S) as server:
        env = _env(slurm, pg_url)
        ws = _project(tmp_path, env, server.api_base)
        sweep = [
            "submit", "--name", "sw",
            "-S", f"benchmarks.synthetic.source.path={','.join(FILES)}",
            "-S", f"model.concurrency={','.join(str(c) for c in CONCURRENCY)}",
        ]  # fmt: skip
        line = _cli(ws, env, "slurm", *sweep)
        assert "sweep sw: 4 experiments, 0 pushed, 0 pending or running; submitted job" in line
        job = re.search(r"submitted job (\d+)", line)
        assert job is not None, line
        victim = f"{job.group(1)}_0"  # data/a.jsonl at concurrency 1: 6 requests, 0.6 s each
        deadline = time.monotonic() + 300
        while True:
            queued = _queue(env)
            if server.hits and queued.get(victim) == "RUNNING":
                break
            assert victim in queued, f"{victim} ended before the cancel"
            assert time.monotonic() < deadline, queued
            time.sleep(0.2)
        time.sleep(1.5)  # its requests in flight
        _sh(ws, env, "scancel", victim)
        _wait_until_empty(env)

        collected = _cli(ws, env, "slurm", "collect", "--name", "sw", ok=(1,))
        print(f"{line}\n{collected}")  # shown with pytest -s (docs/team.md quotes a run)
        assert "sweep sw: 3 of 4 experiments collected" in collected, collected
        assert re.search(r"sw-1\s+CANCELLED.*job " + victim, collected), collected
        again = _cli(ws, env, "slurm", *sweep)  # the same sweep: only the missing one runs
        assert "4 experiments, 3 pushed, 0 pending or running; submitted job" in again, again
        assert again.rstrip().endswith("with 1 tasks: sw-1"), again
        _wait_until_empty(env)
        done = _cli(ws, env, "slurm", "collect", "--name", "sw")
        print(f"{again}\n{done}")
        assert "sweep sw: 4 of 4 experiments collected" in done, done
        assert "every experiment is here: make exps, make compare" in done

    prompts = _prompts(server)
    assert len(prompts) == 9, prompts  # every question of either file, none lost
    paid_twice = sum(n - 1 for n in prompts.values())
    print(f"server: {sum(prompts.values())} requests for {len(prompts)} prompts")
    assert paid_twice <= max(CONCURRENCY), prompts  # only the cancelled task's in flight
    table = _cli(ws, env, "compare", "--slot", "model", "--csv")
    rows = {
        row["experiment"]: row
        for row in csv.DictReader(io.StringIO(table))
        if row["column"] == "synthetic"
    }
    shown = json.loads(_sh(ws, env, "dvc", "exp", "show", "--json", "--no-pager"))
    paths = {
        exp["name"]: rev["data"]["params"]["params.yaml"]["data"]["benchmarks"]["synthetic"][
            "source"
        ]["path"]
        for base in shown
        for exp in base.get("experiments") or []
        for rev in exp["revs"]
    }
    assert set(paths) == {"sw-1", "sw-2", "sw-3", "sw-4"}, paths
    for name, path in paths.items():
        assert float(rows[name]["accuracy"]) == _expected_accuracy(FILES[path]), table
        assert rows[name]["accuracy n"] == "6.0", table
