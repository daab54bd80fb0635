"""params.yaml read as a plain tree (libyaml) agrees with OmegaConf's reading, and stays checked."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from cultureqa.core.config import (
    ParamsError,
    ParamsLoader,
    load_params,
    lookup,
    read_params,
    select,
    typed,
)

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_params_read_as_omegaconf_reads_them() -> None:
    assert read_params(ROOT / "params.yaml") == OmegaConf.to_container(
        OmegaConf.load(ROOT / "params.yaml"), resolve=True
    )


def _workspace(tmp_path: Path, text: str) -> Path:
    shutil.copytree(ROOT / "conf", tmp_path / "conf")
    path = tmp_path / "params.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_scalars_follow_omegaconfs_rules() -> None:
    text = "a: 1e-3\nb: 2024-01-01\nc: .5\nd: 1_000\ne: .inf\nf: 'yes'\ng: yes\n"
    ours = yaml.load(text, Loader=ParamsLoader)
    assert ours == OmegaConf.to_container(OmegaConf.create(text))
    assert ours["a"] == 0.001 and ours["b"] == "2024-01-01"


def test_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    text = (ROOT / "params.yaml").read_text(encoding="utf-8") + "\nevaluate: {}\n"
    with pytest.raises(yaml.constructor.ConstructorError, match="duplicate key evaluate"):
        read_params(_workspace(tmp_path, text))


def test_a_misspelt_key_is_still_named(tmp_path: Path) -> None:
    text = (ROOT / "params.yaml").read_text(encoding="utf-8")
    text = text.replace("max_error_share:", "max_eror_share:", 1)
    with pytest.raises(ParamsError, match="max_eror_share"):
        read_params(_workspace(tmp_path, text))


def test_interpolations_are_resolved_as_before(tmp_path: Path) -> None:
    raw = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    raw["evaluate"]["max_error_share"] = "${model.decoding.temperature}"
    path = _workspace(tmp_path, yaml.safe_dump(raw, sort_keys=False))
    plain = read_params(path)
    assert plain["evaluate"]["max_error_share"] == raw["model"]["decoding"]["temperature"]
    assert typed(load_params(path), "evaluate.max_error_share", float) == typed(
        plain, "evaluate.max_error_share", float
    )


def test_plain_and_omegaconf_trees_answer_alike() -> None:
    plain = read_params(ROOT / "params.yaml")
    node = load_params(ROOT / "params.yaml")
    for key in ("evaluate.max_error_share", "evaluate.progress", "prompt.style", "no.such.key"):
        assert lookup(plain, key) == lookup(node, key)
    assert typed(plain, "evaluate.max_error_share", float) == typed(
        node, "evaluate.max_error_share", float
    )
    assert select(plain, "model") == select(node, "model")
    copy = select(plain, "model")
    copy["id"] = "changed"
    assert plain["model"]["id"] != "changed", "select gives a copy, as OmegaConf's did"


def test_the_evaluate_stages_imports_and_params_read_leave_omegaconf_out() -> None:
    code = (
        "import sys; sys.path.insert(0, 'stages'); import evaluate; "
        "from cultureqa.core.config import read_params; "
        "from cultureqa.core.spend import budget_from; "
        "p = read_params('params.yaml'); budget_from(p); "
        "print('omegaconf' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False", "OmegaConf costs the stage 0.25 CPU s to import"
