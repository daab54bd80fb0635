"""params.yaml under plain ``dvc repro`` and ``make`` (issue 25 item 9).

A misspelt key used to pass whenever no stage needed to run; ``make repro`` called an applied
experiment's params.yaml stale, and ``make params`` then dropped the experiment's values without
a word. Now unknown keys, a stale params.yaml and an applied experiment are three different
outcomes, and the always-run ``params_check`` stage sees the first even when all is up to date.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from cultureqa.cli import main
from cultureqa.compose import compose_params
from tests.test_dvc_deps import COPIED, _dvc, _placeholders

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "conf", tmp_path / "conf")
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    return tmp_path


def _set(project: Path, key: str, value: object) -> None:
    params = OmegaConf.load(project / "params.yaml")
    OmegaConf.update(params, key, value, force_add=True)
    OmegaConf.save(params, project / "params.yaml")


def _older_conf(project: Path) -> None:
    past = time.time() - 60
    for path in (project / "conf").rglob("*.yaml"):
        os.utime(path, (past, past))


def _cli(project: Path, *args: str) -> int:
    return main(["--root", str(project), "params", *args])


def test_an_applied_experiment_runs_and_make_params_keeps_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _set(project, "model.decoding.max_tokens", 32)  # what `dvc exp apply` writes
    _older_conf(project)
    assert _cli(project, "check") == 0
    out = capsys.readouterr().out
    assert "applied experiment's values" in out
    assert "model.decoding.max_tokens: 32 (conf/: 16)" in out
    before = (project / "params.yaml").read_text()
    assert _cli(project, "compose") == 2
    err = capsys.readouterr().err
    assert "make params FORCE=1" in err and "model.decoding.max_tokens: 32" in err
    assert (project / "params.yaml").read_text() == before  # never overwritten silently
    assert _cli(project, "compose", "--force") == 0
    assert "replacing model.decoding.max_tokens: 32 (conf/: 16)" in capsys.readouterr().out
    assert OmegaConf.to_container(OmegaConf.load(project / "params.yaml")) == compose_params(
        project / "conf"
    )


def test_conf_edited_after_params_is_stale(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _set(project, "model.decoding.max_tokens", 32)
    past = time.time() - 60
    os.utime(project / "params.yaml", (past, past))
    os.utime(project / "conf" / "config.yaml")  # conf/ edited after params.yaml was written
    assert _cli(project, "check") == 2
    assert "params.yaml is stale (conf/ changed after it was composed)" in capsys.readouterr().err


def test_an_unknown_key_is_its_own_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _set(project, "evaluate.max_eror_share", 0.2)
    _older_conf(project)
    assert _cli(project, "check") == 2
    err = capsys.readouterr().err
    assert "unknown key 'evaluate.max_eror_share' (did you mean 'evaluate.max_error_share'?)" in err
    assert "stale" not in err and "experiment" not in err


def test_dvc_repro_fails_on_a_misspelt_key_when_every_other_stage_is_up_to_date(
    tmp_path: Path,
) -> None:
    for name in COPIED:
        src, dst = ROOT / name, tmp_path / name
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, dst)
    _dvc(tmp_path, "init", "--no-scm", "-q")
    _placeholders(tmp_path, ["cases_ingest"])
    _dvc(tmp_path, "commit", "-f", "-q", "cases_ingest")
    _set(tmp_path, "evaluate.max_eror_share", 0.2)
    assert json.loads(_dvc(tmp_path, "status", "--json", "cases_ingest")) == {}  # DVC: up to date
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "PYTHONPATH": str(tmp_path / "src"), "DVC_NO_ANALYTICS": "1"}  # fmt: skip
    env.pop("DVC_ROOT", None)
    done = subprocess.run(
        [sys.executable, "-m", "dvc", "repro", "params_check", "cases_ingest"], cwd=tmp_path,
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode != 0
    assert "unknown key 'evaluate.max_eror_share' (did you mean" in done.stderr
    assert "Traceback" not in done.stderr
