"""The params key check is noted once passed and done again after any edit (issue 47 item 1).

Building the schema of conf/ cost every stage 0.07 CPU s before its first request; a passed
check of the same params.yaml against the same conf/ and checker code is noted in the user
cache. These tests plant a violation after a pass, in params.yaml and in conf/, and find it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

import cultureqa.core.params_schema as params_schema
from cultureqa.core.config import ParamsError, read_params

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(ROOT / "conf", tmp_path / "conf")
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    monkeypatch.setenv("CULTUREQA_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _schema_builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = params_schema.conf_schema

    def counted(conf_dir: Path) -> params_schema.Node:
        calls.append(conf_dir)
        return real(conf_dir)

    monkeypatch.setattr(params_schema, "conf_schema", counted)
    return calls


def test_a_passed_check_is_noted_and_not_built_again(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds = _schema_builds(monkeypatch)
    first = read_params(project / "params.yaml")
    assert len(builds) == 1
    assert len(list((project / "cache" / "params-checked").iterdir())) == 1
    assert read_params(project / "params.yaml") == first
    assert len(builds) == 1  # noted: the schema is not built again


def test_an_unknown_key_planted_after_a_pass_is_found(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_params(project / "params.yaml")
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["evaluate"]["max_eror_share"] = 0.1
    (project / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(ParamsError, match=r"unknown key 'evaluate\.max_eror_share'"):
        read_params(project / "params.yaml")
    with pytest.raises(ParamsError):  # a failed check is never noted
        read_params(project / "params.yaml")


def test_a_conf_edit_after_a_pass_checks_again(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_params(project / "params.yaml")
    builds = _schema_builds(monkeypatch)
    config = project / "conf" / "config.yaml"
    config.write_text(config.read_text() + "\n# edited\n")
    read_params(project / "params.yaml")
    assert len(builds) == 1  # the edit changed the key: the schema was built again


def test_an_unwritable_cache_still_checks(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = project / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("CULTUREQA_CACHE_DIR", str(blocker))
    builds = _schema_builds(monkeypatch)
    read_params(project / "params.yaml")
    read_params(project / "params.yaml")
    assert len(builds) == 2  # nothing noted: each read checks
