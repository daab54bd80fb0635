"""``make exp`` and ``make sweep`` end with their results table, not with DVC's lines.

``dvc exp run`` prints its stages' output while they run and then its own lines ("Ran
experiment(s)", "Experiment results have been applied"), so no stage can print last. The two
targets run DVC and then the table: ``make exp`` the workspace's (``cultureqa headline``, the
applied experiment's), ``make sweep`` the one across experiments (``cultureqa compare``).

Run in a throwaway git repository holding this project's ``Makefile``, ``conf/``, params and DVC
config with one tiny stage (as ``tests/test_overrides.py`` does): the model's predictions do not
exist there, so the headline's cells read ``n/a`` and compare prints its one-line notice; what is
checked is that the output, recomputed in-process, is what the targets print last.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cultureqa.runs.compare import compare, read_show
from cultureqa.runs.compare import render as render_compare
from cultureqa.runs.headline import headline, read_params, render
from tests.test_overrides import dvc_repo

ROOT = Path(__file__).resolve().parents[1]


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "DVC_NO_ANALYTICS": "1"}  # fmt: skip
    env.pop("DVC_ROOT", None)
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False,
                          timeout=600)  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return dvc_repo(tmp_path, also=("Makefile",))


def _ends_with(printed: str, table: str) -> None:
    lines, expected = printed.rstrip("\n").splitlines(), table.rstrip("\n").splitlines()
    assert lines[-len(expected) :] == expected, printed[-2000:]


@pytest.mark.timeout(300)
def test_make_exp_ends_with_the_applied_experiments_table(repo: Path) -> None:
    done = _run(repo, "make", "--no-print-directory", "exp", "ARGS=-S model=first_option")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Ran experiment(s)" in done.stdout + done.stderr  # DVC's lines come before the table
    assert read_params(repo)["model"]["id"] == "first-option"
    table = render(headline(repo, read_params(repo)))
    assert len(table.splitlines()) > 2  # a table (cells n/a), not a one-line notice
    _ends_with(done.stdout, table)


@pytest.mark.slow  # a queue worker starts (~1 min on 2 loaded cores)
@pytest.mark.timeout(600)
def test_make_sweep_ends_with_the_table_across_its_experiments(repo: Path) -> None:
    done = _run(repo, "make", "--no-print-directory", "sweep",
                "ARGS=-S 'model=random,first_option'")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    shown = read_show(repo)
    ran = sorted(str(e.params["model"]["id"]) for e in shown if e.rev is not None)
    assert {"first-option", "random"} <= set(ran), ran  # both experiments ran
    # no predictions in this repository: compare's table is its one-line notice
    _ends_with(done.stdout, render_compare(compare(repo, shown, None, "model")))


@pytest.mark.timeout(300)
def test_a_failed_make_exp_leaves_the_workspace_as_it_was(repo: Path) -> None:
    """Planted: a second stage fails under ``-S model=first_option`` after the first one ran.

    ``dvc exp run`` alone leaves `` M params.yaml`` (the override) and `` M dvc.lock`` (the
    first stage's new lock) and the failed stage's output removed; ``make exp`` restores all three.
    """
    stages = {
        "show": {"cmd": "echo ${model.id} > model.txt", "params": ["model.id"],
                 "outs": ["model.txt"]},
        "boom": {"cmd": "! grep -q first-option model.txt && echo fine > boom.txt",
                 "deps": ["model.txt"], "outs": ["boom.txt"]},
    }  # fmt: skip
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}))
    assert _run(repo, "dvc", "repro", "-q").returncode == 0
    _run(repo, "git", "add", "-A")
    _run(repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "baseline")
    assert _run(repo, "git", "status", "--porcelain").stdout == ""
    plain = _run(repo, "dvc", "exp", "run", "-S", "model=first_option")  # the failure as it is
    assert plain.returncode != 0 and not (repo / "boom.txt").exists()
    assert _run(repo, "git", "status", "--porcelain").stdout == " M dvc.lock\n M params.yaml\n"
    # the page's one command for a plain `dvc exp run` restores it
    assert _run(repo, "git", "checkout", "params.yaml", "dvc.lock").returncode == 0
    assert _run(repo, "dvc", "checkout").returncode == 0 and (repo / "boom.txt").exists()
    assert _run(repo, "git", "status", "--porcelain").stdout == ""
    done = _run(repo, "make", "--no-print-directory", "exp", "ARGS=-S model=first_option")
    assert done.returncode != 0
    assert "params.yaml and dvc.lock restored as before" in done.stderr, done.stderr
    assert _run(repo, "git", "status", "--porcelain").stdout == ""
    assert (repo / "boom.txt").read_text() == "fine\n"
    assert "first-option" not in (repo / "model.txt").read_text()
    status = _run(repo, "dvc", "status", "-q")
    assert status.returncode == 0 and status.stdout.strip() == "", status.stdout
