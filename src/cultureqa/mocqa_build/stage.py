"""What every ID-MoCQA stage returns, and the counts JSON it writes under ``metrics/mocqa/``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cultureqa.mocqa_shared.schema import empty_removed


@dataclass
class StageResult:
    """Rows that go on, rows removed (with reasons), counts, and any side tables."""

    frame: pd.DataFrame
    removed: pd.DataFrame = field(default_factory=empty_removed)
    metrics: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Extra artifacts (judge records, repairs), written beside the main output."""


def stage_metrics(
    stage: str, n_input: int, kept: pd.DataFrame, removed: pd.DataFrame, **extra: Any
) -> dict[str, Any]:
    """Counts kept/removed with reasons, plus kept rows per clue type × language.

    Args:
        stage: Stage name (``expand``, ``judge``, …).
        n_input: Rows the stage was asked to process (attempted variants for expand).
        kept: Output rows.
        removed: Removal records (``reason`` column).
        extra: Stage-specific counts merged into the result.
    """
    reasons = Counter(str(r) for r in removed["reason"]) if len(removed) else Counter()
    by_cell: dict[str, int] = {}
    if len(kept) and {"clue_type", "language"} <= set(kept.columns):
        counts = kept.groupby(["clue_type", "language"]).size()
        by_cell = {f"{c}.{lang}": int(n) for (c, lang), n in counts.items()}
    return {
        "stage": stage,
        "input": int(n_input),
        "kept": len(kept),
        "removed": len(removed),
        "removed_by_reason": dict(sorted(reasons.items())),
        "removed_by_reason_clue_type_language": _removed_cells(removed),
        "kept_by_clue_type_language": by_cell,
        **extra,
    }


def _removed_cells(removed: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Removals per reason, then per ``clue_type.language`` (the clue type ends the pair id)."""
    if not len(removed) or not {"pair_id", "language"} <= set(removed.columns):
        return {}
    out: dict[str, dict[str, int]] = {}
    for row in removed.itertuples():
        cell = f"{str(row.pair_id).rsplit('.', 1)[-1]}.{row.language}"
        bucket = out.setdefault(str(row.reason), {})
        bucket[cell] = bucket.get(cell, 0) + 1
    return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}


def required(section: Mapping[str, Any], key: str, name: str) -> Any:
    """``section[key]``; its default lives once, in conf/, so absence is a stale params file.

    Args:
        section: One params mapping (``mocqa``, ``generator``, ``judge``, or the root).
        key: The key the stage needs.
        name: The section's dotted path, for the error (empty for the root).
    """
    if key not in section:
        full = f"{name}.{key}" if name else key
        raise ValueError(f"params: missing key '{full}' that conf/ defines: run `make params`")
    return section[key]
