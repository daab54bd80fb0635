"""Write a benchmark's five-row contract fixture in its source's own format and layout.

Rows come from those the proposed config loaded, spread over the source's files; JSON Lines rows
are copied as their lines, so the fixture holds what the source holds, byte for byte. A pattern's
fixture is a folder mirroring the pattern (``tests/fixtures/benchmarks/<name>/{island}/…``),
as the contract test expects.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd

from cultureqa.benchmarks.sources import is_pattern, read_any, split_pattern
from cultureqa.core.io import atomic_path

ROWS = 5


def fixture_size(languages: int) -> int:
    """Rows of a fixture whose items carry their own language: one of each language at least."""
    return max(ROWS, languages)


def fixture_rows(rows: pd.DataFrame, most: int = ROWS, by: str = "_file") -> dict[str, list[int]]:
    """Data rows (``_row``) per file: round robin over the values of ``by``, so they vary.

    ``by`` is the file by default (so captures vary), or the field holding each item's language
    (so every language of a one-file multilingual set is in the fixture).
    """
    groups = [list(zip(g["_file"].astype(str), g["_row"].astype(int), strict=True))
              for _, g in rows.groupby(rows[by].astype(str), sort=False)]  # fmt: skip
    chosen: list[tuple[str, int]] = []
    depth = 0
    while len(chosen) < most and depth < max(map(len, groups), default=0):
        for group in groups:
            if depth < len(group) and len(chosen) < most:
                chosen.append(group[depth])
        depth += 1
    files = dict.fromkeys(str(f) for f in rows["_file"])
    picked = {f: sorted(r for g, r in chosen if g == f) for f in files}
    return {f: numbers for f, numbers in picked.items() if numbers}


def write_fixture(
    source: str,
    rows: pd.DataFrame,
    target_dir: Path,
    name: str,
    split: str | None,
    most: int = ROWS,
    by: str = "_file",
) -> Path:
    """Write the fixture of benchmark ``name``; returns the file or folder written.

    ``most`` rows, picked round robin over the values of ``by`` (:func:`fixture_rows`).
    """
    picked = fixture_rows(rows, most, by)
    if split is not None:  # a dataset folder: the hub's parquet layout
        target = target_dir / name / "data" / f"{split}-00000-of-00001.parquet"
        wanted = {(f, r) for f, numbers in picked.items() for r in numbers}
        keys = zip(rows["_file"].astype(str), rows["_row"].astype(int), strict=True)
        head = rows[[key in wanted for key in keys]]
        head = head.drop(columns=["_file", "_row", "_n"], errors="ignore")
        with atomic_path(target) as tmp:
            head.to_parquet(tmp, index=False)
        return target_dir / name
    if not is_pattern(source):
        file, numbers = next(iter(picked.items()))
        target = target_dir / f"{name}{Path(file).suffix.lower()}"
        _write_rows(Path(file), numbers, target)
        return target
    fixed = split_pattern(source)[0].resolve()
    for file, numbers in picked.items():
        _write_rows(
            Path(file), numbers, target_dir / name / Path(file).resolve().relative_to(fixed)
        )
    return target_dir / name


def _write_rows(source: Path, rows: list[int], target: Path) -> None:
    """Rows ``rows`` (the loader's ``_row``: data row, or a JSONL file's line) of ``source``."""
    suffix = source.suffix.lower()
    with atomic_path(target) as tmp:
        if suffix in (".jsonl", ".ndjson"):
            lines = source.read_text(encoding="utf-8-sig").splitlines()
            tmp.write_text("".join(lines[r - 1] + "\n" for r in rows), encoding="utf-8")
            return
        data = json.loads(source.read_text(encoding="utf-8-sig")) if suffix == ".json" else None
        if isinstance(data, list):
            chosen = [data[r - 1] for r in rows]
            tmp.write_text(json.dumps(chosen, ensure_ascii=False, indent=1), encoding="utf-8")
            return
        frame = read_any(source).iloc[[r - 1 for r in rows]]
        if suffix in (".tsv", ".tab"):
            frame.to_csv(tmp, sep="\t", index=False, quoting=csv.QUOTE_NONE)
        elif suffix == ".csv":
            frame.to_csv(tmp, index=False)
        elif suffix == ".json":
            tmp.write_text(frame.to_json(orient="records", force_ascii=False), encoding="utf-8")
        else:
            frame.to_parquet(tmp, index=False)
