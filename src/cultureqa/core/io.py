"""Atomic writes and row-precise source errors.

A stage that dies half-way must never leave a truncated artifact that the next stage (or DVC)
mistakes for a finished one, hence write-to-temp-then-rename everywhere.
"""

from __future__ import annotations

import codecs
import csv
import errno
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a table is read or written: a stage's start pays neither
    import pandas as pd

#: Significant digits every float keeps on its way into a written output (Parquet, CSV, JSON,
#: Markdown tables, plot data). Fitted models (GLM, logit) and BLAS reductions differ in their last
#: bits between CPU kernels (``OPENBLAS_CORETYPE``) and machines; ten digits lie far above any
#: figure a table reports and far below that noise, so DVC hashes agree on every machine. The
#: rounding happens here, at the one write boundary, never in the functions that compute.
FLOAT_DIGITS = 10


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


def _file_mode() -> int:
    """The mode a plain ``open()`` would give a new file: 0o666 less the process umask.

    ``mkstemp`` creates 0600 files whatever the umask; renamed into place they would be unreadable
    to the user's group, unlike every other file the user creates.
    """
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temp path beside ``target``; rename it over ``target`` only on success.

    A failed write (full disk, read-only folder) leaves ``target`` as it was and is raised as an
    OSError naming ``target``, which the stage error boundary turns into one line.
    """
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _naming(exc, target) from exc
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, _file_mode())
        os.replace(tmp_path, target)
    except OSError as exc:
        raise _naming(exc, target) from exc
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _naming(exc: OSError, target: Path) -> OSError:
    """The same failure, reported against the output file rather than its temp file."""
    code = exc.errno
    reason = exc.strerror
    if code is None:  # pyarrow: errno only in the text
        for candidate in (errno.ENOSPC, errno.EACCES, errno.EROFS, errno.EPERM):
            if f"[Errno {candidate}]" in str(exc):
                code, reason = candidate, os.strerror(candidate)
    return OSError(code, reason or str(exc), str(target))


def _write_with(target: str | Path, writer: Callable[[Path], None]) -> Path:
    with atomic_path(target) as tmp:
        writer(tmp)
    return Path(target)


def declared_float(value: float) -> float:
    """``value`` at FLOAT_DIGITS significant digits (NaN and ±inf unchanged).

    Python's float formatting is correctly rounded on every platform, unlike a ``log10``-based
    scale whose SIMD kernels may themselves differ in the last bit across CPUs.
    """
    if not math.isfinite(value):
        return value
    return float(f"{value:.{FLOAT_DIGITS}g}")


def declared(value: Any) -> Any:
    """``value`` with every float in it at the declared precision; anything else unchanged.

    Floats are found inside nested lists, tuples and dicts, and as numpy scalars and arrays.
    """
    if isinstance(value, bool | int | str) or value is None:
        return value
    np = sys.modules.get("numpy")  # no numpy value exists before numpy is imported
    if isinstance(value, float) or (np is not None and isinstance(value, np.floating)):
        return declared_float(float(value))
    if isinstance(value, dict):
        return {k: declared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [declared(v) for v in value]
    if isinstance(value, tuple):
        return tuple(declared(v) for v in value)
    if np is not None and isinstance(value, np.ndarray) and value.dtype.kind in "fO":
        return np.array([declared(v) for v in value.tolist()], dtype=value.dtype)
    return value


def _holds_floats(column: pd.Series) -> bool:
    """An object column whose cells are floats or containers (lists of scores, dicts)."""
    import numpy as np

    return any(
        isinstance(v, float | np.floating | list | tuple | dict | np.ndarray)
        for v in column.head(1000).tolist()
    )


def declared_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose float cells (also inside list/dict cells) are at FLOAT_DIGITS."""
    import numpy as np
    import pandas as pd

    out = frame.copy()
    for col in out.columns:
        column = out[col]
        if isinstance(column, pd.DataFrame):  # duplicate column names: leave to the writer
            continue
        if pd.api.types.is_float_dtype(column.dtype):
            values = column.to_numpy(dtype="float64", na_value=np.nan)
            rounded = [declared_float(v) for v in values.tolist()]
            out[col] = pd.Series(rounded, index=column.index, dtype="float64").astype(column.dtype)
        elif column.dtype == object and _holds_floats(column):
            out[col] = column.map(declared)
    return out


