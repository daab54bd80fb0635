"""A region set reaches the twohop stages' ``dvc.lock`` entries as its digest, never stale.

The stages declare ``region_sets.<set>.digest`` instead of the set's values (docs/measured.md:
68 KB of a lock DVC rewrites after every stage). The digest must follow every way the set can
change: ``make params`` and ``python -m cultureqa.compose`` (``compose_params``), an override,
and ``dvc exp run -S`` (DVC's own Hydra composition with the project's plugin); a params.yaml
whose values were edited without recomposing fails in the stage and in ``params_check``.
"""

from __future__ import annotations

import copy
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cultureqa.compose import compose_params
from cultureqa.core.config import load_params
from cultureqa.core.params_digest import DigestError, check, digest
from cultureqa.regions.config import RegionSet, RegionSetError

ROOT = Path(__file__).resolve().parents[1]


def _committed() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))


def test_params_yaml_carries_each_sets_digest_as_conf_composes_it() -> None:
    params, composed = _committed(), compose_params(ROOT / "conf")
    for name, values in params["region_sets"].items():
        check(values, name)
        assert values["digest"] == composed["region_sets"][name]["digest"] == digest(values)
    node = load_params(ROOT / "params.yaml")["region_sets"]  # OmegaConf, as some callers read it
    assert {name: digest(node[name]) for name in node} == {
        name: values["digest"] for name, values in params["region_sets"].items()
    }


def test_an_override_of_a_set_changes_its_digest_and_no_other() -> None:
    base = compose_params(ROOT / "conf")["region_sets"]
    over = compose_params(ROOT / "conf", ["region_sets.un_members.noun.en=nation"])["region_sets"]
    assert over["un_members"]["noun"] == {"en": "nation"}
    check(over["un_members"], "un_members")
    assert over["un_members"]["digest"] != base["un_members"]["digest"]
    assert over["indonesia"]["digest"] == base["indonesia"]["digest"]


def test_dvc_exp_run_composition_writes_the_same_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DVC's ``compose_and_dump`` (what ``dvc exp run -S`` calls), with the plugin it loads.

    The plugin wraps Hydra's config loader for the whole process (DVC's override checks, API keys
    included): the wrap is undone after this test, so later compositions in the same worker are
    the project's own.
    """
    from dvc.utils.hydra import compose_and_dump
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", ConfigLoaderImpl.load_configuration)
    sys.path.insert(0, str(ROOT / "dvc_hydra_plugins"))
    try:
        importlib.import_module("hydra_plugins.cultureqa_overrides")
    finally:
        sys.path.remove(str(ROOT / "dvc_hydra_plugins"))
    out = tmp_path / "params.yaml"
    override = ["region_sets.un_members.noun.en=nation"]
    compose_and_dump(out, str(ROOT / "conf"), None, "config", tmp_path, override)
    sets = yaml.safe_load(out.read_text(encoding="utf-8"))["region_sets"]
    check(sets["un_members"], "un_members")
    want = compose_params(ROOT / "conf", override)["region_sets"]["un_members"]["digest"]
    committed = _committed()["region_sets"]["un_members"]["digest"]
    assert sets["un_members"]["digest"] == want != committed


def test_a_set_edited_without_recomposing_fails_in_the_stage() -> None:
    params = copy.deepcopy(_committed())
    params["region_sets"]["un_members"]["noun"]["en"] = "nation"  # the digest left behind
    with pytest.raises(RegionSetError, match=r"region_sets.un_members: digest \w+, but its"):
        RegionSet.selected(params, ROOT, "un_members")
    del params["region_sets"]["indonesia"]["digest"]
    with pytest.raises(DigestError, match=r"region_sets\.indonesia: no digest"):
        check(params["region_sets"]["indonesia"], "region_sets.indonesia")


def test_params_check_fails_on_a_set_edited_without_recomposing(tmp_path: Path) -> None:
    """params_check reruns on any change of params.yaml (a file dep) and names the set."""
    params = _committed()
    params["region_sets"]["un_members"]["noun"]["en"] = "nation"
    subprocess.run(["cp", "-R", str(ROOT / "conf"), str(tmp_path / "conf")], check=True)
    # written after conf/: an edited params.yaml (an experiment's values), not a stale one
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "stages" / "params_check.py")], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "params.yaml region_sets.un_members: digest" in done.stderr
    assert "Traceback" not in done.stderr
