"""params.yaml is the composition of conf/, and every config group composes and parses."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.compose import compose_params

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


def test_committed_params_equal_composed_conf() -> None:
    committed = OmegaConf.to_container(OmegaConf.load(ROOT / "params.yaml"))
    assert committed == compose_params(CONF), "params.yaml is stale: run `make params`"


@pytest.mark.parametrize("name", sorted(p.stem for p in (CONF / "model").glob("*.yaml")))
def test_every_model_config_composes(name: str) -> None:
    params = compose_params(CONF, [f"model={name}"])
    model = params["model"]
    assert model["backend"] in {"local_hf", "litellm", "random", "fixed"}
    assert "decoding" in model and "id" in model
    for value in OmegaConf.to_container(OmegaConf.create(model)).values():  # type: ignore[union-attr]
        assert "sk-" not in str(value), "no secrets in configs"


@pytest.mark.parametrize("name", sorted(p.stem for p in (CONF / "source").glob("*.yaml")))
def test_every_source_feeds_the_benchmark(name: str) -> None:
    params = compose_params(CONF, [f"source={name}"])
    assert params["benchmarks"]["indoculture"]["source"] == params["source"]


def test_benchmark_specs_in_params_parse() -> None:
    params = compose_params(CONF)
    for name in params["evaluate"]["benchmarks"]:
        spec = BenchmarkSpec.from_config(params["benchmarks"][name])
        assert spec.settings, name


def test_roster_entries_resolve_to_model_configs() -> None:
    cfg = OmegaConf.create(compose_params(CONF))
    for entry in cfg.evaluate.roster:
        assert OmegaConf.select(cfg, entry) is not None, entry
