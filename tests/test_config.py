"""params.yaml is the composition of conf/, and every config group composes and parses."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.compose import compose_params
from cultureqa.core.params_schema import check_keys, conf_schema
from cultureqa.testing.composed import composed, schema

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


def test_committed_params_equal_composed_conf() -> None:
    committed = OmegaConf.to_container(OmegaConf.load(ROOT / "params.yaml"))
    assert committed == composed(CONF), "params.yaml is stale: run `make params`"


MODEL_KEYS = {"id", "backend", "batch_size", "concurrency", "ramp_up_s", "decoding", "options"}
MODEL_KEYS |= {"retry", "price", "max_prompt_tokens"}


@pytest.mark.parametrize("name", sorted(p.stem for p in (CONF / "model").glob("*.yaml")))
def test_every_model_config_composes(name: str) -> None:
    params = composed(CONF, [f"model={name}"])
    model = params["model"]
    assert model["backend"] in {"local_hf", "litellm", "random", "fixed"}
    assert "decoding" in model and "id" in model
    assert set(model) <= MODEL_KEYS, "a base/ config merged under its own key (missing @_here_?)"
    assert check_keys(params, schema(CONF)) == []
    for value in OmegaConf.to_container(OmegaConf.create(model)).values():  # type: ignore[union-attr]
        assert "sk-" not in str(value), "no secrets in configs"


@pytest.mark.parametrize("name", sorted(p.stem for p in (CONF / "source").glob("*.yaml")))
def test_every_source_feeds_the_benchmark(name: str) -> None:
    params = composed(CONF, [f"source={name}"])
    assert params["benchmarks"]["indoculture"]["source"] == params["source"]


def test_benchmark_specs_in_params_parse() -> None:
    params = composed(CONF)
    for name in params["evaluate"]["benchmarks"]:
        spec = BenchmarkSpec.from_config(params["benchmarks"][name])
        assert spec.settings, name


def test_roster_entries_resolve_to_model_configs() -> None:
    cfg = OmegaConf.create(composed(CONF))
    for entry in cfg.evaluate.roster:
        assert OmegaConf.select(cfg, entry) is not None, entry


def test_model_configs_share_a_base_instead_of_repeating_it() -> None:
    api = composed(CONF, ["model=gpt_5"])["model"]
    assert api["retry"]["timeout_s"] == 120.0 and api["decoding"]["temperature"] == 1.0
    vllm = composed(CONF, ["model=qwen2_5_7b"])["model"]
    assert vllm["retry"] == {**api["retry"], "timeout_s": 300.0}
    assert vllm["options"]["litellm_model"] == "hosted_vllm/Qwen/Qwen2.5-7B-Instruct"
    uses_base = [p for p in (CONF / "model").glob("*.yaml") if "base/" in p.read_text()]
    assert len(uses_base) >= 19


def test_required_values_of_the_generic_endpoint_stay_required() -> None:
    # `???` never overrides a base value in OmegaConf, so this config must not sit on base/api.
    model = composed(CONF, ["model=openai_compatible"])["model"]
    assert model["id"] == model["options"]["litellm_model"] == model["options"]["api_base"] == "???"


def test_a_base_without_here_is_refused(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf)
    gpt = conf / "model" / "gpt_5.yaml"
    gpt.write_text(gpt.read_text().replace("base/api@_here_", "base/api"))
    nested = compose_params(conf, ["model=gpt_5"])["model"]
    assert "base" in nested and "retry" not in nested  # what Hydra does without @_here_
    with pytest.raises(ValueError, match=r"gpt_5.yaml: defaults entry 'base/api'.*base/api@_here_"):
        conf_schema(conf)