def write_json(target: str | Path, payload: Any) -> Path:
    """Write pretty, key-sorted JSON atomically, floats at the declared precision.

    Sorted keys give stable diffs for DVC metrics in git; the precision, stable hashes across
    machines.
    """
    text = (
        json.dumps(declared(payload), indent=2, sort_keys=True, ensure_ascii=False, default=str)
        + "\n"
    )
    return write_text(target, text)


def write_text(target: str | Path, text: str) -> Path:
    """Write text atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(target)


def write_parquet(target: str | Path, frame: pd.DataFrame) -> Path:
    """Write a DataFrame as parquet atomically, floats at the declared precision."""
    shown = declared_frame(frame)
    return _write_with(target, lambda p: shown.to_parquet(p, index=False))


def write_csv(target: str | Path, frame: pd.DataFrame) -> Path:
    """Write a DataFrame as CSV atomically, floats at the declared precision."""
    shown = declared_frame(frame)
    return _write_with(target, lambda p: shown.to_csv(p, index=False))


def read_table(path: str | Path) -> pd.DataFrame:
    """Read CSV, JSONL/JSON or Parquet by extension, turning decode errors into SourceErrors."""
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise SourceError(path, "file not found")
    suffix = path.suffix.lower()
    if suffix in {".csv", ".jsonl", ".ndjson", ".json"}:
        _check_utf8(path)
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


_UTF16_BOMS = {b"\xff\xfe": "UTF-16 little-endian", b"\xfe\xff": "UTF-16 big-endian"}


def _utf16(head: bytes) -> str | None:
    """Which UTF-16 a file's first bytes show: a byte-order mark, or every other byte NUL."""
    for bom, name in _UTF16_BOMS.items():
        if head.startswith(bom):
            return f"{name} (byte-order mark {bom.hex(' ')})"
    sample = head[:4096]
    if len(sample) >= 8:
        even, odd = sample[0::2], sample[1::2]
        if odd.count(0) > 0.4 * len(odd) and even.count(0) < 0.1 * len(even):
            return "UTF-16 little-endian (no byte-order mark: every second byte is 0)"
        if even.count(0) > 0.4 * len(even) and odd.count(0) < 0.1 * len(odd):
            return "UTF-16 big-endian (no byte-order mark: every second byte is 0)"
    return None


def _check_utf8(path: Path) -> None:
    """Fail on the first non-UTF-8 byte with its row and (for CSV) its column; name UTF-16.

    The file is decoded in 1 MiB chunks, so a 200 MB source is checked without holding it (or
    its decoded text) in memory; only a file that fails is read whole, to name the row.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    with path.open("rb") as handle:
        head = handle.read(4096)
        found = _utf16(head)
        if found is not None:
            raise SourceError(
                path,
                f"file is {found}, not UTF-8; save it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)",
            )
        try:
            decoder.decode(head)
            while chunk := handle.read(1 << 20):
                decoder.decode(chunk)
            decoder.decode(b"", final=True)
            return
        except UnicodeDecodeError:
            pass
    raw = path.read_bytes()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        is_csv = path.suffix.lower() == ".csv"
        row = before.count(b"\n") + (0 if is_csv else 1)
        column = None
        if is_csv:
            header = next(csv.reader([raw.split(b"\n", 1)[0].decode("utf-8", "replace")]))
            line_start = before.rfind(b"\n") + 1
            partial = before[line_start:].decode("utf-8", "replace")
            index = len(next(csv.reader([partial]), [""])) - 1
            column = header[index] if 0 <= index < len(header) else None
        raise SourceError(
            path, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", row, column
        ) from exc
