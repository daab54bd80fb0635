"""Atomic writes and row-precise source errors.

A stage that dies half-way must never leave a truncated artifact that the next stage (or DVC)
mistakes for a finished one, hence write-to-temp-then-rename everywhere.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd


class SourceError(ValueError):
    """A source file is malformed; the message names file, row and column."""

    def __init__(
        self, path: str | Path, message: str, row: int | None = None, column: str | None = None
    ) -> None:
        where = str(path)
        if row is not None:
            where += f", row {row}"
        if column is not None:
            where += f", column '{column}'"
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.row = row
        self.column = column


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temp path beside ``target``; rename it over ``target`` only on success."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _write_with(target: str | Path, writer: Callable[[Path], None]) -> Path:
    with atomic_path(target) as tmp:
        writer(tmp)
    return Path(target)


def write_json(target: str | Path, payload: Any) -> Path:
    """Write pretty, key-sorted JSON atomically (stable diffs for DVC metrics in git)."""
    text = json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"
    return _write_with(target, lambda p: p.write_text(text, encoding="utf-8"))


def write_text(target: str | Path, text: str) -> Path:
    """Write text atomically."""
    return _write_with(target, lambda p: p.write_text(text, encoding="utf-8"))


def write_parquet(target: str | Path, frame: pd.DataFrame) -> Path:
    """Write a DataFrame as parquet atomically."""
    return _write_with(target, lambda p: frame.to_parquet(p, index=False))


def write_csv(target: str | Path, frame: pd.DataFrame) -> Path:
    """Write a DataFrame as CSV atomically."""
    return _write_with(target, lambda p: frame.to_csv(p, index=False))


def read_table(path: str | Path) -> pd.DataFrame:
    """Read CSV, JSONL/JSON or Parquet by extension, turning decode errors into SourceErrors."""
    path = Path(path)
    if not path.exists():
        raise SourceError(path, "file not found")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
        elif suffix in {".jsonl", ".ndjson"}:
            frame = pd.read_json(path, lines=True, dtype=False)
        elif suffix == ".json":
            frame = pd.read_json(path, dtype=False)
        elif suffix in {".parquet", ".pq"}:
            frame = pd.read_parquet(path)
        else:
            raise SourceError(path, f"unsupported file type '{suffix}' (csv, jsonl, parquet)")
    except UnicodeDecodeError as exc:
        row = _row_of_offset(path, exc.start)
        raise SourceError(path, f"not valid UTF-8 ({exc.reason})", row=row) from exc
    except pd.errors.EmptyDataError as exc:
        raise SourceError(path, "file is empty") from exc
    except pd.errors.ParserError as exc:
        raise SourceError(path, f"cannot parse: {exc}") from exc
    except ValueError as exc:
        if isinstance(exc, SourceError):
            raise
        raise SourceError(path, f"cannot parse: {exc}") from exc
    if frame.empty:
        raise SourceError(path, "no data rows")
    return frame


def _row_of_offset(path: Path, offset: int) -> int:
    """Data-row number (1 = first row after a CSV header) holding byte ``offset``."""
    lines_before = path.read_bytes()[:offset].count(b"\n")
    return lines_before if path.suffix.lower() == ".csv" else lines_before + 1
