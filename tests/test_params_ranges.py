"""Every numeric setting has a range, checked when params.yaml is read (issue 25 item 3).

Out-of-range values used to run: ``max_error_share`` 5 passed every run, ``concurrency`` 0 hung
or ran serially, ``max_tokens`` 0 asked for nothing, ``progress: maybe`` was true. Each is now one
line naming the key, the value and the range, before any model call.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from cultureqa.core.config import ConfigTypeError, load_params
from cultureqa.core.params_schema import RANGES, Node, check_values, conf_schema
from cultureqa.testing import FakeOpenAIServer
from cultureqa.testing.composed import composed, schema
from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


def _params_with(tmp_path: Path, key: str, value: Any) -> Path:
    shutil.copytree(CONF, tmp_path / "conf")
    params = OmegaConf.load(ROOT / "params.yaml")
    params.model.retry = {"attempts": 6, "initial_wait_s": 1.0, "max_wait_s": 60.0,
                          "timeout_s": 120.0}  # fmt: skip  # what an API model carries
    OmegaConf.update(params, key, value, force_add=True)
    OmegaConf.save(params, tmp_path / "params.yaml")
    return tmp_path / "params.yaml"


@pytest.mark.parametrize(
    ("key", "value", "range_"),
    [
        ("evaluate.max_error_share", -1, "a number in [0, 1]"),
        ("evaluate.max_error_share", 5, "a number in [0, 1]"),
        ("model.concurrency", 0, "an integer >= 1"),
        ("model.concurrency", -2, "an integer >= 1"),
        ("model.decoding.max_tokens", 0, "an integer >= 1"),
        ("model.decoding.temperature", -1, "a number in [0, 2]"),
        ("model.retry.attempts", 0, "an integer >= 1"),
        ("baselines.random.concurrency", 2.5, "an integer >= 1"),
        ("spend.budget_usd", -0.5, "a number >= 0 or null"),
        ("spend.budget_usd", math.inf, "a number >= 0 or null"),
        ("mocqa_eval.limit", 0, "an integer >= 1 or null"),
        ("evaluate.max_error_share", "0.1", "a number in [0, 1]"),
    ],
)
def test_an_out_of_range_setting_is_one_line_with_key_value_and_range(
    tmp_path: Path, key: str, value: Any, range_: str
) -> None:
    path = _params_with(tmp_path, key, value)
    with pytest.raises(ConfigTypeError) as caught:
        load_params(path)
    assert str(caught.value) == f"{path}: '{key}' = {value!r} is out of range (must be {range_})"


def test_a_flag_that_is_not_a_boolean_is_named(tmp_path: Path) -> None:
    path = _params_with(tmp_path, "evaluate.progress", "maybe")
    with pytest.raises(ConfigTypeError, match=r"'evaluate\.progress' = 'maybe' is not a boolean"):
        load_params(path)


def test_a_stage_with_concurrency_zero_stops_before_any_model_call(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        ws = make_api_workspace(ROOT, tmp_path / "ws", 3, server.api_base, 0)
        done = subprocess.run(
            [sys.executable, str(ROOT / "stages" / "evaluate.py"), "--benchmark", "synthetic",
             "--model", "model"],
            cwd=ws, env={**stage_env(ws), "PYTHONPATH": str(ROOT / "src")},
            capture_output=True, text=True,
        )  # fmt: skip
        sent = server.hits
    assert done.returncode == 2 and sent == 0
    assert done.stderr.strip() == (
        f"error: {ws / 'params.yaml'}: 'model.concurrency' = 0 is out of range "
        "(must be an integer >= 1)"
    )


def _numeric_leaves(node: Node, path: str = "") -> list[str]:
    found = []
    for key, child in node.children.items():
        here = f"{path}.{key}" if path else key
        if child.kinds & {"int", "float"}:
            found.append(here)
        found.extend(_numeric_leaves(child, here))
    return found


def test_every_numeric_key_of_conf_has_a_range() -> None:
    leaves = _numeric_leaves(conf_schema(CONF))
    assert len(leaves) > 40  # the walk sees model, stage, build and analysis settings
    missing = sorted({p for p in leaves if p.rsplit(".", 1)[-1] not in RANGES})
    assert missing == [], f"add a range to params_schema.RANGES for {missing}"


@pytest.mark.parametrize(
    "overrides",
    [[], ["judge=panel", "generator=llm"]]
    + [[f"model={p.stem}"] for p in sorted((CONF / "model").glob("*.yaml"))],
)
def test_every_value_conf_ships_is_in_range(overrides: list[str]) -> None:
    assert check_values(composed(CONF, overrides), schema(CONF)) == []
