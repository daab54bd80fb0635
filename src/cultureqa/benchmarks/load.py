"""Turn any source table into :class:`McqItem` records through a spec's field mapping.

Errors name file, row (1-based data row of that file; the line of a JSONL file) and column, because
a researcher fixing a 5,000-row CSV needs to know exactly where to look. Nothing is guessed: an
answer that is not a letter, an option list with a duplicate or an empty entry, or a metadata value
outside its declared type is a :class:`RowError` with a reason code. The benchmark's row policy
(:class:`~cultureqa.benchmarks.spec.RowPolicy`) decides what a RowError does: stop the load
(``error``, the default) or leave the row out (``drop``), listed with its file, row, id and reason.
The one repair, stripping "A. " labels, happens only when every option of the item carries the
consecutive labels A, B, C…, and is counted.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.benchmarks.fields import FieldError, field_roots, options_from, resolve
from cultureqa.benchmarks.sources import ROW_COLUMNS, apply_sample, load_frame, read_source
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.io import SourceError
from cultureqa.records import LETTERS, McqItem

_LABEL = re.compile(r"^\s*\(?([A-Ja-j])[.)]\s+")
_ONLY_LABEL = re.compile(r"^\s*(?:\([A-Ja-j]\)|[A-Ja-j][.)])\s*$")
_LETTER_ANSWER = re.compile(r"^\s*(?:\(([A-Za-z])\)|([A-Za-z])[.)]?)\s*$")
_BOOL_TEXT = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}
SHOWN_DROPS = 50
"""Dropped rows listed one by one in reports; the counts by reason always cover all of them."""

Normalizer = Callable[[str], str | None]


class RowError(SourceError):
    """One source row cannot become an item; ``reason`` is a stable code for counting drops."""

    def __init__(self, path: str, message: str, row: int, column: str | None, reason: str) -> None:
        super().__init__(path, message, row=row, column=column)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class Drop:
    """A row the ``drop`` policy left out, with where it is and why."""

    file: str
    row: int
    item_id: str
    reason: str
    column: str | None
    message: str


@dataclass
class LoadCounts:
    """Repairs, skips and drops while loading, reported by ``validate`` and ``evaluate``."""

    labels_stripped: int = 0
    labels_reordered: int = 0
    rows_read: int = 0
    skipped: int = 0
    """Rows the declared ``rows.keep`` filter left out (not invalid: not wanted)."""
    dropped: list[Drop] = field(default_factory=list)
    multi_gold: int = 0
    """Items with several right answers."""
    option_counts: dict[int, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, what: str, item_id: str) -> None:
        """Remember up to five example ids per kind of change."""
        shown = self.examples.setdefault(what, [])
        if len(shown) < 5:
            shown.append(item_id)

    def dropped_by_reason(self) -> dict[str, int]:
        """Drop count per reason code, sorted by reason."""
        return dict(sorted(Counter(d.reason for d in self.dropped).items()))

    def record(self) -> dict[str, Any]:
        """JSON-ready summary for metrics, the run record and MLflow (first drops listed)."""
        return {
            "rows_read": self.rows_read,
            "rows_skipped": self.skipped,
            "rows_dropped": len(self.dropped),
            "dropped_by_reason": self.dropped_by_reason(),
            "dropped": [asdict(d) for d in self.dropped[:SHOWN_DROPS]],
            "labels_stripped": self.labels_stripped,
            "labels_reordered": self.labels_reordered,
            "multi_gold_items": self.multi_gold,
            "option_counts": {str(k): v for k, v in sorted(self.option_counts.items())},
            "examples": self.examples,
        }


def load_source_frame(spec: BenchmarkSpec, root: Path | None = None) -> tuple[pd.DataFrame, str]:
    """Read the benchmark's source rows; returns the frame and a label naming where it came from."""
    return load_frame(spec, root)


def load_items(
    spec: BenchmarkSpec,
    frame: pd.DataFrame,
    language: str,
    origin: str,
    region_normalizer: Normalizer | None = None,
    counts: LoadCounts | None = None,
) -> list[McqItem]:
    """Map rows to items in ``language`` under the spec's row policy."""
    return load_rows(spec, frame, [language], origin, region_normalizer, counts)[language]


