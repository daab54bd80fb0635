"""The tests' memo of conf/ compositions answers as Hydra would, for the conf/ as it is now."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cultureqa.compose import OverrideError, compose_params
from cultureqa.testing.composed import composed, schema

ROOT = Path(__file__).resolve().parents[1]


def test_an_edited_conf_composes_afresh_and_a_changed_copy_stays_the_tests_own(
    tmp_path: Path,
) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    first = composed(conf, ["prompt=cot"])
    assert first == compose_params(conf, ["prompt=cot"])
    first["prompt"]["style"] = "changed by this test"
    assert (
        composed(conf, ["prompt=cot"])["prompt"] == compose_params(conf, ["prompt=cot"])["prompt"]
    )

    config = conf / "config.yaml"
    config.write_text(config.read_text() + "\nmemo_probe: 1\n")
    assert composed(conf, ["prompt=cot"])["memo_probe"] == 1
    assert "memo_probe" in schema(conf).children


def test_a_refused_override_raises_on_every_call() -> None:
    for _ in range(2):
        with pytest.raises(OverrideError, match="xqzw"):
            composed(ROOT / "conf", ["model=xqzw"])
