"""Reproducible extractions of the official country files kept in the project (DESIGN.md §6).

Two publishers' files are not kept whole, and these commands say exactly what is kept instead:

* **UNDP HDR composite indices** (CC BY 3.0 IGO, 1.9 MB): the columns the WEIRD levels read
  (``iso3, country, hdicode, region``, every ``mys_<year>`` and ``gnipc_<year>``), every row,
  cells unchanged (read as text, written back as UTF-8 without the leading BOM).
* **Freedom House "All data" workbooks** (their terms forbid redistribution): only the derived
  per-country status of the chosen editions (``iso3, country, edition, status``), countries only
  (``C/T = c``), with the FH name kept so every row can be checked against the workbook.

Usage (the README of ``data/sources/country-indicators`` records the commands actually run)::

    python -m cultureqa.cases.source_files hdr SRC.csv DST.csv
    python -m cultureqa.cases.source_files freedom-house DST.csv WORKBOOK.xlsx [WORKBOOK.xlsx ...]
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from cultureqa.cases.indicator_loaders import freedom_status_rows, read_freedom_house_workbook
from cultureqa.core.io import SourceError, write_csv, write_text

HDR_KEEP = re.compile(r"^(iso3|country|hdicode|region|mys_\d{4}|gnipc_\d{4})$")
"""Columns of the HDR file the WEIRD levels need (schooling for E, GNI per capita for proxies)."""


def extract_hdr(source: Path, target: Path) -> int:
    """Write the HDR columns the levels read, cells as published; returns the row count."""
    if not source.exists():
        raise SourceError(source, "file not found")
    raw = source.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.removeprefix(b"\xef\xbb\xbf").decode("latin-1")
    frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    keep = [c for c in frame.columns if HDR_KEEP.match(c)]
    if "iso3" not in keep or not any(c.startswith("mys_") for c in keep):
        raise SourceError(source, f"no iso3 / mys_<year> columns; found {list(frame.columns)[:8]}")
    write_text(target, frame[keep].to_csv(index=False, lineterminator="\n"))
    return len(frame)


def derive_freedom_house(workbooks: Sequence[Path], target: Path) -> pd.DataFrame:
    """Status per country of each workbook's newest edition (later workbooks win on ties)."""
    parts = []
    for path in workbooks:
        frame = read_freedom_house_workbook(path)
        rows = freedom_status_rows(path, frame)
        newest = int(rows["edition"].max())
        parts.append(rows[rows["edition"] == newest])
    table = pd.concat(parts, ignore_index=True).drop_duplicates(["iso3", "edition"], keep="last")
    table = table.sort_values(["edition", "iso3"]).reset_index(drop=True)
    write_csv(target, table)
    return table


def main(argv: Sequence[str] | None = None) -> int:
    """``hdr`` or ``freedom-house`` extraction (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m cultureqa.cases.source_files")
    sub = parser.add_subparsers(dest="command", required=True)
    hdr = sub.add_parser("hdr", help="keep the HDR columns the WEIRD levels read")
    hdr.add_argument("source", type=Path)
    hdr.add_argument("target", type=Path)
    fh = sub.add_parser("freedom-house", help="derive the per-country status table")
    fh.add_argument("target", type=Path)
    fh.add_argument("workbooks", type=Path, nargs="+")
    args = parser.parse_args(argv)
    try:
        if args.command == "hdr":
            print(f"{args.target}: {extract_hdr(args.source, args.target)} rows")
        else:
            table = derive_freedom_house(args.workbooks, args.target)
            counts = table.groupby("edition")["status"].value_counts().to_dict()
            print(f"{args.target}: {len(table)} rows {counts}")
    except SourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