@dataclass
class LoadedSource:
    """A benchmark's items: every valid row of the source, and the evaluated sample of them."""

    items: dict[str, list[McqItem]]
    """The evaluated items per language (the declared sample or limit of ``whole``)."""
    whole: dict[str, list[McqItem]]
    """Every item the source yields per language, before sampling."""
    source: pd.DataFrame
    """The sampled source rows (``attrs``: rows read, skipped, before sampling)."""
    origin: str
    counts: LoadCounts

    @property
    def sampled(self) -> bool:
        """Whether the evaluated items are a subset of the source's."""
        return sum(map(len, self.items.values())) < sum(map(len, self.whole.values()))


def load_benchmark(spec: BenchmarkSpec, root: Path | None = None) -> LoadedSource:
    """Filter, load every row (dropping or refusing invalid ones), then sample the valid rows.

    Sampling after loading means a declared ``sample.n`` is n valid items and a defect outside
    the sample is still found and reported.
    """
    frame, origin = read_source(spec, root)
    normalizer = None
    if spec.normalize_region:
        from cultureqa.knowledge.gazetteer import normalize_province

        normalizer = normalize_province
    counts = LoadCounts(
        rows_read=int(frame.attrs.get("rows_read", len(frame))),
        skipped=int(frame.attrs.get("rows_skipped", 0)),
    )
    languages = sorted({s.language for s in spec.settings})
    whole, kept = _load(spec, frame, languages, origin, normalizer, counts)
    valid = frame.iloc[kept].reset_index(drop=True)
    valid.attrs.update(frame.attrs)
    fields = {m: spec.columns.metadata_fields.get(m, m) for m in spec.columns.metadata}
    sampled = apply_sample(valid, spec.sample, origin, fields)
    chosen = set(sampled["_n"].tolist())
    numbers = valid["_n"].tolist()
    items = {
        lang: [i for i, n in zip(batch, numbers, strict=True) if n in chosen]
        for lang, batch in whole.items()
    }
    return LoadedSource(items, whole, sampled, origin, counts)


def load_rows(
    spec: BenchmarkSpec,
    frame: pd.DataFrame,
    languages: Iterable[str],
    origin: str,
    region_normalizer: Normalizer | None = None,
    counts: LoadCounts | None = None,
) -> dict[str, list[McqItem]]:
    """Items per language; a row invalid in any language is an error or dropped in all of them."""
    return _load(spec, frame, sorted(set(languages)), origin, region_normalizer, counts)[0]


def load_kept(
    spec: BenchmarkSpec, frame: pd.DataFrame, origin: str, counts: LoadCounts
) -> list[int]:
    """Frame positions of the rows that become items in every declared language."""
    languages = sorted({s.language for s in spec.settings})
    return _load(spec, frame, languages, origin, None, counts)[1]


def _load(
    spec: BenchmarkSpec,
    frame: pd.DataFrame,
    languages: list[str],
    origin: str,
    region_normalizer: Normalizer | None,
    counts: LoadCounts | None,
) -> tuple[dict[str, list[McqItem]], list[int]]:
    """Items per language and the frame positions of the rows that became items."""
    counts = counts if counts is not None else LoadCounts()
    mappings = {lang: _Mapping.of(spec, lang) for lang in languages}
    for mapping in mappings.values():
        _check_columns(spec, mapping, frame, origin)
    out: dict[str, list[McqItem]] = {lang: [] for lang in languages}
    kept: list[int] = []
    seen: dict[str, str] = {}
    for pos, row in enumerate(frame.to_dict(orient="records"), start=1):
        where = _Where(str(row.get("_file", origin)), int(row.get("_row", pos)))
        try:
            _not_blank(row, where)
            item_id = _item_id(spec, row, where, pos)
        except RowError as exc:
            _drop_or_raise(spec, counts, exc, f"row {where.row}")
            continue
        try:
            if item_id in seen:
                raise where.error(
                    f"duplicate id '{item_id}' (first at {seen[item_id]})",
                    spec.columns.id,
                    "duplicate_id",
                )
            row_counts = LoadCounts()
            items = {
                lang: _item(spec, row, m, lang, where, item_id, row_counts, region_normalizer)
                for lang, m in mappings.items()
            }
        except RowError as exc:
            _drop_or_raise(spec, counts, exc, item_id)
            continue
        seen[item_id] = f"{where.file} row {where.row}"
        _merge(counts, row_counts)
        for lang, item in items.items():
            out[lang].append(item)
        kept.append(pos - 1)
    _check_drop_share(spec, counts, len(frame), origin)
    return out, kept


