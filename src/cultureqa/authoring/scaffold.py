"""Write what ``cultureqa benchmark add`` proposes: the source copy, config, fixture and entries.

The proposal itself comes from :mod:`cultureqa.authoring.sniff`. A source outside the benchmark's
own folder is copied into ``data/sources/<name>/`` (its DVC dependency); a pattern's files keep the
folders their captures name, so the config's pattern reads the copy as it read the original.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from cultureqa.authoring.sniff import Proposal, Sample
from cultureqa.benchmarks.sources import is_pattern, split_pattern
from cultureqa.core.io import SourceError, write_text


def target_path(path: str, root: Path, name: str) -> str:
    """The project-relative path (or pattern) the config names.

    That is ``path`` itself when it already lies in ``data/sources/<name>/``, else where
    :func:`copy_source` puts it.
    """
    tracked = (root / "data" / "sources" / name).resolve()
    fixed, rest = split_pattern(path) if is_pattern(path) else (Path(path), "")
    absolute = (fixed if fixed.is_absolute() else Path.cwd() / fixed).resolve()
    if absolute == tracked or tracked in absolute.parents:
        inside = absolute.relative_to(root.resolve())
        return str(inside / rest) if rest else str(inside)
    tail = rest or Path(path).name
    return str(Path("data") / "sources" / name / tail)


def copy_source(sample: Sample, root: Path, name: str) -> str:
    """Copy the source into ``data/sources/<name>/`` unless it is there; returns its config path.

    Every file is staged in a temporary folder first, and none is placed if any would overwrite
    an existing file, so a refused or failed copy leaves the project as it was.
    """
    target = target_path(sample.path, root, name)
    if _inside(sample, root, name):
        return target
    fixed = split_pattern(sample.path)[0] if sample.is_pattern else Path(sample.path).parent
    tracked = root / "data" / "sources" / name
    moves = [(f, tracked / f.resolve().relative_to(fixed.resolve())) for f, _ in sample.files]
    taken = [str(t.relative_to(root)) for _, t in moves if t.exists()]
    if taken:
        raise SourceError(taken[0], "exists already; remove it or pass a source under data/sources")
    tracked.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tracked.parent, prefix=f".{name}-add-") as staging:
        staged = []
        for number, (source, final) in enumerate(moves):
            temp = Path(staging) / str(number)
            (shutil.copytree if source.is_dir() else shutil.copy2)(source, temp)
            staged.append((temp, final))
        for temp, final in staged:
            final.parent.mkdir(parents=True, exist_ok=True)
            temp.rename(final)
    return target


def _inside(sample: Sample, root: Path, name: str) -> bool:
    tracked = (root / "data" / "sources" / name).resolve()
    return all(tracked in f.resolve().parents for f, _ in sample.files)


def benchmark_yaml(name: str, proposal: Proposal, path: str, language: str, root: Path) -> str:
    """The config text for ``conf/benchmark/<name>.yaml``, its source at ``path``.

    ``language`` is declared only when no capture or column gives items their own.
    """
    languages: dict[str, dict[str, str]] = {
        language: {},
        **{k: v for k, v in proposal.languages.items() if k != language},
    }
    if proposal.item_language is not None:
        languages = {code: {} for code in proposal.item_language.codes}
    config: dict[str, Any] = {
        "name": name,
        "version": 1,
        "digest": "${cultureqa_digest:}",  # filled in at composition (core/params_digest.py)
        "description": f"Added by `cultureqa benchmark add` from {proposal.source['path']}.",
        "source": {**proposal.source, "path": path},
        "columns": proposal.columns,
    }
    if proposal.rows:
        config["rows"] = proposal.rows
    config["languages"] = languages
    config["settings"] = [f"mcq-none-{lang}" for lang in languages]
    fallback = {lang: "en" for lang in languages if not has_template(root, lang)}
    if fallback:
        config["prompt_fallback"] = fallback
    config["slices"] = proposal.slices
    config["expectations"] = "expectations/generic_mcq_items.json"
    header = (
        "# Written by `cultureqa benchmark add`; edit freely (docs/benchmark-configs.md), but\n"
        "# keep `digest` as it is: composing conf/ fills in the hash its stages declare.\n"
    )
    return header + yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=100)


def has_template(root: Path, language: str) -> bool:
    """Whether the default multiple-choice prompt exists in ``language``."""
    return (root / "prompts" / "default" / "mcq" / f"zero_shot.{language}.txt").exists()


def add_config_entries(config_path: Path, name: str) -> None:
    """Add the defaults entry and the ``evaluate.benchmarks`` entry to ``conf/config.yaml``."""
    text = config_path.read_text(encoding="utf-8")
    entry = f"  - benchmark@benchmarks.{name}: {name}\n"
    if entry not in text:
        last = list(re.finditer(r"^  - benchmark@benchmarks\.\S+: \S+.*\n", text, re.M))
        if not last:
            raise SourceError(config_path, "no 'benchmark@benchmarks.' entry to add after")
        text = text[: last[-1].end()] + entry + text[last[-1].end() :]
    match = re.search(r"^(  benchmarks: \[)([^\]]*)\]", text, re.M)
    if match is None:
        raise SourceError(config_path, "no 'evaluate.benchmarks: [...]' list found")
    names = [n.strip() for n in match.group(2).split(",") if n.strip()]
    if name not in names:
        text = (
            text[: match.start()]
            + f"{match.group(1)}{', '.join([*names, name])}]"
            + text[match.end() :]
        )
    write_text(config_path, text)
