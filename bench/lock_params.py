"""The params part of ``dvc.lock``: bytes each stage's declared params put there (issue 47 item 4).

DVC re-reads and re-writes the whole lock after every stage, so its size sets part of DVC's pause
between stages (docs/measured.md, "DVC's pause"). A stage's lock entry stores every declared
params key with its values; this script reads them as ``dvc repro`` would (DVC's own stage index
over ``dvc.yaml`` and ``params.yaml``, no stage run, no lock written) and prints the YAML size of
each entry's ``params`` section, the largest first, and the total. ``--root`` measures another
tree, e.g. a revision exported with ``git archive REV | tar -x -C DIR`` (a ``.dvc`` folder is
made there when it has none).

    .venv/bin/python bench/lock_params.py [--root DIR] [--top 12]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import yaml


def params_bytes(root: Path) -> dict[str, int]:
    """Each stage's ``params`` section, as YAML bytes in its ``dvc.lock`` entry."""
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    sizes: dict[str, int] = {}
    with Repo(str(root), config={"core": {"no_scm": True}}) as repo:  # an exported tree too
        for stage in repo.index.stages:
            section = {
                str(dep.def_path): dep.read_params()
                for dep in stage.deps
                if isinstance(dep, ParamsDependency)
            }
            if section:
                text = yaml.safe_dump({"params": section}, allow_unicode=True, sort_keys=True)
                sizes[stage.name] = len(text.encode("utf-8"))
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path.cwd())
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if not (root / ".dvc").is_dir():
        init = [sys.executable, "-m", "dvc", "init", "--no-scm", "-q"]
        subprocess.run(init, cwd=root, check=True)
    sizes = params_bytes(root)
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{size:8,d} B  {name}")
    print(f"{sum(sizes.values()):8,d} B  params of {len(sizes)} stages ({root})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
