"""A region set or benchmark reaches its stages' ``dvc.lock`` entries as its digest, never stale.

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

from cultureqa.benchmarks.spec import BenchmarkSpec, SpecError
from cultureqa.compose import compose_params
from cultureqa.core.config import load_params
from cultureqa.core.params_digest import DigestError, check, digest
from cultureqa.regions.config import RegionSet, RegionSetError
from cultureqa.testing.composed import composed

ROOT = Path(__file__).resolve().parents[1]


def _committed() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))


def test_params_yaml_carries_each_sets_digest_as_conf_composes_it() -> None:
    params, composition = _committed(), composed(ROOT / "conf")
    for name, values in params["region_sets"].items():
        check(values, name)
        assert values["digest"] == composition["region_sets"][name]["digest"] == digest(values)
    node = load_params(ROOT / "params.yaml")["region_sets"]  # OmegaConf, as some callers read it
    assert {name: digest(node[name]) for name in node} == {
        name: values["digest"] for name, values in params["region_sets"].items()
    }


def test_an_override_of_a_set_changes_its_digest_and_no_other() -> None:
    base = composed(ROOT / "conf")["region_sets"]
    over = composed(ROOT / "conf", ["region_sets.un_members.noun.en=nation"])["region_sets"]
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
    dumped = yaml.safe_load(out.read_text(encoding="utf-8"))
    sets = dumped["region_sets"]
    check(sets["un_members"], "un_members")
    for name, values in dumped["benchmarks"].items():  # the same resolver fills the benchmarks'
        check(values, f"benchmarks.{name}")
    want = compose_params(ROOT / "conf", override)["region_sets"]["un_members"]["digest"]
    committed = _committed()["region_sets"]["un_members"]["digest"]
    assert sets["un_members"]["digest"] == want != committed


def test_a_set_edited_without_recomposing_fails_in_the_stage() -> None:
    params = copy.deepcopy(_committed())
    params["region_sets"]["un_members"]["noun"]["en"] = "nation"  # the digest left behind
    with pytest.raises(RegionSetError, match=r"region_sets.un_members: digest \w+, but its"):
        RegionSet.selected(params, ROOT, "un_members")
    del params["region_sets"]["indonesia"]["digest"]
    with pytest.raises(
        DigestError,
        match=r"region_sets\.indonesia: no digest; its config in conf/ needs the "
        r"line `digest: \$\{cultureqa_digest:\}`",
    ):
        check(params["region_sets"]["indonesia"], "region_sets.indonesia")


@pytest.mark.parametrize(
    ("path", "key"),
    [(("region_sets", "un_members", "noun"), "en"), (("benchmarks", "indoculture"), "description")],
    ids=["region set", "benchmark"],
)
def test_params_check_fails_on_values_edited_without_recomposing(
    path: tuple[str, ...], key: str, tmp_path: Path
) -> None:
    """params_check reruns on any change of params.yaml (a file dep) and names the mapping."""
    params = _committed()
    node = params
    for part in path:
        node = node[part]
    node[key] = "edited by hand"
    subprocess.run(["cp", "-R", str(ROOT / "conf"), str(tmp_path / "conf")], check=True)
    # written after conf/: an edited params.yaml (an experiment's values), not a stale one
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "stages" / "params_check.py")], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"params.yaml {'.'.join(path[:2])}: digest" in done.stderr
    assert "Traceback" not in done.stderr


def test_every_benchmark_config_composes_with_its_digest() -> None:
    """Each conf/benchmark/*.yaml, composed, carries the digest of its values; params.yaml too."""
    names = sorted(p.stem for p in (ROOT / "conf" / "benchmark").glob("*.yaml"))
    adds = [f"+benchmark@benchmarks.{n}={n}" for n in names if n not in _committed()["benchmarks"]]
    composition = compose_params(ROOT / "conf", adds)["benchmarks"]
    assert sorted(composition) == names
    for name, values in composition.items():
        check(values, f"benchmarks.{name}")
        assert BenchmarkSpec.from_params({"benchmarks": composition}, name).name == name
    for name, values in _committed()["benchmarks"].items():
        assert values["digest"] == composition[name]["digest"] == digest(values)


def test_an_override_of_a_benchmark_changes_its_digest_and_its_sets() -> None:
    """A set whose source is the benchmark carries its digest, so the set's digest follows it."""
    base = composed(ROOT / "conf")
    over = composed(ROOT / "conf", ["benchmarks.indoculture.description=x"])
    bench, was = over["benchmarks"]["indoculture"], base["benchmarks"]["indoculture"]
    assert bench["digest"] != was["digest"]
    source = over["region_sets"]["indonesia"]["source"]
    assert source["benchmark_digest"] == over["benchmarks"]["indoculture"]["digest"]
    assert over["region_sets"]["indonesia"]["digest"] != base["region_sets"]["indonesia"]["digest"]
    assert over["region_sets"]["un_members"] == base["region_sets"]["un_members"]


def test_a_benchmark_edited_without_recomposing_fails_where_it_is_read() -> None:
    params = copy.deepcopy(_committed())
    params["benchmarks"]["indoculture"]["description"] = "edited by hand"
    with pytest.raises(SpecError, match=r"^params.yaml benchmarks\.indoculture: digest \w+, but"):
        BenchmarkSpec.from_params(params, "indoculture")
    with pytest.raises(RegionSetError, match=r"benchmarks\.indoculture: digest .*make params"):
        RegionSet.selected(params, ROOT, "indonesia")
    # the set's own copy of the digest left behind (edited by hand, both digests otherwise valid)
    params = copy.deepcopy(_committed())
    source = params["region_sets"]["indonesia"]["source"]
    source["benchmark_digest"] = "0" * 16
    params["region_sets"]["indonesia"]["digest"] = digest(params["region_sets"]["indonesia"])
    with pytest.raises(RegionSetError, match=r"source\.benchmark_digest: 0+, but benchmarks"):
        RegionSet.selected(params, ROOT, "indonesia")
