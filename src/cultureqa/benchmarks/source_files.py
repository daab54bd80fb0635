"""Which files a benchmark's source declares, and their provenance: no table library needed.

Kept apart from :mod:`cultureqa.benchmarks.sources` (which reads the rows through pandas and
pyarrow) so that code which only names or hashes the files — the tracked-source check, the key
of a stored load — never imports them.
"""

from __future__ import annotations

import glob
import hashlib
import re
from pathlib import Path
from typing import Any

from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.io import SourceError
from cultureqa.core.provenance import file_md5

ROW_COLUMNS = ("_file", "_row", "_n")
"""Bookkeeping columns added to every source frame (never metadata)."""
_CAPTURE = re.compile(r"{([A-Za-z_][A-Za-z0-9_]*)}")


def resolve_path(path: str, root: Path | None) -> str:
    """``path`` against the project root unless absolute."""
    if root is None or Path(path).is_absolute():
        return path
    return str(root / path)


def source_files(
    spec: BenchmarkSpec, root: Path | None = None
) -> list[tuple[Path, dict[str, str]]]:
    """Every file the source declares, with the metadata its path captures (sorted, stable)."""
    assert spec.source.path is not None
    pattern = resolve_path(spec.source.path, root)
    if not is_pattern(pattern):
        return [(Path(pattern), {})]
    return expand_pattern(pattern, spec.source.path)


def is_pattern(path: str) -> bool:
    """Whether ``path`` names several files: a ``{name}`` capture or a glob character."""
    return bool(_CAPTURE.search(path)) or any(ch in path for ch in "*?[")


def split_pattern(path: str) -> tuple[Path, str]:
    """The fixed folder of a pattern and the rest: ``data/raw``, ``{island}/{topic}.json``."""
    parts = Path(path).parts
    first = next((i for i, p in enumerate(parts) if is_pattern(p)), len(parts) - 1)
    return Path(*parts[:first]) if first else Path("."), "/".join(parts[first:])


def capture_names(pattern: str) -> list[str]:
    """The ``{name}`` captures of a path pattern, in order, each once."""
    return list(dict.fromkeys(_CAPTURE.findall(pattern)))


def expand_pattern(pattern: str, shown: str | None = None) -> list[tuple[Path, dict[str, str]]]:
    """Files matching a glob / ``{name}`` pattern with what each captures (sorted, stable).

    ``shown`` is the pattern as the user wrote it, for the error when nothing matches.
    """
    regex = re.compile(_pattern_regex(pattern))
    found = sorted(glob.glob(_CAPTURE.sub("*", pattern), recursive=True))
    files = []
    for name in found:
        match = regex.fullmatch(name)
        if match is not None and Path(name).is_file():
            files.append((Path(name), dict(match.groupdict())))
    if not files:
        raise SourceError(shown or pattern, "no file matches this pattern")
    return files


def _pattern_regex(pattern: str) -> str:
    """The pattern as a regex.

    A capture named twice (``{lang}/test.{lang}.jsonl``) must match the same text both times, so
    its second use is a back-reference, not a second group.
    """
    out: list[str] = []
    pos, seen = 0, set()
    for match in _CAPTURE.finditer(pattern):
        out.append(_glob_regex(pattern[pos : match.start()]))
        name = match.group(1)
        out.append(f"(?P={name})" if name in seen else f"(?P<{name}>[^/]+)")
        seen.add(name)
        pos = match.end()
    out.append(_glob_regex(pattern[pos:]))
    return "".join(out)


def _glob_regex(text: str) -> str:
    return re.escape(text).replace(r"\*\*", ".*").replace(r"\*", "[^/]*").replace(r"\?", "[^/]")


def source_provenance(spec: BenchmarkSpec, root: Path) -> dict[str, Any]:
    """Name, version, every source file's MD5 and the sampling, for result files and MLflow.

    ``md5`` is the file's own MD5 for a single file (the hash DVC records) and an MD5 over the
    sorted ``path:md5`` lines when the source spans several files or a dataset folder.
    """
    record: dict[str, Any] = {"name": spec.name, "version": spec.version}
    record["source"] = spec.source.path or f"hf:{spec.source.hf_dataset}:{spec.source.hf_split}"
    record["limit"] = spec.sample.limit
    s = spec.sample
    record["sample"] = (
        None if s.n is None else {"n": s.n, "seed": s.seed, "stratify": list(s.stratify)}
    )
    if not spec.source.path:
        return record
    files: dict[str, str] = {}
    for path, _ in source_files(spec, root):
        for file in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
            files[_relative(file, root)] = file_md5(file)
    record["files"] = files
    if len(files) == 1:
        record["md5"] = next(iter(files.values()))
    else:
        lines = "".join(f"{k}:{v}\n" for k, v in sorted(files.items()))
        record["md5"] = hashlib.md5(lines.encode(), usedforsecurity=False).hexdigest()
    return record


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
