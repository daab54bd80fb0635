"""Keep ``dvc.yaml``'s code deps and ``dvc.lock`` as small as the imports allow.

DVC's pause between two stages of ``dvc repro`` is mostly spent re-reading and re-writing the
whole ``dvc.lock`` with ruamel's pure-Python round-trip loader after every stage (2.6 CPU s to
load and 1.5 to dump the 366 KB lock of 2026-12-07, docs/measured.md), so the pause grows with
the lock's size. Two things keep it small:

- Code deps follow the imports: every stage depends on the ``src/cultureqa`` subpackages
  (folders) and top-level modules (files) its script imports, transitively, lazy imports
  included, each once, so an edit in one family's code reruns only that family. A folder is one
  lock entry however many modules it holds; listing each module file instead would multiply the
  deps' share of the lock by four to five (64–100 files against 15–20 entries a stage).
  ``write`` rewrites these entries from the imports as code moves; ``check`` fails when they
  are out of date (``tests/test_dvc_deps.py`` runs it).
- ``dvc.lock`` holds only the stages ``dvc.yaml`` defines: DVC never drops the entry of a stage
  that was renamed or removed, and each stale entry is read and written again after every
  stage. ``prune-lock`` removes them, naming each (``make repro`` runs it first).

- Params declarations stay short: each declared key is stored in the lock with its values, so
  ``params_check`` depends on ``params.yaml`` as a file and a region set reaches its stages as
  ``region_sets.<set>.digest`` (``params_problems``; ``check`` fails on a violation, which
  ``write`` names but leaves to be fixed by hand).

    python -m cultureqa.dvc_deps check | write | prune-lock
"""

from __future__ import annotations

import argparse
import ast
import functools
import io
import sys
from pathlib import Path
from typing import Any

SRC = Path("src/cultureqa")


def _yaml() -> Any:
    """A round-trip dumper set to ``dvc.yaml``'s layout: an unchanged file stays byte-equal."""
    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    yaml.preserve_quotes = True
    return yaml


def _module_file(root: Path, name: str) -> Path | None:
    path = root / SRC.joinpath(*name.split(".")[1:])
    if path.is_dir():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").exists() else None


def _imported(path: Path) -> frozenset[str]:
    """Every ``cultureqa`` module ``path`` names in an import, at any depth (lazy ones too)."""
    stat = path.stat()
    return _imported_at(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4096)
def _imported_at(path: Path, mtime_ns: int, size: int) -> frozenset[str]:
    """``_imported`` of one version of the file: each file is parsed once, not once a stage."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cultureqa"):
            names |= {str(node.module), *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("cultureqa")}
    return frozenset(names)


def code_deps(root: Path, script: str) -> set[str]:
    """The subpackages (folders) and top-level modules (files) ``script`` imports, transitively."""
    files: set[Path] = set()
    todo = [root / script]
    while todo:
        for name in _imported(todo.pop()):
            found = _module_file(root, name)
            inits = [found.parent / "__init__.py"] if found and found.parent != root / SRC else []
            for path in [p for p in (found, *inits, root / SRC / "__init__.py") if p]:
                if path not in files:
                    files.add(path)
                    todo.append(path)
    units = {f.relative_to(root / SRC).parts for f in files}
    return {str(SRC / p[0]) for p in units}


def missing_or_extra(deps: list[str], script: str, root: Path) -> list[str]:
    """What a stage's code deps lack (``-``) or list needlessly or twice (``+``)."""
    listed = [d for d in deps if d.startswith(str(SRC))]
    needed = code_deps(root, script)
    problems = [f"- {p}" for p in sorted(needed - set(listed))]
    problems += [f"+ {p}" for p in sorted(set(listed) - needed)]
    return problems + [f"+ {p} (twice)" for p in sorted({p for p in listed if listed.count(p) > 1})]


def _script(body: dict[str, Any]) -> str:
    """The stage's script: the second word of ``python3 stages/<name>.py ...``."""
    words = str(body["cmd"]).split()
    if len(words) < 2 or not words[1].endswith(".py"):
        raise ValueError(f"cmd {body['cmd']!r} does not run a Python script")
    return words[1]


