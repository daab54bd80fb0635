"""The locked environment: requirements.lock holds every package by hash and agrees with pyproject.

`make lock-check` (in `.ci/run`) recompiles the lock against PyPI and fails on any difference;
these offline checks catch the common mistakes without a registry: a pin bumped in
pyproject.toml but not in the lock, a package without a hash, a CUDA build of torch.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_entries(lock_text: str) -> dict[str, tuple[str, list[str]]]:
    """Name → (version, hashes) from a `uv pip compile --generate-hashes` file."""
    entries: dict[str, tuple[str, list[str]]] = {}
    current = ""
    for line in lock_text.splitlines():
        match = PIN.match(line)
        if match:
            current = _norm(match.group(1))
            entries[current] = (match.group(2), [])
        elif current and "--hash=sha256:" in line:
            entries[current][1].append(line.split("--hash=sha256:")[1].split()[0])
    return entries


def lock_problems(pyproject_text: str, lock_text: str) -> list[str]:
    """Every way the lock disagrees with pyproject.toml's direct pins, or is not hash-complete."""
    project = tomllib.loads(pyproject_text)["project"]
    direct = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    entries = lock_entries(lock_text)
    problems = []
    for spec in direct:
        req = Requirement(spec)
        locked = entries.get(_norm(req.name))
        if locked is None:
            problems.append(f"{req.name}: in pyproject.toml, missing from requirements.lock")
        elif not req.specifier.contains(locked[0], prereleases=True):
            problems.append(
                f"{req.name}: pyproject.toml says {req.specifier}, lock has {locked[0]}"
            )
    problems += [f"{name}: no sha256 in the lock" for name, (_, h) in entries.items() if not h]
    return problems


def test_lock_agrees_with_pyproject_and_pins_every_package_by_hash() -> None:
    lock = (ROOT / "requirements.lock").read_text()
    assert lock_problems((ROOT / "pyproject.toml").read_text(), lock) == []
    assert len(lock_entries(lock)) > 150  # the whole environment, not just the direct pins


def test_a_pin_bumped_only_in_pyproject_is_caught() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    lock = (ROOT / "requirements.lock").read_text()
    bumped = pyproject.replace('"tqdm==4.70.1"', '"tqdm==4.71.0"')
    assert bumped != pyproject
    assert lock_problems(bumped, lock) == ["tqdm: pyproject.toml says ==4.71.0, lock has 4.70.1"]
    added = pyproject.replace('"tqdm==4.70.1",', '"tqdm==4.70.1",\n  "flake8==7.3.0",')
    assert lock_problems(added, lock) == [
        "flake8: in pyproject.toml, missing from requirements.lock"
    ]


def test_a_package_without_hash_is_caught() -> None:
    lock = (ROOT / "requirements.lock").read_text()
    stripped = re.sub(
        r"(tqdm==4\.70\.1) \\\n(\s+--hash=sha256:\w+ \\\n)*\s+--hash=sha256:\w+", r"\1", lock
    )
    assert stripped != lock
    assert lock_problems((ROOT / "pyproject.toml").read_text(), stripped) == [
        "tqdm: no sha256 in the lock"
    ]


def test_the_lock_installs_the_cpu_build_of_torch_and_no_cuda_packages() -> None:
    entries = lock_entries((ROOT / "requirements.lock").read_text())
    version, hashes = entries["torch"]
    assert version.endswith("+cpu") and len(hashes) == 1
    cuda = [n for n in entries if n.startswith(("nvidia-", "cuda-")) or n == "triton"]
    assert cuda == []


def test_the_uv_bootstrap_line_make_extracts_is_hash_checked() -> None:
    """`make setup` installs uv with pip from the lock's own lines (sed in the Makefile)."""
    makefile = (ROOT / "Makefile").read_text()
    sed = re.search(r"@sed -n '(/\^uv==/,/# via/p)' \$\(LOCK\)", makefile)
    assert sed is not None
    out = subprocess.run(
        ["sed", "-n", sed.group(1), str(ROOT / "requirements.lock")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = [ln for ln in out.splitlines() if "#" not in ln]
    assert lines[0].startswith(f"uv=={lock_entries(out)['uv'][0]} ")
    assert len(lines) > 2 and all("--hash=sha256:" in ln for ln in lines[1:])


def test_dvc_parses_yaml_with_the_c_parser() -> None:
    """DVC reads params.yaml once per stage with ruamel's safe loader; the pure-Python parser made
    that most of the pause between stages (docs/measured.md). Without ruamel.yaml.clib installed
    ruamel falls back to it silently, so the environment is checked here.
    """
    from dvc.utils.serialize._yaml import parse_yaml
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe")
    assert parse_yaml("stage: 1\n", "params.yaml") == {"stage": 1}
    yaml.load("stage: 1\n")
    assert yaml.Parser.__name__ == "CParser", f"ruamel parses YAML with {yaml.Parser}"
