"""Read a benchmark's source rows and apply the declared ``limit`` / ``sample``.

A source is one file, many files with metadata in their paths, or a Hugging Face dataset folder.

Every row keeps where it came from (``_file``, ``_row``: the data row, or a JSONL file's line) so
a loader error names the real file and
its data row even when the benchmark spans fifty files, and ``_n`` (1-based position over all files,
before sampling) so synthesized ids do not change when a sample is drawn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cultureqa.benchmarks.delimited import read_delimited
from cultureqa.benchmarks.fields import FieldError, render_bool
from cultureqa.benchmarks.source_files import (  # named here too: where they always were
    ROW_COLUMNS as ROW_COLUMNS,
)
from cultureqa.benchmarks.source_files import _relative
from cultureqa.benchmarks.source_files import (
    capture_names as capture_names,
)
from cultureqa.benchmarks.source_files import (
    expand_pattern as expand_pattern,
)
from cultureqa.benchmarks.source_files import (
    is_pattern as is_pattern,
)
from cultureqa.benchmarks.source_files import (
    resolve_path as resolve_path,
)
from cultureqa.benchmarks.source_files import (
    source_files as source_files,
)
from cultureqa.benchmarks.source_files import (
    source_provenance as source_provenance,
)
from cultureqa.benchmarks.source_files import (
    split_pattern as split_pattern,
)
from cultureqa.benchmarks.spec import BenchmarkSpec, SampleSpec
from cultureqa.core.io import SourceError, _check_utf8, read_table

_EXTENSIONS = {
    ".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".json": "json", ".jsonl": "jsonl",
    ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet",
}  # fmt: skip


def read_rows(spec: BenchmarkSpec, root: Path | None = None) -> tuple[pd.DataFrame, str]:
    """Every source row, with ``_file``/``_row``/``_n``, and a label naming where it came from.

    ``_n`` numbers rows over all files *before* any filter, so synthesized ids do not move when
    ``rows.keep`` or the sample changes. Filtering and sampling are the loader's later steps.
    """
    frame, origin = _read_all(spec, root)
    frame["_n"] = range(1, len(frame) + 1)
    return frame, origin


def keep_mask(
    frame: pd.DataFrame, keep: str | dict[str, tuple[str, ...]], origin: str
) -> list[bool]:
    """Which rows the declared filter keeps: a Jinja boolean, or column == value (or in values)."""
    if isinstance(keep, dict):
        missing = sorted(set(keep) - set(map(str, frame.columns)))
        if missing:
            shown = [c for c in frame.columns if c not in ROW_COLUMNS]
            raise SourceError(origin, f"rows.keep names missing column(s) {missing}; found {shown}")
        mask = pd.Series(True, index=frame.index)
        for column, allowed in keep.items():
            mask &= frame[column].map(lambda v, ok=allowed: _cell_text(v) in ok)
        return [bool(v) for v in mask]
    flags = []
    for row in frame.to_dict(orient="records"):
        try:
            flags.append(render_bool(row, keep))
        except FieldError as exc:
            raise SourceError(
                str(row.get("_file", origin)), str(exc), row=row.get("_row"), column="rows.keep"
            ) from exc
    return flags


def _cell_text(value: Any) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, bool):
        return str(value)
    return str(value).strip()


def _read_all(spec: BenchmarkSpec, root: Path | None) -> tuple[pd.DataFrame, str]:
    if spec.source.kind == "hf" and not spec.source.path:
        frame = _with_rows(_hub(spec), f"hf:{spec.source.hf_dataset}:{spec.source.hf_split}")
        origin = f"hf:{spec.source.hf_dataset}:{spec.source.hf_split}"
    else:
        parts = []
        for path, captured in source_files(spec, root):
            part = read_any(path, spec.source.format, spec.source.hf_split, spec.source.names)
            part = _with_rows(part, _relative(path, root) if root is not None else str(path))
            clash = sorted(set(captured) & set(part.columns))
            if clash:
                raise SourceError(path, f"path captures {clash} clash with columns of the file")
            for key, value in captured.items():
                part[key] = value
            parts.append(part)
        frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        origin = str(spec.source.path)
    return frame, origin


def _with_rows(frame: pd.DataFrame, file: str) -> pd.DataFrame:
    clash = sorted(set(ROW_COLUMNS) & set(frame.columns))
    if clash:
        raise SourceError(file, f"columns {clash} are reserved for row bookkeeping")
    lines = frame.attrs.get("lines")
    frame = frame.reset_index(drop=True)
    frame["_file"] = file
    frame["_row"] = lines if lines is not None else range(1, len(frame) + 1)
    return frame


def read_any(
    path: Path,
    fmt: str | None = None,
    split: str = "test",
    names: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    """One table: CSV/TSV/JSON/JSONL/Parquet by extension or ``fmt``, or an HF directory.

    ``names``: a CSV/TSV file without a header row, and its fields (``source.header: none``).
    """
    if not path.exists():
        raise SourceError(path, "file not found")
    kind = fmt or (None if path.is_dir() else _EXTENSIONS.get(path.suffix.lower()))
    if names is not None and kind not in ("csv", "tsv"):
        what = kind or "a dataset folder"
        raise SourceError(
            path,
            f"source.header: none is for CSV and TSV files; this is {what}, whose records name "
            "their fields",
        )
    if path.is_dir():
        return read_hf_dir(path, split, fmt)
    if kind == "tsv":
        return _without_bom(read_delimited(path, "\t", names))
    if kind in ("json", "jsonl") and _EXTENSIONS.get(path.suffix.lower()) == kind:
        return read_json_records(path, lines=kind == "jsonl")
    if kind == "csv" and _EXTENSIONS.get(path.suffix.lower()) == kind:
        return _without_bom(read_delimited(path, ",", names))
    if kind == "parquet" and _EXTENSIONS.get(path.suffix.lower()) == kind:
        return decode_bytes(_without_bom(read_table(path)), path)
    if kind is None:
        raise SourceError(
            path,
            f"unsupported file type '{path.suffix}' (csv, tsv, json, jsonl, parquet, or a "
            "Hugging Face dataset directory); set source.format",
        )
    raise SourceError(path, f"source.format '{kind}' does not match the extension; rename the file")


def _without_bom(frame: pd.DataFrame) -> pd.DataFrame:
    """A UTF-8 byte-order mark is an encoding detail, not part of the first column's name."""
    first = str(frame.columns[0]) if len(frame.columns) else ""
    if first.startswith("\ufeff"):
        frame = frame.rename(columns={frame.columns[0]: first[1:]})
    return frame


