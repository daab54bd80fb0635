"""A fresh clone's `dvc repro` leaves `git status` clean, and the README's sweep runs (slow).

Clone A commits baselines-only params (no model download) and the `dvc.lock` its `dvc repro`
writes; clone B, cloned from A with no outputs, DVC cache, response store or run log, reruns the
same stages: every output must hash as A's did, so B's tree stays clean and its MLflow runs record
``git.dirty=False``. These run real DVC in subprocesses (minutes on 2 cores), hence ``slow``.
"""

from __future__ import annotations

import csv
import io
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from cultureqa.compose import compose_params

ROOT = Path(__file__).resolve().parents[1]
INDOCULTURE = ["analyze@indoculture"]  # the one track stage logs every family: whole pipeline


def _sh(cwd: Path, *args: str, timeout: int = 1800) -> str:
    env = dict(os.environ)
    env.update(
        PATH=f"{Path(sys.executable).parent}:{env['PATH']}",
        PYTHONPATH=str(cwd / "src"),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        DVC_NO_ANALYTICS="1",
        MLFLOW_DISABLE_TELEMETRY="true",
        GX_ANALYTICS_ENABLED="false",
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    for key in ("DVC_ROOT", "CULTUREQA_STATE_DIR", "DVC_EXP_NAME"):
        env.pop(key, None)
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _baseline_clone(tmp_path: Path) -> Path:
    """Clone A: HEAD with params composed for model=random (every roster entry a baseline)."""
    repo = tmp_path / "a"
    _sh(tmp_path, "git", "clone", "--quiet", str(ROOT), str(repo))
    params = compose_params(repo / "conf", ["model=random"])
    params["evaluate"]["progress"] = False
    (repo / "params.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(params)))
    _sh(repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "baselines")
    return repo


@pytest.mark.slow
@pytest.mark.timeout(2400)  # two whole-pipeline repros: well past the suite's 300 s default
@pytest.mark.parametrize("targets", [INDOCULTURE, []], ids=["indoculture", "whole-pipeline"])
def test_fresh_clone_repro_leaves_git_clean(tmp_path: Path, targets: list[str]) -> None:
    first = _baseline_clone(tmp_path)
    _sh(first, "dvc", "repro", *targets)
    _sh(first, "git", "add", "dvc.lock", "metrics")
    _sh(first, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "lock")
    fresh = tmp_path / "b"
    _sh(tmp_path, "git", "clone", "--quiet", str(first), str(fresh))
    _sh(fresh, "dvc", "repro", *targets)
    assert _sh(fresh, "git", "status", "--porcelain") == ""
    if targets:  # the track stage runs in the whole pipeline only
        return
    with sqlite3.connect(fresh / "mlflow.db") as db:
        dirty = {v for (v,) in db.execute("select value from tags where key = 'git.dirty'")}
    assert dirty == {"False"}


@pytest.mark.slow
@pytest.mark.timeout(3600)  # four whole-pipeline experiments: well past the suite's 300 s default
def test_documented_sweep_runs_as_dvc_experiments(tmp_path: Path) -> None:
    """`dvc exp run --queue -S 'model=random,first_option' -S 'prompt=zero_shot,cot'`, as shown."""
    repo = tmp_path / "a"
    _sh(tmp_path, "git", "clone", "--quiet", str(ROOT), str(repo))
    _sh(repo, "dvc", "exp", "run", "--queue", "-S", "model=random,first_option",
        "-S", "prompt=zero_shot,cot")  # fmt: skip
    _sh(repo, "dvc", "exp", "run", "--run-all")
    shown = _sh(repo, "dvc", "exp", "show", "--only-changed", "--no-pager", "--csv")
    rows = [r for r in csv.DictReader(io.StringIO(shown)) if r["typ"] != "baseline"]
    assert len(rows) == 4 and {r["State"] for r in rows} == {"Success"}, shown
    style = next(c for c in rows[0] if c.endswith("prompt.style"))
    model = next(c for c in rows[0] if c.endswith("model.id"))
    assert {(r[model], r[style]) for r in rows} == {
        (m, p) for m in ("random", "first-option") for p in ("zero_shot", "cot")
    }
    assert _sh(repo, "git", "status", "--porcelain") == ""
