"""A benchmark's evaluated items, stored once, so an evaluate stage reaches its first request fast.

Reading a source goes through pandas (0.75 CPU s to import before a row is read) and the row
policy, and every roster entry's evaluate stage reads the same benchmark. What the stage uses of
that load — the items per language, the source label and the row counts its run record names —
is stored as JSON in the user cache (beside the stored wire routes), keyed by everything the load
is a function of: the benchmark's declaration, the MD5 of every source file, and the code that
loads them (``cultureqa/benchmarks/``, ``records.py``, ``io.py``, ``evaluation/task.py``). Change
any of them and the key changes, so no entry is read for another load. An entry is written only
when it reads back equal to the load, value types included (a value JSON cannot carry is never
stored approximately); a load that cannot be stored says why in the stage's log and run log.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cultureqa
from cultureqa.benchmarks.source_files import source_provenance
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.io import write_text
from cultureqa.core.paths import user_cache_dir
from cultureqa.core.records import McqItem

log = logging.getLogger(__name__)

FORMAT = 1
"""Bumped when an entry's layout changes (old entries then miss)."""
_PACKAGE = Path(cultureqa.__file__).resolve().parent
CODE = ("benchmarks", "core/records.py", "core/io.py", "evaluation/task.py")
"""The code a load is a function of (package-relative files and folders)."""


@dataclass(frozen=True)
class StoredLoad:
    """What an evaluation uses of a benchmark's load."""

    items: dict[str, list[McqItem]]
    origin: str
    rows: dict[str, Any]
    """``LoadCounts.record()``: rows read, skipped, dropped (by reason), loaded."""


def load_key(spec: BenchmarkSpec, root: Path) -> str | None:
    """The entry's key, or None for a source without local files (a hub dataset)."""
    provenance = source_provenance(spec, root)
    if not provenance.get("files"):
        return None
    digest = hashlib.sha256()
    head = {"format": FORMAT, "spec": dataclasses.asdict(spec), "files": provenance["files"]}
    digest.update(json.dumps(head, sort_keys=True, default=repr).encode("utf-8"))
    for path in _code_files():
        digest.update(str(path.relative_to(_PACKAGE)).encode("utf-8") + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _code_files() -> list[Path]:
    files: list[Path] = []
    for name in CODE:
        path = _PACKAGE / name
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return files


def entry_path(key: str) -> Path:
    """Where the entry of ``key`` lives (``CULTUREQA_CACHE_DIR`` moves it)."""
    return user_cache_dir() / "benchmarks" / f"{key}.json"


def read_stored(key: str) -> StoredLoad | None:
    """The stored load, or None when there is none (or it cannot be read: named in the log)."""
    path = entry_path(key)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("%s: stored benchmark load unreadable (%s); loading the source", path, exc)
        return None
    return _decode(raw)


def store(key: str, load: StoredLoad) -> str | None:
    """Write the entry; None when stored, else why not (the caller logs and records it)."""
    try:
        text = json.dumps(_encode(load), ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError) as exc:
        return f"a value JSON cannot carry ({exc})"
    if _typed(_encode(_decode(json.loads(text)))) != _typed(_encode(load)):
        return "its values do not read back as the same types"
    try:
        write_text(entry_path(key), text)
    except OSError as exc:
        return f"the cache is not writable ({exc})"
    return None


def _encode(load: StoredLoad) -> dict[str, Any]:
    items = {
        lang: [
            [
                i.id,
                i.question,
                list(i.options),
                i.answer_index,
                i.language,
                i.metadata,
                list(i.answer_indices),
            ]
            for i in batch
        ]
        for lang, batch in load.items.items()
    }
    return {"format": FORMAT, "origin": load.origin, "rows": load.rows, "items": items}


def _decode(raw: dict[str, Any]) -> StoredLoad:
    items = {
        lang: [
            McqItem(str(i), str(q), tuple(o), int(a), str(lg), dict(m), tuple(ai))
            for i, q, o, a, lg, m, ai in batch
        ]
        for lang, batch in raw["items"].items()
    }
    return StoredLoad(items, str(raw["origin"]), dict(raw["rows"]))


def _typed(value: Any) -> Any:
    """``value`` with every leaf tagged by its type: ``1``, ``1.0`` and ``True`` differ."""
    if isinstance(value, dict):
        return {(type(k).__name__, k): _typed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [type(value).__name__, *(_typed(v) for v in value)]
    if isinstance(value, float) and value != value:  # NaN reads back as NaN, never equal to it
        return ("float", "nan")
    return (type(value).__name__, value)