def read_json_records(path: Path, lines: bool) -> pd.DataFrame:
    """JSON (an array of objects) or JSON Lines; errors name the line, a BOM is accepted.

    A JSONL file's ``_row`` is its line number, so every later error names the line to open.
    Blank lines of a JSONL file carry no record and are passed over.
    """
    _check_utf8(path)
    text = path.read_bytes().decode("utf-8-sig")
    if not text.strip():
        raise SourceError(path, "file is empty")
    records, lines_of = _json_lines(path, text) if lines else _json_array(path, text)
    if not records:
        raise SourceError(path, "no data rows")
    frame = pd.DataFrame.from_records(records)
    if lines_of is not None:
        frame.attrs["lines"] = lines_of
    return decode_bytes(frame, path)


def _json_lines(path: Path, text: str) -> tuple[list[dict[str, Any]], list[int]]:
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SourceError(
                path, f"line {number} is not valid JSON ({exc.msg} at column {exc.colno})"
            ) from exc
        if not isinstance(record, dict):
            raise SourceError(
                path, f"line {number} is a JSON {type(record).__name__}, not an object"
            )
        records.append(record)
        numbers.append(number)
    return records, numbers


def _json_array(path: Path, text: str) -> tuple[list[dict[str, Any]], None]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(
            path, f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    if isinstance(data, dict):
        return pd.DataFrame(data).to_dict(orient="records"), None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise SourceError(path, "expected a JSON array of objects (one per row)")
    return data, None


def decode_bytes(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Byte-string cells (a Parquet binary column) as UTF-8 text; other bytes are an error.

    Without this a prompt would show ``b'Rumoh Aceh'``.
    """
    for column in frame.columns:
        values = frame[column]
        if values.dtype != object or not any(isinstance(v, bytes | bytearray) for v in values):
            continue
        decoded = []
        for row, value in enumerate(values, start=1):
            if isinstance(value, bytes | bytearray):
                try:
                    value = bytes(value).decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise SourceError(
                        path,
                        f"binary value is not UTF-8 text (byte 0x{value[exc.start]:02x}); "
                        "store the column as text",
                        row=row,
                        column=str(column),
                    ) from exc
            decoded.append(value)
        frame[column] = pd.Series(decoded, index=frame.index, dtype=object)
    return frame


def read_hf_dir(path: Path, split: str, fmt: str | None = None) -> pd.DataFrame:
    """A dataset directory as ``datasets.save_to_disk`` or the hub's parquet layout writes it.

    Read with pyarrow alone, so an offline copy needs neither network nor the ``datasets`` package.
    """
    if (path / "dataset_dict.json").exists():
        splits = json.loads((path / "dataset_dict.json").read_text(encoding="utf-8"))["splits"]
        if split not in splits:
            raise SourceError(path, f"no split '{split}' (found {splits}); set source.hf_split")
        path = path / split
    if fmt != "hf_parquet" and (path / "state.json").exists():
        state = json.loads((path / "state.json").read_text(encoding="utf-8"))
        tables = [_read_arrow(path / f["filename"]) for f in state["_data_files"]]
        return decode_bytes(pa.concat_tables(tables).to_pandas(), path)
    shards = sorted((path / "data").glob(f"{split}-*.parquet")) or sorted(
        path.glob(f"{split}/*.parquet")
    )
    if not shards:
        raise SourceError(
            path,
            f"not a Hugging Face dataset directory with split '{split}' "
            "(expected state.json or data/<split>-*.parquet)",
        )
    return decode_bytes(pa.concat_tables([pq.read_table(s) for s in shards]).to_pandas(), path)


def _read_arrow(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as source:
        try:
            return pa.ipc.open_stream(source).read_all()
        except pa.ArrowInvalid:
            return pa.ipc.open_file(source).read_all()


def _hub(spec: BenchmarkSpec) -> pd.DataFrame:
    """Fetch a Hugging Face dataset (network); the result goes through the same mapping."""
    try:
        import datasets  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SourceError(
            f"hf:{spec.source.hf_dataset}",
            "the 'datasets' package is needed for hub sources: pip install datasets "
            "(or save the dataset to a folder under data/sources and set source.path)",
        ) from exc
    ds = datasets.load_dataset(
        spec.source.hf_dataset, spec.source.hf_config, split=spec.source.hf_split
    )
    return ds.to_pandas()  # type: ignore[no-any-return]


def apply_sample(
    frame: pd.DataFrame,
    sample: SampleSpec,
    origin: str,
    metadata_fields: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Seeded (stratified) sample of ``sample.n`` rows, then the first ``limit``; source order kept.

    Stratified sampling gives each stratum its proportional share by largest remainder, so the
    sample's strata shares match the source's to within one row. It reads source columns;
    ``metadata_fields`` (metadata name → its column) lets a wrong name say which column to use.
    """
    rows = frame
    if sample.n is not None and sample.n < len(frame):
        missing = [c for c in sample.stratify if c not in frame.columns]
        if missing:
            raise SourceError(origin, _stratify_fix(missing, frame, metadata_fields or {}))
        rng = np.random.default_rng(sample.seed)
        if sample.stratify:
            groups = list(
                frame.groupby(list(sample.stratify), sort=True, dropna=False).groups.values()
            )
            quota = _quotas([len(g) for g in groups], sample.n)
            picked = [
                rng.choice(np.asarray(g), size=q, replace=False)
                for g, q in zip(groups, quota, strict=True)
            ]
            index = np.sort(np.concatenate(picked))
        else:
            index = np.sort(rng.choice(len(frame), size=sample.n, replace=False))
            index = frame.index[index]
        rows = frame.loc[index]
    if sample.limit is not None:
        rows = rows.head(sample.limit)
    out = rows.reset_index(drop=True)
    out.attrs["rows_read"] = int(frame.attrs.get("rows_read", len(frame)))
    out.attrs["rows_skipped"] = int(frame.attrs.get("rows_skipped", 0))
    out.attrs["rows_before_sample"] = len(frame)
    return out


def _stratify_fix(missing: list[str], frame: pd.DataFrame, fields: dict[str, str]) -> str:
    """Name the source column behind a metadata name, or list the columns there are."""
    shown = [c for c in frame.columns if c not in ROW_COLUMNS]
    hints = [
        f"'{m}' is a metadata name; stratify by its source column '{fields[m]}'"
        for m in missing
        if m in fields and fields[m] in frame.columns
    ]
    return f"sample.stratify names missing column(s) {missing}; " + (
        "; ".join(hints) if hints else f"stratify by source columns: {shown}"
    )


def _quotas(sizes: list[int], n: int) -> list[int]:
    total = sum(sizes)
    exact = [s * n / total for s in sizes]
    quota = [int(e) for e in exact]
    order = sorted(range(len(sizes)), key=lambda i: exact[i] - quota[i], reverse=True)
    for i in order[: n - sum(quota)]:
        quota[i] += 1
    return quota


def sample_record(spec: BenchmarkSpec, frame: pd.DataFrame) -> dict[str, Any]:
    """What was kept and how, for provenance."""
    s = spec.sample
    return {
        "rows_read": int(frame.attrs.get("rows_read", len(frame))),
        "rows_skipped": int(frame.attrs.get("rows_skipped", 0)),
        "rows_kept": len(frame),
        "limit": s.limit,
        "sample": None if s.n is None else {"n": s.n, "seed": s.seed, "stratify": list(s.stratify)},
    }
