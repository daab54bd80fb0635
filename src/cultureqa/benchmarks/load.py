"""Turn any source table into :class:`McqItem` records through a spec's column mapping.

Errors name file, row (1-based data row) and column, because a researcher fixing a 5,000-row CSV
needs to know exactly where to look.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.io import SourceError, read_table
from cultureqa.records import LETTERS, McqItem

_LETTER_PREFIX = re.compile(r"^\s*\(?([A-J])[.)]\s+")
_BOOL_TEXT = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}


def load_source_frame(spec: BenchmarkSpec, root: Path | None = None) -> tuple[pd.DataFrame, str]:
    """Read the benchmark's source rows; returns the frame and a label naming where it came from."""
    if spec.source.kind == "hf":
        return _load_hf(spec), f"hf:{spec.source.hf_dataset}:{spec.source.hf_split}"
    assert spec.source.path is not None
    path = Path(spec.source.path)
    if root is not None and not path.is_absolute():
        path = root / path
    frame = read_table(path)
    return frame, str(spec.source.path)


def _load_hf(spec: BenchmarkSpec) -> pd.DataFrame:
    """Fetch a Hugging Face dataset (network); the result goes through the same mapping."""
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SourceError(
            f"hf:{spec.source.hf_dataset}",
            "the 'datasets' package is needed for Hugging Face sources: pip install datasets",
        ) from exc
    ds = datasets.load_dataset(
        spec.source.hf_dataset, spec.source.hf_config, split=spec.source.hf_split
    )
    return ds.to_pandas()


def load_items(
    spec: BenchmarkSpec,
    frame: pd.DataFrame,
    language: str,
    origin: str,
    region_normalizer: Callable[[str], str | None] | None = None,
) -> list[McqItem]:
    """Map rows to items in ``language``; raises :class:`SourceError` on the first bad cell."""
    over = spec.languages[language]
    cols = spec.columns
    question_col = over.question or cols.question
    options_spec = over.options or cols.options
    needed = {cols.id, question_col, cols.answer, *cols.metadata}
    needed |= {options_spec} if isinstance(options_spec, str) else set(options_spec)
    missing = sorted(c for c in needed if c not in frame.columns)
    if missing:
        raise SourceError(origin, f"missing column(s) {missing}; found {list(frame.columns)}")
    items: list[McqItem] = []
    seen: dict[str, int] = {}
    for pos, row in enumerate(frame.to_dict(orient="records"), start=1):
        item_id = _text(row[cols.id], origin, pos, cols.id)
        if item_id in seen:
            raise SourceError(
                origin,
                f"duplicate id '{item_id}' (first at row {seen[item_id]})",
                row=pos,
                column=cols.id,
            )
        seen[item_id] = pos
        if spec.filter_true and not _as_bool(row[spec.filter_true], origin, pos, spec.filter_true):
            continue
        options = _options(row, options_spec, origin, pos)
        answer = _answer_index(row[cols.answer], options, spec, origin, pos)
        metadata = {c: _meta_value(row[c]) for c in cols.metadata}
        region_col = spec.location.region_column
        if spec.normalize_region and region_col and region_normalizer is not None:
            canonical = region_normalizer(str(row[region_col]))
            if canonical is None:
                raise SourceError(
                    origin, f"unknown region '{row[region_col]}'", row=pos, column=region_col
                )
            metadata[region_col] = canonical
        question = _text(row[question_col], origin, pos, question_col)
        items.append(McqItem(item_id, question, options, answer, language, metadata))
    return items


def _text(value: Any, origin: str, row: int, column: str) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)) or str(value).strip() == "":
        raise SourceError(origin, "empty value", row=row, column=column)
    return str(value).strip()


def _options(row: dict[str, Any], spec: str | list[str], origin: str, pos: int) -> tuple[str, ...]:
    if isinstance(spec, list):
        raw: list[Any] = [_text(row[c], origin, pos, c) for c in spec]
        column = ",".join(spec)
    else:
        column = spec
        raw = _parse_list(row[spec], origin, pos, spec)
    if len(raw) < 2:
        raise SourceError(
            origin, f"need at least 2 options, got {len(raw)}", row=pos, column=column
        )
    options = tuple(_LETTER_PREFIX.sub("", str(o)).strip() for o in raw)
    if any(not o for o in options):
        raise SourceError(origin, "an option is empty", row=pos, column=column)
    return options


def _parse_list(value: Any, origin: str, pos: int, column: str) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value)
    if hasattr(value, "tolist"):
        return list(value.tolist())
    text = _text(value, origin, pos, column)
    for parse in (json.loads, ast.literal_eval):
        try:
            parsed = parse(text)
        except (ValueError, SyntaxError):
            continue
        if isinstance(parsed, list | tuple):
            return list(parsed)
    raise SourceError(
        origin, f"options are not a list literal: {text[:60]!r}", row=pos, column=column
    )


def _answer_index(
    value: Any, options: tuple[str, ...], spec: BenchmarkSpec, origin: str, pos: int
) -> int:
    column = spec.columns.answer
    text = _text(value, origin, pos, column)
    fmt = spec.columns.answer_format
    if fmt == "letter":
        letter = _LETTER_PREFIX.sub(r"\1", text + " ").strip().upper()[:1]
        index = LETTERS.find(letter) if letter else -1
    elif fmt == "index":
        index = int(text) if text.lstrip("-").isdigit() else -1
    else:
        index = options.index(text) if text in options else -1
    if not 0 <= index < len(options):
        raise SourceError(
            origin,
            f"answer {text!r} is not among the {len(options)} options",
            row=pos,
            column=column,
        )
    return index


def _as_bool(value: Any, origin: str, pos: int, column: str) -> bool:
    if isinstance(value, bool):
        return value
    parsed = _BOOL_TEXT.get(str(value).strip().lower())
    if parsed is None:
        raise SourceError(origin, f"expected True/False, got {value!r}", row=pos, column=column)
    return parsed


def _meta_value(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


def items_frame(items: list[McqItem]) -> pd.DataFrame:
    """One row per item and language: the shape dataset invariants are checked on."""
    rows = [
        {
            "item_id": i.id,
            "language": i.language,
            "question": i.question,
            "n_options": len(i.options),
            "answer": i.answer_letter,
            **i.metadata,
        }
        for i in items
    ]
    return pd.DataFrame(rows)