def _not_blank(row: dict[str, Any], where: _Where) -> None:
    """A row with no value in any column (a separator line of commas) is not an item."""
    values = [v for k, v in row.items() if k not in ROW_COLUMNS]
    if all(_option_text(v) == "" for v in values if not isinstance(v, list | dict)):
        raise where.error("blank row (no value in any column)", None, "blank_row")


def _merge(counts: LoadCounts, row: LoadCounts) -> None:
    """Add one accepted row's repairs (counted once per row, not once per language)."""
    counts.labels_stripped += min(row.labels_stripped, 1)
    counts.labels_reordered += min(row.labels_reordered, 1)
    counts.multi_gold += min(row.multi_gold, 1)
    for k in sorted(row.option_counts)[:1]:
        counts.option_counts[k] = counts.option_counts.get(k, 0) + 1
    for what, ids in row.examples.items():
        for item_id in ids[:1]:
            counts.note(what, item_id)


def _drop_or_raise(spec: BenchmarkSpec, counts: LoadCounts, exc: RowError, item_id: str) -> None:
    if spec.rows.invalid == "error":
        raise RowError(
            exc.path,
            f"{exc.message} (fix the row, or for a published file set rows.invalid: drop to leave "
            "such rows out, counted and listed)",
            exc.row or 0,
            exc.column,
            exc.reason,
        ) from exc
    counts.dropped.append(
        Drop(exc.path, exc.row or 0, item_id, exc.reason, exc.column, exc.message)
    )


def _check_drop_share(spec: BenchmarkSpec, counts: LoadCounts, rows: int, origin: str) -> None:
    """More drops than ``rows.max_invalid_share`` of the kept rows: the source is not usable."""
    dropped = len(counts.dropped)
    limit = spec.rows.max_invalid_share
    if not dropped or dropped <= limit * rows:
        return
    first = counts.dropped[0]
    raise SourceError(
        origin,
        f"{dropped} of {rows} rows ({dropped / rows:.1%}) are invalid, more than "
        f"rows.max_invalid_share {limit:.0%} allows; by reason {counts.dropped_by_reason()}; "
        f"first: {first.file}, row {first.row}, column '{first.column}': {first.message}; fix "
        "the rows, narrow rows.keep, or raise rows.max_invalid_share",
    )


@dataclass(frozen=True)
class _Mapping:
    question: str
    options: str | list[str]

    @classmethod
    def of(cls, spec: BenchmarkSpec, language: str) -> _Mapping:
        over = spec.languages[language]
        return cls(over.question or spec.columns.question, over.options or spec.columns.options)


@dataclass(frozen=True)
class _Where:
    file: str
    row: int

    def error(self, message: str, column: str | None, reason: str) -> RowError:
        return RowError(self.file, message, self.row, column, reason)


def _check_columns(
    spec: BenchmarkSpec, mapping: _Mapping, frame: pd.DataFrame, origin: str
) -> None:
    """Name every missing column before the first row (a wrong mapping fails in one line)."""
    cols = spec.columns
    columns = set(map(str, frame.columns))
    exprs = [mapping.question, cols.answer, *_option_exprs(mapping.options)]
    exprs += [cols.metadata_fields.get(m, m) for m in cols.metadata]
    exprs += [e for e in (cols.id,) if e]
    needed = set().union(*(field_roots(e, columns) for e in exprs))
    missing = sorted(needed - columns)
    if missing:
        shown = [c for c in frame.columns if c not in ROW_COLUMNS]
        raise SourceError(origin, f"missing column(s) {missing}; found {shown}")


def _option_exprs(options: str | list[str]) -> list[str]:
    return [options] if isinstance(options, str) else list(options)


def _get(row: dict[str, Any], expr: str, where: _Where, reason: str = "field") -> Any:
    try:
        return resolve(row, expr)
    except FieldError as exc:
        raise where.error(str(exc), expr, reason) from exc


def _item_id(spec: BenchmarkSpec, row: dict[str, Any], where: _Where, pos: int) -> str:
    """The declared id, or ``<benchmark>-<n>`` from the row's position over all source files."""
    if spec.columns.id is None:
        return f"{spec.name}-{int(row.get('_n', pos)):06d}"
    return _text(_get(row, spec.columns.id, where), where, spec.columns.id, "empty_id")


