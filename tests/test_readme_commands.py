"""Every `dvc exp run -S …` shown in the README composes into params the stages accept.

The commands are read from README.md itself, so a renamed config group, option or key breaks
this test rather than a reader's first run. Sweeps (``a,b``) are expanded the way Hydra's basic
sweeper does; each resulting composition must pass the params key check the stages apply. Commands
that need API keys or servers are checked up to their composition; the offline ones run in
``tests/evaluation/test_cot.py`` (prompt=cot on every benchmark on the baselines) and, as whole
DVC experiments, in ``test_documented_sweep_runs_as_dvc_experiments`` (slow).
"""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cultureqa.compose import compose_params
from cultureqa.params_schema import check_keys, conf_schema

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
OVERRIDE = re.compile(r"-S\s+(?:'([^']*)'|(\S+))")


def _commands() -> list[list[str]]:
    """The -S overrides of each `dvc exp run` line of the README, and of each inline `-S …`."""
    found = []
    for line in README.splitlines():
        if "dvc exp run" in line and "-S" in line:
            # a code line as it is; in prose, only the `dvc exp run …` code spans
            spans = re.findall(r"`(dvc exp run[^`]*)`", line) if "`" in line else [line]
            found.extend([a or b for a, b in OVERRIDE.findall(s.split("#")[0])] for s in spans)
    for span in re.findall(r"`(-S [^`]*)`", README):
        found.append([a or b for a, b in OVERRIDE.findall(span)])
    return found


def _split_sweep(value: str) -> list[str]:
    """``a,b`` → [a, b], keeping commas inside brackets (``[zero_shot],[cot]``)."""
    parts, depth, current = [], 0, ""
    for char in value:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _expand(overrides: list[str]) -> list[list[str]]:
    options = []
    for override in overrides:
        key, _, value = override.partition("=")
        options.append([f"{key}={v}" for v in _split_sweep(value)])
    return [list(combo) for combo in itertools.product(*options)]


COMMANDS = _commands()


def test_the_readme_shows_the_documented_commands() -> None:
    flat = [" ".join(c) for c in COMMANDS]
    assert "model=random,first_option prompt=zero_shot,cot" in flat
    assert "mocqa_eval.prompts=[zero_shot],[cot]" in flat
    assert len(COMMANDS) >= 8


@pytest.mark.parametrize("overrides", COMMANDS, ids=lambda c: " ".join(c)[:60])
def test_every_documented_override_composes_and_passes_the_key_check(
    overrides: list[str],
) -> None:
    schema = conf_schema(ROOT / "conf")
    for combo in _expand(overrides):
        params = compose_params(ROOT / "conf", combo)
        assert check_keys(params, schema) == [], combo


def test_mocqa_human_help_runs() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "stages" / "mocqa_human.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "usage:" in done.stdout
