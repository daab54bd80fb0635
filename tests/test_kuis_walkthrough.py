"""The kuis walk-through of docs/benchmark-configs.md matches what the commands print today.

The page's blocks are run in a throwaway copy of the project's configs: ``cultureqa benchmark
add``, ``cultureqa benchmark check`` (failing on the gold imbalance), the page's YAML merged into
the proposed config, ``make params`` (``cultureqa params compose``) and the check again. Each
command's ``#`` lines must appear in its output in order, ``…`` standing for elided text and
line breaks for any whitespace. The page's YAML holds what ``add`` proposed and the values of the
finished config, ``conf/benchmark/kuis_budaya.yaml``, or the page names the finished config's
value. The closing ``dvc repro`` line is not run (a whole evaluation).

``benchmark add`` runs as a process, as a user types it (it also runs the contract test in a
pytest subprocess); the later commands call ``cultureqa.cli``'s ``main`` in-process in the copy
(:mod:`cultureqa.testing.inprocess`): what they print and return is the subject, and a process
each would import GX and the validation suite again (about 4.5 CPU s per ``check``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cultureqa import cli
from cultureqa.testing.inprocess import call_inprocess

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmark-configs.md"
COPIED = ["conf", "expectations", "prompts", "params.yaml", "dvc.yaml", "pyproject.toml",
          "tests/conftest.py", "tests/benchmarks/test_contract.py", "tests/fixtures/benchmarks",
          "data/sources/kuis_budaya"]  # fmt: skip


def _section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("## Walk-through: a published file with defects")
    return text[start : text.index("\n## ", start + 1)]


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```", _section(), re.S | re.M)


def _commands(block: str) -> list[tuple[str, str]]:
    """``(command, what the page says it prints)`` per command line of a bash block."""
    found: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("#"):
            found[-1][1].append(line.lstrip("#").strip())
        elif line.strip():
            found.append((line.split("  #")[0].strip(), []))
    return [(command, " ".join(said)) for command, said in found]


def _flat(text: str) -> str:
    return " ".join(text.split())


def _assert_shown(printed: str, said: str, command: str) -> None:
    """Every ``…``-separated fragment of ``said`` is in ``printed``, in order."""
    flat, at = _flat(printed), 0
    for fragment in (_flat(f) for f in said.split("…")):
        where = flat.find(fragment, at)
        assert where >= 0, f"{command!r} no longer prints {fragment!r}:\n{printed}"
        at = where + len(fragment)


def _cli(repo: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    if not process:
        return call_inprocess(lambda: cli.main(list(args)), ["cultureqa", *args], repo)
    return subprocess.run([sys.executable, "-m", "cultureqa.cli", *args], cwd=repo,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip


@pytest.mark.timeout(600)
def test_the_kuis_walk_through_prints_what_the_page_shows(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for name in COPIED:
        source, target = ROOT / name, repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    first, second = (_commands(b) for b in _blocks("bash"))
    (add, said_add), (check, said_check) = first
    assert (
        add.startswith("cultureqa benchmark add kuis") and check == "cultureqa benchmark check kuis"
    )
    added = _cli(repo, *add.split()[1:], process=True)
    assert added.returncode == 0, added.stdout + added.stderr
    _assert_shown(added.stdout + added.stderr, said_add, add)
    failed = _cli(repo, *check.split()[1:])
    assert failed.returncode != 0
    _assert_shown(failed.stdout + failed.stderr, said_check, check)

    config = repo / "conf" / "benchmark" / "kuis.yaml"
    proposed, block = yaml.safe_load(config.read_text(encoding="utf-8")), _blocks("yaml")[0]
    shown = yaml.safe_load(block)
    # the page's YAML is what `add` proposed plus the severity, and it is the finished config's;
    # where the finished config differs, the page says so with the finished value
    finished = yaml.safe_load((ROOT / "conf" / "benchmark" / "kuis_budaya.yaml").read_text())
    assert shown["rows"]["max_invalid_share"] == proposed["rows"]["max_invalid_share"]
    for section, values in shown.items():
        for key, value in values.items():
            if finished[section][key] != value:
                said = f"`{section}.{key}: {finished[section][key]}`"
                assert said in _flat(_section()), f"the page does not say the config has {said}"
    merged = proposed | shown
    config.write_text(yaml.safe_dump(merged, sort_keys=False), encoding="utf-8")
    (again, said_again), (repro, _) = second
    assert again == "make params && cultureqa benchmark check kuis" and repro.startswith(
        "dvc repro"
    )
    composed = _cli(repo, "params", "compose")  # what `make params` runs
    assert composed.returncode == 0, composed.stdout + composed.stderr
    passed = _cli(repo, "benchmark", "check", "kuis")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    _assert_shown(passed.stdout + passed.stderr, said_again, again)