def _item(
    spec: BenchmarkSpec,
    row: dict[str, Any],
    mapping: _Mapping,
    language: str,
    where: _Where,
    item_id: str,
    counts: LoadCounts,
    normalizer: Normalizer | None,
) -> McqItem:
    options, relabel = _options(row, spec, mapping, where, counts, item_id)
    among = ",".join(_option_exprs(mapping.options))
    golds = _answer_indices(row, options, spec, where, among, relabel)
    if len(golds) > 1:
        counts.multi_gold = 1
        counts.note("multi_gold", item_id)
    counts.option_counts[len(options)] = 1
    metadata = _metadata(spec, row, where, normalizer)
    question = _text(_get(row, mapping.question, where), where, mapping.question, "empty_question")
    several = golds if len(golds) > 1 else ()
    return McqItem(item_id, question, options, golds[0], language, metadata, several)


def _text(value: Any, where: _Where, column: str, reason: str = "empty_value") -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)) or str(value).strip() == "":
        raise where.error("empty value", column, reason)
    return str(value).strip()


def _options(
    row: dict[str, Any],
    spec: BenchmarkSpec,
    mapping: _Mapping,
    where: _Where,
    counts: LoadCounts,
    item_id: str,
) -> tuple[tuple[str, ...], list[int] | None]:
    """The item's option texts, and the position each original option moved to (by_label)."""
    if isinstance(mapping.options, list):
        column = ",".join(mapping.options)
        raw = [_get(row, c, where, "options") for c in mapping.options]
    else:
        column = mapping.options
        try:
            raw = options_from(
                _get(row, column, where, "options"),
                spec.columns.options_transform,
                spec.columns.options_sep,
            )
        except FieldError as exc:
            raise where.error(str(exc), column, "options_unparsable") from exc
    texts = _trim_trailing([_option_text(o) for o in raw], spec.columns.option_counts)
    _check_count(texts, spec.columns.option_counts, where, column)
    empty = [LETTERS[i] for i, t in enumerate(texts) if not t]
    if empty:
        raise where.error(f"option(s) {empty} are empty", column, "empty_option")
    texts, moved = _labels(texts, spec.columns.option_labels, where, column, counts, item_id)
    _no_duplicates(texts, where, column)
    return tuple(texts), moved


def _trim_trailing(texts: list[str], allowed: tuple[int, ...]) -> list[str]:
    """With declared variable option counts, blank trailing option columns are absent options."""
    if not allowed:
        return texts
    while len(texts) > min(allowed) and not texts[-1]:
        texts = texts[:-1]
    return texts


def _check_count(texts: list[str], allowed: tuple[int, ...], where: _Where, column: str) -> None:
    if len(texts) < 2:
        raise where.error(f"need at least 2 options, got {len(texts)}", column, "option_count")
    if len(texts) > len(LETTERS):
        raise where.error(
            f"at most {len(LETTERS)} options, got {len(texts)}", column, "option_count"
        )
    if allowed and len(texts) not in allowed:
        raise where.error(
            f"{len(texts)} options, not one of columns.option_counts {list(allowed)}",
            column,
            "option_count",
        )


def _labels(
    texts: list[str],
    mode: str,
    where: _Where,
    column: str,
    counts: LoadCounts,
    item_id: str,
) -> tuple[list[str], list[int] | None]:
    """Strip, reorder or keep "A. " labels; labels out of order or a bare label are errors."""
    if mode == "keep":
        return texts, None
    bare = [LETTERS[i] for i, t in enumerate(texts) if _ONLY_LABEL.match(t)]
    if bare:
        raise where.error(
            f"option(s) {bare} hold only a label ({texts[LETTERS.index(bare[0])]!r}), no text",
            column,
            "label_only_option",
        )
    stripped = strip_labels(texts)
    if stripped is not None:
        counts.labels_stripped = 1
        counts.note("labels_stripped", item_id)
        return stripped, None
    order = label_order(texts)
    if order is None:
        return texts, None
    if mode != "by_label":
        shown = ", ".join(order)
        raise where.error(
            f"options carry labels {shown}, not A, B, C… in order, so the letters shown would not "
            f"match the labels ({texts[0][:30]!r} would be A); reorder them in the source or set "
            "columns.option_labels: by_label (options sorted by label, gold re-pointed)",
            column,
            "labels_out_of_order",
        )
    counts.labels_reordered = 1
    counts.note("labels_reordered", item_id)
    moved = [LETTERS.index(letter) for letter in order]
    body = [_LABEL.sub("", t, count=1).strip() for t in texts]
    result = [""] * len(texts)
    for old, new in enumerate(moved):
        result[new] = body[old]
    return result, moved


