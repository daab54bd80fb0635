"""The one way a benchmark spec becomes items: read → keep → map fields → check row → item.

``validate``, ``evaluate``, ``describe``, the ID-MoCQA ingest and ``benchmark add``'s trial all call
:func:`load_benchmark`, so they see the same items, the same row policy and the same counts. Each
row's fate is decided once, in order, and counted once (:class:`LoadCounts`): skipped by
``rows.keep``, dropped with its reason under the row policy, or loaded. Sampling comes last, over
valid rows only, so a declared ``sample.n`` is n valid items and a defect outside the sample is
still found.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from cultureqa.benchmarks.load.answers import gold_indices
from cultureqa.benchmarks.load.counts import (
    LoadCounts,
    RowChanges,
    RowError,
    Where,
    check_drop_share,
    drop_or_raise,
)
from cultureqa.benchmarks.load.frame import items_frame
from cultureqa.benchmarks.load.mapping import (
    Mapping,
    Normalizer,
    check_columns,
    get,
    is_blank_row,
    item_id,
    metadata,
    row_language,
    text,
)
from cultureqa.benchmarks.load.options import folded, row_options
from cultureqa.benchmarks.load.shuffle import shuffled
from cultureqa.benchmarks.sandbox import render_limits
from cultureqa.benchmarks.sources import apply_sample, capture_names, keep_mask, read_rows
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.io import SourceError
from cultureqa.core.records import McqItem

AbsentLanguages = Literal["error", "skip"]
OPTION_LIST = re.compile(r"(?m)^[ \t]*\(?A[.):][ \t]+\S.*\n[ \t]*\(?B[.):][ \t]+\S")
"""A lettered option list inside a question (``A. …`` then ``B. …`` at line starts): the model
would read the options twice, in two formats."""
FRAME_CHUNK = 50_000
"""Items held as objects at once when only tables are wanted (``as_frames``)."""


@dataclass
class LoadedSource:
    """A benchmark's items: every valid row of the source, and the evaluated sample of them."""

    items: dict[str, list[McqItem]]
    """The evaluated items per language (the declared sample or limit of ``whole``)."""
    whole: dict[str, list[McqItem]]
    """Every item the source yields per language, before sampling."""
    source: pd.DataFrame
    """The sampled valid source rows (``attrs``: rows read, skipped, before sampling)."""
    origin: str
    counts: LoadCounts
    languages_absent: tuple[str, ...] = ()
    """Languages asked for whose columns the source lacks (only with ``absent="skip"``)."""
    frames: tuple[pd.DataFrame, pd.DataFrame] | None = None
    """With ``as_frames``: ``whole`` and ``items`` as :func:`items_frame` tables, languages in
    sorted order (``items`` and ``whole`` are then empty)."""

    @property
    def sampled(self) -> bool:
        """Whether the evaluated items are a subset of the source's."""
        if self.frames is not None:
            return len(self.frames[1]) < len(self.frames[0])
        return sum(map(len, self.items.values())) < sum(map(len, self.whole.values()))


def load_benchmark(
    spec: BenchmarkSpec,
    root: Path | None = None,
    *,
    languages: Collection[str] | None = None,
    absent: AbsentLanguages = "error",
    rows: tuple[pd.DataFrame, str] | None = None,
    as_frames: bool = False,
) -> LoadedSource:
    """Load a benchmark's items under its row policy, then sample the valid ones.

    Args:
        spec: The benchmark declaration.
        root: Project root that relative source paths resolve from.
        languages: Languages to map each row in (translations in sibling columns); by default
            those the settings use. A benchmark whose items carry their own language
            (``columns.language``) loads every row in its own language instead.
        absent: ``skip`` leaves out a requested language whose columns the source lacks (the
            ingest of an Indonesian-only file); ``error`` names the missing columns.
        rows: Source rows already read, with where they came from (``benchmark add``'s trial);
            by default the declared source is read.
        as_frames: Give the items as tables only (``LoadedSource.frames``), built
            ``FRAME_CHUNK`` items at a time: ``validate`` checks tables, and a million items held
            as objects cost a gigabyte more than their table.

    Raises:
        SourceError: the source cannot be read, or a row is invalid under ``rows.invalid: error``,
            or more rows are invalid than ``rows.max_invalid_share`` allows.
    """
    with render_limits(spec.template_limits):
        frame, origin = read_rows(spec, root) if rows is None else _given(*rows)
        counts = LoadCounts(rows_read=len(frame))
        if spec.rows.keep is not None:
            frame = frame[keep_mask(frame, spec.rows.keep, origin)].reset_index(drop=True)
        counts.skipped = counts.rows_read - len(frame)
        wanted = _languages(spec, frame, languages, absent, origin)
        pieces: dict[str, list[pd.DataFrame]] | None = {} if as_frames else None
        whole, numbers, kept = _map_rows(spec, frame, wanted, origin, counts, pieces)
    check_drop_share(spec, counts, len(frame) - counts.blank, origin)
    if not counts.balanced():  # pragma: no cover - a bookkeeping bug, never a data problem
        raise AssertionError(f"row counts do not add up: {counts.record()}")
    valid = frame if len(kept) == len(frame) else frame.iloc[kept].reset_index(drop=True)
    valid.attrs.update(rows_read=counts.rows_read, rows_skipped=counts.skipped)
    fields = {m: spec.columns.metadata_fields.get(m, m) for m in spec.columns.metadata}
    sampled = apply_sample(valid, spec.sample, origin, fields)
    chosen = set(sampled["_n"].tolist())
    absent_langs = tuple(sorted(set(languages or ()) - set(wanted)))
    if pieces is not None:
        frames = _frames(pieces, numbers, chosen, everything=len(chosen) == len(valid))
        return LoadedSource({}, {}, sampled, origin, counts, absent_langs, frames)
    if len(chosen) == len(valid):
        items = whole
    else:
        items = {
            lang: [i for n, i in zip(numbers[lang], batch, strict=True) if n in chosen]
            for lang, batch in whole.items()
        }
    return LoadedSource(items, whole, sampled, origin, counts, absent_langs)


