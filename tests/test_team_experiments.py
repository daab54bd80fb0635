"""Experiments across machines through git and DVC (issue 32 item 3; docs/team.md).

A bare git repository and a local-folder DVC remote stand for the team's shared ones; two clones
stand for two machines. Each runs its slice (one cheap stage: the random baseline on a synthetic
benchmark, a different seed per experiment), pushes it with ``dvc exp push origin``; a third
clone pulls everything with ``dvc exp pull origin`` and ``dvc exp show`` and ``cultureqa compare``
show every experiment of both, with numbers read from the pulled outputs (not ``n/a``).
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cultureqa.testing.workspace import make_api_workspace

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
EVALUATE = f"{sys.executable} {ROOT / 'stages' / 'evaluate.py'}"
GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@t"]
SLOT = "baselines.random"


def _env() -> dict[str, str]:
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT / "src"),
        "DVC_NO_ANALYTICS": "1",
        "CULTUREQA_LOG_LEVEL": "WARNING",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for key in ("DVC_ROOT", "CULTUREQA_STATE_DIR", "DVC_EXP_NAME", "CULTUREQA_STORE_URL"):
        env.pop(key, None)
    return env


def _sh(cwd: Path, *args: str) -> str:
    done = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout


def _seed_repository(ws: Path, origin: Path, remote: Path) -> None:
    """The project as a team shares it: one stage, a git remote and a DVC remote."""
    make_api_workspace(ROOT, ws, 30, "http://127.0.0.1:9/v1", 1)  # no model is called
    (ws / "dvc.yaml").write_text(
        textwrap.dedent(
            f"""\
            stages:
              evaluate:
                cmd: {EVALUATE} --benchmark synthetic --model {SLOT}
                deps:
                  - data/synthetic.jsonl
                params:
                  - {SLOT}
                  - benchmarks.synthetic
                outs:
                  - data/eval/synthetic/{SLOT}
                metrics:
                  - metrics/eval/synthetic/{SLOT}.json:
                      cache: false
            """
        )
    )
    (ws / ".gitignore").write_text("/.cultureqa/\n/.runlog/\n")
    _sh(ws, "git", "init", "-q", "-b", "main")
    _sh(ws, "dvc", "init", "-q")
    _sh(ws, "dvc", "remote", "add", "-d", "shared", str(remote))
    _sh(ws, "git", "add", "-A")
    _sh(ws, "git", *GIT_ID, "commit", "-qm", "project")
    _sh(ws, "git", "remote", "add", "origin", str(origin))
    _sh(ws, "git", "push", "-q", "origin", "main")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_each_machine_pushes_its_experiments_and_one_pulls_and_compares_them_all(
    tmp_path: Path,
) -> None:
    origin, remote = tmp_path / "origin.git", tmp_path / "dvc-remote"
    remote.mkdir()
    _sh(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    _seed_repository(tmp_path / "seed", origin, remote)
    slices = {"machine-a": [11, 12], "machine-b": [21]}
    for machine, seeds in slices.items():
        clone = tmp_path / machine
        _sh(tmp_path, "git", "clone", "-q", str(origin), str(clone))
        for seed in seeds:
            _sh(clone, "dvc", "exp", "run", "-q", "-n", f"{machine}-{seed}",
                "-S", f"{SLOT}.options.seed={seed}")  # fmt: skip
        _sh(clone, "dvc", "exp", "push", "origin", *(f"{machine}-{s}" for s in seeds))
    lead = tmp_path / "lead"
    _sh(tmp_path, "git", "clone", "-q", str(origin), str(lead))
    _sh(lead, "dvc", "exp", "pull", "origin")  # every experiment of HEAD, with its outputs
    shown = json.loads(_sh(lead, "dvc", "exp", "show", "--json", "--no-pager"))
    names = {
        exp["name"]: rev["data"]["params"]["params.yaml"]["data"]["baselines"]["random"]
        for base in shown
        for exp in base.get("experiments") or []
        for rev in exp["revs"]
    }
    expected = {f"{m}-{s}": s for m, seeds in slices.items() for s in seeds}
    assert {n: p["options"]["seed"] for n, p in names.items()} == expected
    table = _sh(lead, "cultureqa", "compare", "--slot", SLOT, "--csv")
    rows = {row["experiment"]: row for row in csv.DictReader(io.StringIO(table))}
    assert set(expected) <= set(rows), table
    for name in expected:  # accuracy read from the pulled outputs, not n/a
        assert 0.0 <= float(rows[name]["synthetic"]) <= 1.0, table
        assert rows[name]["synthetic n"] == "30.0", table