def label_order(options: list[str]) -> list[str] | None:
    """The labels when every option carries one and they are A, B, C… in some other order."""
    matches = [_LABEL.match(o) for o in options]
    if not all(matches):
        return None
    letters = [m.group(1).upper() for m in matches if m is not None]
    if (
        sorted(letters) != list(LETTERS[: len(options)])
        or "".join(letters) == LETTERS[: len(options)]
    ):
        return None
    return letters


def _option_text(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return str(value).strip()


def strip_labels(options: list[str]) -> list[str] | None:
    """Options without "A. "/"(B) " labels, or None when not every option carries A, B, C… in order.

    "G. A. Siwabessy" alone is a person's initials, not a label, so it is left as written.
    """
    matches = [_LABEL.match(o) for o in options]
    if not all(matches):
        return None
    letters = "".join(m.group(1).upper() for m in matches if m is not None)
    if letters != LETTERS[: len(options)]:
        return None
    out = [o[m.end() :].strip() for o, m in zip(options, matches, strict=True) if m is not None]
    return out if all(out) else None


def _no_duplicates(options: list[str], where: _Where, column: str) -> None:
    first: dict[str, str] = {}
    for letter, text in zip(LETTERS, options, strict=False):
        key = " ".join(text.split()).casefold()
        if key in first:
            raise where.error(
                f"options {first[key]} and {letter} are the same ({text[:40]!r})",
                column,
                "duplicate_option",
            )
        first[key] = letter


def parse_letter(text: str) -> str | None:
    """Read a letter answer: B, b, (B), B. or B) give "B"; anything else ("Banana") gives None."""
    match = _LETTER_ANSWER.match(text)
    if match is None:
        return None
    return (match.group(1) or match.group(2)).upper()


def _answer_indices(
    row: dict[str, Any],
    options: tuple[str, ...],
    spec: BenchmarkSpec,
    where: _Where,
    among: str,
    moved: list[int] | None,
) -> tuple[int, ...]:
    """Gold positions, first-listed first; several only where ``answer_sep`` allows them."""
    column = spec.columns.answer
    value = _get(row, column, where, "answer")
    parts = _gold_parts(value, options, spec, where, column)
    golds: list[int] = []
    for text in parts:
        index = _answer_index(text, options, spec, where, among, moved)
        if index not in golds:
            golds.append(index)
    return tuple(golds)


def _gold_parts(
    value: Any, options: tuple[str, ...], spec: BenchmarkSpec, where: _Where, column: str
) -> list[str]:
    sep = spec.columns.answer_sep
    listed = value if isinstance(value, list | tuple) else None
    if isinstance(value, str) and value.strip().startswith("[") and sep is not None:
        try:
            listed = options_from(value, "list", "|")
        except FieldError:
            listed = None
    if listed is not None:
        if sep is None:
            raise where.error(
                f"answer {value!r} lists several golds; set columns.answer_sep to accept them",
                column,
                "multi_gold_undeclared",
            )
        parts = [_option_text(v) for v in listed]
    else:
        text = _text(value, where, column, "missing_gold")
        whole = spec.columns.answer_format == "text" and text in options
        parts = [text] if sep is None or whole else [p.strip() for p in text.split(sep)]
    if not parts or any(not p for p in parts):
        raise where.error(f"answer {value!r} has an empty gold", column, "missing_gold")
    return parts


def _answer_index(
    text: str,
    options: tuple[str, ...],
    spec: BenchmarkSpec,
    where: _Where,
    among: str,
    moved: list[int] | None,
) -> int:
    column = spec.columns.answer
    fmt = spec.columns.answer_format
    if fmt == "letter":
        index = LETTERS.find(_answer_letter(text, options, where, column))
    elif fmt == "index":
        number = _as_int(text)
        if number is None:
            raise where.error(
                f"answer {text!r} is not a 0-based option index", column, "answer_not_index"
            )
        index = moved[number] if moved is not None and 0 <= number < len(moved) else number
    else:
        index = options.index(text) if text in options else -1
        if index < 0:
            raise where.error(
                f"answer {text!r} is not the text of any option", column, "answer_not_option"
            )
    if not 0 <= index < len(options):
        raise where.error(
            f"answer {text!r} is not among the {len(options)} options of '{among}'",
            column,
            "answer_out_of_range",
        )
    return index


def _answer_letter(text: str, options: tuple[str, ...], where: _Where, column: str) -> str:
    """The letter of "B", "(b)", "B." — or of "(B) Aceh" when option B's text is "Aceh"."""
    letter = parse_letter(text)
    if letter is not None:
        return letter
    labelled = split_label(text)
    if labelled is None:
        raise where.error(
            f"answer {text!r} is not a letter (A, (B), c. …)", column, "answer_not_letter"
        )
    letter, rest = labelled
    index = LETTERS.index(letter)
    said = (_folded(rest), _folded(text))  # options with labels stripped, or kept
    if index < len(options) and _folded(options[index]) not in said:
        raise where.error(
            f"answer {text!r} names option {letter}, whose text is {options[index]!r}; "
            "fix the answer or the option",
            column,
            "answer_label_mismatch",
        )
    return letter


def split_label(text: str) -> tuple[str, str] | None:
    """("D", "Rendang") for "(D) Rendang" or "d. Rendang"; None for text without a label."""
    labelled = _LABEL.match(text)
    if labelled is None:
        return None
    return labelled.group(1).upper(), text[labelled.end() :]


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _as_int(text: str) -> int | None:
    stripped = text.strip()
    if stripped.lstrip("-").isdigit():
        return int(stripped)
    if re.fullmatch(r"-?\d+\.0+", stripped):
        return int(float(stripped))
    return None


def _metadata(
    spec: BenchmarkSpec,
    row: dict[str, Any],
    where: _Where,
    region_normalizer: Normalizer | None,
) -> dict[str, Any]:
    cols = spec.columns
    metadata: dict[str, Any] = {}
    for name in cols.metadata:
        expr = cols.metadata_fields.get(name, name)
        value = _get(row, expr, where, "metadata")
        declared = cols.metadata_types.get(name)
        metadata[name] = _typed(value, declared, where, expr) if declared else _meta_value(value)
    region_col = spec.location.region_column
    if spec.normalize_region and region_col and region_normalizer is not None:
        canonical = region_normalizer(str(row[region_col]))
        if canonical is None:
            raise where.error(f"unknown region '{row[region_col]}'", region_col, "unknown_region")
        metadata[region_col] = canonical
    return metadata


def _typed(value: Any, declared: str | tuple[str, ...], where: _Where, column: str) -> Any:
    """A metadata value checked against its declared type or allowed values."""
    if isinstance(declared, tuple):
        text = _text(value, where, column, "metadata_type")
        if text not in declared:
            raise where.error(
                f"{text!r} is not one of the declared values {list(declared)}",
                column,
                "metadata_type",
            )
        return text
    if declared == "bool":
        return _as_bool(value, where, column)
    text = _text(value, where, column, "metadata_type")
    if declared == "int":
        number = _as_int(text)
        if number is None:
            raise where.error(f"expected an integer, got {text!r}", column, "metadata_type")
        return number
    if declared == "float":
        return _as_float(text, where, column)
    return text


def _as_float(text: str, where: _Where, column: str) -> float:
    """A finite number: NaN and infinity are not values a slice or a mean can use."""
    try:
        number = float(text)
    except ValueError as exc:
        raise where.error(f"expected a number, got {text!r}", column, "metadata_type") from exc
    if not math.isfinite(number):
        raise where.error(
            f"expected a finite number, got {text!r}; leave the row out (rows.invalid: drop) or "
            "fix the cell",
            column,
            "metadata_type",
        )
    return number


def _as_bool(value: Any, where: _Where, column: str) -> bool:
    if isinstance(value, bool):
        return value
    parsed = _BOOL_TEXT.get(str(value).strip().lower()) if value is not None else None
    if parsed is None:
        raise where.error(f"expected True/False, got {value!r}", column, "metadata_type")
    return parsed


def _meta_value(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value


def items_frame(items: list[McqItem]) -> pd.DataFrame:
    """One row per item and language: the shape dataset invariants are checked on.

    ``answer`` is the first-listed gold (the one position checks use); ``answers`` lists all.
    """
    rows = [
        {
            "item_id": i.id,
            "language": i.language,
            "question": i.question,
            "options": json.dumps(list(i.options), ensure_ascii=False),
            "n_options": len(i.options),
            "answer": i.answer_letter,
            "answers": i.gold_letters,
            **i.metadata,
        }
        for i in items
    ]
    return pd.DataFrame(rows)
