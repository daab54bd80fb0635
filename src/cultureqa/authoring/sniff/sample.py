"""Read what ``cultureqa benchmark add --from`` names: one file, a dataset folder, or a pattern.

A pattern (``data/raw/{island}/{topic}.json``, or ``*`` globs) is the loader's multi-file source
syntax. The sniffer reads a spread of its files (not all fifty thousand) and a spread of each
file's rows, with the captured names as columns, exactly as the loader will present them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from cultureqa.benchmarks.delimited import guess_names, headerless
from cultureqa.benchmarks.sources import (
    capture_names,
    expand_pattern,
    is_pattern,
    read_any,
)
from cultureqa.core.io import SourceError

MAX_FILES = 40
"""Files of a pattern read for sniffing, spread evenly over the sorted list."""
MAX_ROWS = 4000
"""Rows sniffed in all, spread evenly over the rows read."""
SPLITS = ("test", "train", "validation")
_DELIMITED = (".csv", ".tsv", ".tab")


@dataclass
class Sample:
    """Rows to sniff, with where they came from (``_file``, ``_row``) and the path's captures."""

    frame: pd.DataFrame
    path: str
    """The source as the user wrote it (a file, a folder or a pattern)."""
    files: list[tuple[Path, dict[str, str]]]
    """Every file the source names, with what its path captures (one entry for a file)."""
    captures: list[str] = field(default_factory=list)
    split: str | None = None
    """The split read from a Hugging Face dataset folder (None: not a folder)."""
    names: tuple[str, ...] | None = None
    """Field names given to files without a header row (None: their first row names them)."""
    notes: list[str] = field(default_factory=list)

    @property
    def is_pattern(self) -> bool:
        """Whether the source is several files named by a pattern."""
        return is_pattern(self.path)


def read_sample(path: str) -> Sample:
    """The rows of ``path`` to sniff; raises SourceError when nothing can be read."""
    if is_pattern(path):
        return _read_pattern(path)
    source = Path(path)
    if source.is_dir():
        for split in SPLITS:
            try:
                frame = read_any(source, None, split)
            except SourceError:
                continue
            return Sample(_spread(_with_rows(frame, source)), path, [(source, {})], split=split)
        raise SourceError(source, f"no {'/'.join(SPLITS)} split in this dataset folder")
    frame, names, notes = _read_file(source)
    return Sample(
        _spread(_with_rows(frame, source)), path, [(source, {})], names=names, notes=notes
    )


def _read_file(file: Path) -> tuple[pd.DataFrame, tuple[str, ...] | None, list[str]]:
    """One file, read without a header row when its first row is data (JMMLU's CSVs)."""
    frame = read_any(file)
    why = headerless(frame) if file.suffix.lower() in _DELIMITED else None
    if why is None:
        return frame, None, []
    names = tuple(f"field_{n}" for n in range(1, len(frame.columns) + 1))
    frame = read_any(file, names=names)
    names = guess_names(frame)
    frame.columns = list(names)
    note = (f"{file} has no header row ({why}): its first row is read as an item, and its "
            f"fields are named by what they hold ({', '.join(names)}; source.header: none, "
            "source.columns): check them against the dataset card")  # fmt: skip
    return frame, names, [note]


def _read_pattern(path: str) -> Sample:
    files = expand_pattern(path)
    picked = _spread_list(files, MAX_FILES)
    parts = []
    named: dict[tuple[str, ...] | None, Path] = {}
    notes: list[str] = []
    for file, captured in picked:
        frame, names, said = _read_file(file)
        named.setdefault(names, file)
        notes += said[:1] if not notes else []
        part = _with_rows(frame, file)
        clash = sorted(set(captured) & set(map(str, part.columns)))
        if clash:
            raise SourceError(file, f"path captures {clash} clash with columns of the file")
        for key, value in captured.items():
            part[key] = value
        parts.append(part)
    _one_layout(path, picked, parts)
    if len(named) > 1:
        shown = ", ".join(f"{f} ({'no header row' if n else 'a header row'})"
                          for n, f in named.items())  # fmt: skip
        raise SourceError(path, f"the pattern's files differ in their first row: {shown}; "
                                "a benchmark is one layout")  # fmt: skip
    names = next(iter(named))
    frame = pd.concat(parts, ignore_index=True)
    sample = Sample(_spread(frame), path, files, capture_names(path), names=names, notes=notes)
    if len(picked) < len(files):
        sample.notes.append(f"sniffed {len(picked)} of {len(files)} files (spread evenly)")
    return sample


def _one_layout(
    path: str, picked: list[tuple[Path, dict[str, str]]], parts: list[pd.DataFrame]
) -> None:
    """Refuse a pattern whose files hold different layouts, naming both.

    GeoMLAMA's ``gd_prompt_{lang}.tsv`` also matches ``gd_prompt_en_aug.tsv``, a headerless list
    of prompts: read together, its first sentence becomes a field name and no role fits. A file
    sharing fewer than half its fields with the most common layout is another layout.
    """
    layouts = [
        frozenset(map(str, part.columns)) - {"_file", "_row"} - set(captured)
        for part, (_, captured) in zip(parts, picked, strict=True)
    ]
    common = max(dict.fromkeys(layouts), key=layouts.count)  # a tie: the first file's
    odd = [
        fields for fields in dict.fromkeys(layouts)
        if len(fields & common) * 2 < max(len(fields), len(common))
    ]  # fmt: skip
    if not odd:
        return

    def files(layout: frozenset[str]) -> list[str]:
        return [str(picked[i][0]) for i, fields in enumerate(layouts) if fields == layout]

    others = "; ".join(
        f"{_some(files(fields), 'file')} have {_some(sorted(fields), 'field')}" for fields in odd
    )
    raise SourceError(
        path,
        f"the pattern's files hold different layouts: {_some(files(common), 'file')} have "
        f"{_some(sorted(common), 'field')}, but {others}; a benchmark is one layout: give add a "
        "pattern that matches one (or put those files in a folder of their own)",
    )


def _some(names: list[str], noun: str) -> str:
    """``5 files ('data/a.tsv', 'data/b.tsv', …)``: paths in full, field names cut when long."""
    shown = ", ".join(
        repr(n) if len(n) <= 40 or noun == "file" else repr(n[:37] + "...") for n in names[:3]
    )
    plural = noun if len(names) == 1 else f"{noun}s"
    return f"{len(names)} {plural} ({shown}{', …' if len(names) > 3 else ''})"


def _with_rows(frame: pd.DataFrame, file: Path) -> pd.DataFrame:
    lines = frame.attrs.get("lines")
    frame = frame.reset_index(drop=True)
    frame["_file"] = str(file)
    frame["_row"] = lines if lines is not None else range(1, len(frame) + 1)
    return frame


def _spread(frame: pd.DataFrame) -> pd.DataFrame:
    if len(frame) <= MAX_ROWS:
        return frame
    keep = np.unique(np.linspace(0, len(frame) - 1, MAX_ROWS).round().astype(int))
    return frame.iloc[keep].reset_index(drop=True)


def _spread_list(
    items: list[tuple[Path, dict[str, str]]], most: int
) -> list[tuple[Path, dict[str, str]]]:
    if len(items) <= most:
        return items
    keep = np.unique(np.linspace(0, len(items) - 1, most).round().astype(int))
    return [items[i] for i in keep]