def _bodies(pipeline: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each stage definition's body (a ``foreach`` stage's is under ``do``)."""
    return {name: s.get("do", s) for name, s in pipeline["stages"].items()}


def params_problems(root: Path) -> list[str]:
    """Params declarations that would put long values back into ``dvc.lock``, or miss a digest.

    DVC stores every declared params key with its values in the lock, so ``params_check`` depends
    on ``params.yaml`` as a file (one hash) rather than every key, and a region set reaches a
    stage through ``region_sets.<set>.digest`` (``cultureqa.core.params_digest``): a stage that
    imports ``cultureqa.regions`` must declare it, and no stage may declare a set's values. A
    benchmark config reaches its stages the same way, as ``benchmarks.<name>.digest`` (a set whose
    source is a benchmark carries that digest in its own values).
    """
    pipeline = _yaml().load((root / "dvc.yaml").read_text(encoding="utf-8"))
    problems: list[str] = []
    for name, body in _bodies(pipeline).items():
        params = [str(next(iter(p)) if isinstance(p, dict) else p) for p in body.get("params", [])]
        if name == "params_check":
            if params or "params.yaml" not in [str(d) for d in body.get("deps", [])]:
                problems.append(f"{name}: params.yaml must be a file dep, not params ({params})")
            continue
        sets = [p for p in params if p == "region_sets" or p.startswith("region_sets.")]
        problems += [
            f"{name}: declares {p}, a region set's values; declare region_sets.<set>.digest"
            for p in sets
            if not p.endswith(".digest")
        ]
        problems += [
            f"{name}: declares {p}, a benchmark's values; declare benchmarks.<name>.digest"
            for p in params
            if (p == "benchmarks" or p.startswith("benchmarks.")) and not p.endswith(".digest")
        ]
        if str(SRC / "regions") in code_deps(root, _script(body)) and not sets:
            problems.append(f"{name}: reads a region set but declares no region_sets.<set>.digest")
    return problems


def rewrite(root: Path) -> tuple[str, list[str]]:
    """``dvc.yaml``'s text with every stage's code deps as its imports give them, and the changes.

    The code deps go right after the script, sorted; every other dep keeps its place and comment.
    """
    yaml = _yaml()
    pipeline = yaml.load((root / "dvc.yaml").read_text(encoding="utf-8"))
    changes: list[str] = []
    for name, body in _bodies(pipeline).items():
        script = _script(body)
        deps = body["deps"]
        if problems := missing_or_extra([str(d) for d in deps], script, root):
            changes.append(f"{name}: {', '.join(problems)}")
            for i in reversed(range(len(deps))):
                if str(deps[i]).startswith(str(SRC)):
                    del deps[i]
            at = [str(d) for d in deps].index(script) + 1
            for offset, path in enumerate(sorted(code_deps(root, script))):
                deps.insert(at + offset, path)
    out = io.StringIO()
    yaml.dump(pipeline, out)
    return out.getvalue(), changes


def prune_lock(root: Path) -> list[str]:
    """Drop the ``dvc.lock`` entries of stages ``dvc.yaml`` no longer defines; their names."""
    from dvc.repo import Repo

    from cultureqa.core.io import write_text

    lock = root / "dvc.lock"
    if not lock.exists():
        return []
    with Repo(str(root)) as repo:
        live = {stage.name for stage in repo.index.stages}
    # DVC's own round-trip reader and writer, so the kept entries stay as DVC writes them.
    from dvc.utils.serialize._yaml import _dump, parse_yaml_for_update

    data = parse_yaml_for_update(lock.read_text(encoding="utf-8"), str(lock))
    stale = [name for name in data.get("stages", {}) if name not in live]
    if stale:
        for name in stale:
            del data["stages"][name]
        out = io.StringIO()
        _dump(data, out)
        write_text(lock, out.getvalue())
    return stale


def main(argv: list[str] | None = None) -> int:
    """Check or rewrite the code deps, or prune the lock; 1 when ``check`` finds them stale."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("verb", choices=["check", "write", "prune-lock"])
    parser.add_argument("--root", type=Path, default=Path.cwd())
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.verb == "prune-lock":
        stale = prune_lock(root)
        for name in stale:
            print(f"dvc.lock: removed the entry of stage '{name}' (not in dvc.yaml)")
        return 0
    text, changes = rewrite(root)
    for change in changes:
        print(f"dvc.yaml code deps: {change}")
    problems = params_problems(root)
    for problem in problems:
        print(f"dvc.yaml params: {problem}", file=sys.stderr)
    if args.verb == "check":
        if changes:
            print("dvc.yaml code deps are out of date; run: make dvc-deps", file=sys.stderr)
        return 1 if changes or problems else 0
    if changes:
        from cultureqa.core.io import write_text

        write_text(root / "dvc.yaml", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
