"""The build stages' settings are parsed once from params, each default written once (in conf/).

A ``.get(key, default)`` in code beside the same default in conf/ let the two drift (the hop
diagnostic's code defaults named another model and limit than conf/); now a missing key is a
stale params file and fails at parse time, naming the key, and an unknown generator kind is
refused before any stage runs.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from cultureqa.compose import compose_params
from cultureqa.mocqa_build.pipeline import MocqaSettings

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"


def _params(*overrides: str) -> dict[str, Any]:
    return compose_params(CONF, list(overrides))


def test_default_params_parse_into_typed_settings() -> None:
    settings = MocqaSettings.from_params(_params(), ROOT)
    assert settings.generator.kind == "template" and settings.generator.model is None
    assert settings.human_per_stratum == 5
    assert settings.hop["model"] == "baselines.random" and settings.hop["limit"] is None
    assert settings.templates == ROOT / "data/knowledge/clue_templates.yaml"
    assert settings.judge.kind == "rules" and settings.judge.min_acceptable == 1


def test_the_judge_panel_is_parsed_with_the_settings() -> None:
    judge = MocqaSettings.from_params(_params("judge=panel"), ROOT).judge
    assert judge.kind == "panel" and judge.min_acceptable == 2
    assert sorted(judge.judges) == ["claude_3_7_sonnet", "deepseek_v3", "gpt_4o"]
    assert judge.prompt == ROOT / "prompts/mocqa/judge/panel.en.txt"


def test_llm_generator_settings_come_from_its_config_group() -> None:
    generator = MocqaSettings.from_params(_params("generator=llm"), ROOT).generator
    assert generator.kind == "llm" and generator.max_revisions == 2
    assert generator.prompts_dir == ROOT / "prompts/mocqa"
    assert generator.model is not None and generator.model["id"] == "claude-3-7-sonnet"
    assert generator.model["decoding"]["temperature"] == 1.0


@pytest.mark.parametrize(
    ("section", "key", "named"),
    [
        ("mocqa", "templates", "mocqa.templates"),
        ("mocqa", "human", "mocqa.human"),
        ("generator", "kind", "generator.kind"),
        ("judge", "min_acceptable", "judge.min_acceptable"),
        (None, "judge", "judge"),
    ],
)
def test_a_missing_key_is_named_not_defaulted(section: str | None, key: str, named: str) -> None:
    params = copy.deepcopy(_params())
    del (params[section] if section else params)[key]
    with pytest.raises(ValueError, match=rf"missing key '{named}' that conf/ defines"):
        MocqaSettings.from_params(params, ROOT)


def test_an_unknown_generator_kind_is_refused() -> None:
    params = copy.deepcopy(_params())
    params["generator"]["kind"] = "llm_v2"
    with pytest.raises(ValueError, match=r"generator.kind 'llm_v2' is neither"):
        MocqaSettings.from_params(params, ROOT)