def _frames(
    pieces: dict[str, list[pd.DataFrame]],
    numbers: dict[str, array[int]],
    chosen: set[int],
    everything: bool,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The whole table (languages sorted) and the sample's rows of it, by each item's ``_n``."""
    parts = [p for lang in sorted(pieces) for p in pieces[lang]]
    pieces.clear()
    whole = pd.concat(parts, ignore_index=True) if parts else items_frame([])
    del parts
    if everything:
        return whole, whole
    order = [np.frombuffer(numbers[lang], dtype=np.int64) for lang in sorted(numbers)]
    flat = np.concatenate(order) if order else np.array([], dtype=np.int64)
    mask = np.isin(flat, np.fromiter(chosen, dtype=np.int64, count=len(chosen)))
    return whole, whole[mask].reset_index(drop=True)


def _given(frame: pd.DataFrame, origin: str) -> tuple[pd.DataFrame, str]:
    """Rows read elsewhere, numbered like a read source (``_n`` keeps synthesized ids stable)."""
    frame = frame.reset_index(drop=True)
    if "_n" not in frame.columns:
        frame["_n"] = range(1, len(frame) + 1)
    return frame, origin


def _languages(
    spec: BenchmarkSpec,
    frame: pd.DataFrame,
    languages: Collection[str] | None,
    absent: AbsentLanguages,
    origin: str,
) -> list[str]:
    """The languages each row is mapped in (per-row languages: every declared one)."""
    if spec.columns.language is not None:
        return sorted(spec.languages)
    wanted = sorted(
        set(languages) if languages is not None else {s.language for s in spec.settings}
    )
    unknown = [lang for lang in wanted if lang not in spec.languages]
    if unknown:
        raise SourceError(origin, f"languages {unknown} are not declared {sorted(spec.languages)}")
    if absent == "skip":
        columns = set(map(str, frame.columns))
        wanted = [lang for lang in wanted if Mapping.of(spec, lang).own_columns(columns) <= columns]
    return wanted


def _map_rows(
    spec: BenchmarkSpec,
    frame: pd.DataFrame,
    languages: list[str],
    origin: str,
    counts: LoadCounts,
    pieces: dict[str, list[pd.DataFrame]] | None = None,
) -> tuple[dict[str, list[McqItem]], dict[str, array[int]], list[int]]:
    """Items per language, their rows' ``_n``, and the frame positions of the loaded rows.

    Numbers are kept in compact arrays, and an id's first row as a position: at a million rows
    per-row tuples and "file row N" strings cost hundreds of megabytes. With ``pieces``, every
    ``FRAME_CHUNK`` items of a language become a table there and the returned lists are empty.
    """
    mappings = {lang: Mapping.of(spec, lang) for lang in languages}
    for mapping in mappings.values():
        check_columns(spec, mapping, frame, origin)
    out: dict[str, list[McqItem]] = {lang: [] for lang in languages}
    numbers: dict[str, array[int]] = {lang: array("q") for lang in languages}
    kept: array[int] = array("q")
    ids: dict[str, int] = {}  # id → frame position of its first row (formatted only on error)
    questions: dict[tuple[str, str, tuple[str, ...]], str] = {}
    normalizer = _normalizer(spec)
    captured = capture_names(spec.source.path or "")
    for pos, row in enumerate(_records(frame), start=1):
        where = Where(str(row.get("_file", origin)), int(row.get("_row", pos)))
        name = f"row {where.row}"
        if is_blank_row(row, captured):
            counts.blank += 1
            continue
        try:
            name = item_id(spec, row, where, pos)
            if name in ids:
                first = _where(frame, ids[name], origin)
                raise where.error(
                    f"duplicate id '{name}' (first at {first.file} row {first.row})",
                    spec.columns.id,
                    "duplicate_id",
                )
            langs = [row_language(spec, row, where)] if spec.columns.language else languages
            changes = RowChanges()
            items = [
                _item(spec, row, mappings[lang], lang, where, name, changes, normalizer)
                for lang in langs
            ]
            if spec.rows.duplicates == "drop":
                _no_repeat(items, questions, where)
        except RowError as exc:
            drop_or_raise(spec, counts, exc, name)
            continue
        ids[name] = pos - 1
        for item in items:
            if spec.rows.duplicates == "drop":
                questions.setdefault(_key(item), f"{item.id} ({where.file} row {where.row})")
            out[item.language].append(item)
            if pieces is not None and len(out[item.language]) >= FRAME_CHUNK:
                pieces.setdefault(item.language, []).append(items_frame(out[item.language]))
                out[item.language] = []
            numbers[item.language].append(int(row["_n"]))
            counts.languages[item.language] = counts.languages.get(item.language, 0) + 1
        changes.merge_into(counts, name)
        counts.loaded += 1
        kept.append(pos - 1)
    if pieces is not None:
        for lang, rest in out.items():
            if rest:  # an empty table would turn the columns' types to object in the concat
                pieces.setdefault(lang, []).append(items_frame(rest))
            out[lang] = []
    return out, numbers, list(kept)


def _where(frame: pd.DataFrame, position: int, origin: str) -> Where:
    """File and data row of a frame position (for messages about an earlier row)."""
    row = frame.iloc[position]
    file = str(row["_file"]) if "_file" in frame.columns else origin
    return Where(file, int(row["_row"]) if "_row" in frame.columns else position + 1)


def _records(frame: pd.DataFrame, chunk: int = 50_000) -> Iterator[dict[str, Any]]:
    """Rows as dicts, a chunk of columns at a time.

    ``DataFrame.to_dict("records")`` walks Arrow-backed string columns value by value and holds
    every dict at once: a million-row source took 12 s of 35 and most of the memory.
    """
    names = [str(c) for c in frame.columns]
    for start in range(0, len(frame), chunk):
        part = frame.iloc[start : start + chunk]
        values = [part[c].tolist() for c in frame.columns]
        for cells in zip(*values, strict=True):
            yield dict(zip(names, cells, strict=True))


def _normalizer(spec: BenchmarkSpec) -> Normalizer | None:
    if not spec.normalize_region:
        return None
    from cultureqa.knowledge.gazetteer import normalize_province

    return normalize_province


def _key(item: McqItem) -> tuple[str, str, tuple[str, ...]]:
    return item.language, folded(item.question), tuple(sorted(map(folded, item.options)))


def _no_repeat(
    items: list[McqItem], seen: dict[tuple[str, str, tuple[str, ...]], str], where: Where
) -> None:
    """``rows.duplicates: drop``: an item with an earlier item's question and options goes."""
    for item in items:
        first = seen.get(_key(item))
        if first is not None:
            raise where.error(
                f"item repeats {first}: same question and options ({item.language})",
                None,
                "duplicate_item",
            )


def _item(
    spec: BenchmarkSpec,
    row: dict[str, Any],
    mapping: Mapping,
    language: str,
    where: Where,
    name: str,
    changes: RowChanges,
    normalizer: Normalizer | None,
) -> McqItem:
    """Map and check one row in one language; raises RowError naming the field that fails."""
    options, moved, column = row_options(row, spec, mapping, where, changes)
    golds = gold_indices(row, options, spec, where, column, moved)
    changes.multi_gold = changes.multi_gold or len(golds) > 1
    changes.option_count = changes.option_count or len(options)
    found = metadata(spec, row, where, normalizer)
    question = text(get(row, mapping.question, where), where, mapping.question, "empty_question")
    if OPTION_LIST.search(question):
        raise where.error(
            "the question holds a lettered option list (a line 'A. …' then 'B. …'): the prompt "
            "lists the options again; keep only the question with the question template "
            "(docs/adding-a-benchmark.md)",
            mapping.question,
            "options_in_question",
        )
    several = golds if len(golds) > 1 else ()
    item = McqItem(name, question, options, golds[0], language, found, several)
    if spec.columns.shuffle_seed is None:
        return item
    changes.shuffled = True
    return shuffled(item, spec.columns.shuffle_seed)
