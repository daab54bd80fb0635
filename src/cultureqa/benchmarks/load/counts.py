"""Each source row's fate, counted once: read, then skipped, dropped (with its reason) or loaded.

A researcher must be able to account for every row of a published file: ``rows_read`` equals
``rows_skipped + rows_blank + rows_dropped + rows_loaded`` in every record the loader writes, and
:meth:`LoadCounts.balanced` is asserted at the end of each load so a path that loses rows fails
loudly instead of shrinking a benchmark in silence.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.io import SourceError

SHOWN_DROPS = 50
"""Dropped rows listed one by one in reports; the counts by reason always cover all of them."""


class RowError(SourceError):
    """One source row cannot become an item; ``reason`` is a stable code for counting drops."""

    def __init__(self, path: str, message: str, row: int, column: str | None, reason: str) -> None:
        super().__init__(path, message, row=row, column=column)
        self.reason = reason
        self.message = message


class TooManyInvalid(SourceError):
    """More invalid rows than ``rows.max_invalid_share`` allows.

    It carries the counts for callers that explain the failure: ``benchmark add`` names the
    field every sampled row failed on.
    """

    def __init__(self, path: str, message: str, counts: LoadCounts) -> None:
        super().__init__(path, message)
        self.counts = counts


@dataclass(frozen=True)
class Where:
    """The file and data row a mapped value comes from (named by every row error)."""

    file: str
    row: int

    def error(self, message: str, column: str | None, reason: str) -> RowError:
        """A row error at this place."""
        return RowError(self.file, message, self.row, column, reason)


@dataclass(frozen=True)
class Drop:
    """A row the row policy left out, with where it is and why."""

    file: str
    row: int
    item_id: str
    reason: str
    column: str | None
    message: str

    @property
    def in_column(self) -> str:
        """``, column 'Ans'``; nothing for a row as a whole (a blank row)."""
        return f", column '{self.column}'" if self.column is not None else ""


@dataclass
class LoadCounts:
    """Repairs, skips and drops while loading, reported by ``validate``, ``evaluate``, ingest."""

    labels_stripped: int = 0
    labels_reordered: int = 0
    rows_read: int = 0
    skipped: int = 0
    """Rows the declared ``rows.keep`` filter left out (not invalid: not wanted)."""
    blank: int = 0
    """Rows with no value in any column (separator lines): never items, and not invalid either,
    so they neither stop a load nor count toward ``rows.max_invalid_share``."""
    loaded: int = 0
    """Rows that became items (one item per language the load asked for)."""
    dropped: list[Drop] = field(default_factory=list)
    multi_gold: int = 0
    """Items with several right answers."""
    shuffled: int = 0
    """Rows whose options ``columns.options.shuffle`` reordered (the gold re-pointed)."""
    option_counts: dict[int, int] = field(default_factory=dict)
    case_only_options: int = 0
    """Items with two options that differ only in case (kept: ``GG``/``gg`` are two answers)."""
    languages: dict[str, int] = field(default_factory=dict)
    """Loaded rows per item language (one row, one language when the language is per row)."""
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, what: str, item_id: str) -> None:
        """Remember up to five example ids per kind of change."""
        shown = self.examples.setdefault(what, [])
        if len(shown) < 5:
            shown.append(item_id)

    def dropped_by_reason(self) -> dict[str, int]:
        """Drop count per reason code, sorted by reason."""
        return dict(sorted(Counter(d.reason for d in self.dropped).items()))

    def balanced(self) -> bool:
        """Whether every row read is counted exactly once (skipped, dropped or loaded)."""
        return self.rows_read == self.skipped + self.blank + len(self.dropped) + self.loaded

    def record(self) -> dict[str, Any]:
        """JSON-ready summary for metrics, the run record and MLflow (first drops listed)."""
        return {
            "rows_read": self.rows_read,
            "rows_skipped": self.skipped,
            "rows_blank": self.blank,
            "rows_dropped": len(self.dropped),
            "rows_loaded": self.loaded,
            "dropped_by_reason": self.dropped_by_reason(),
            "dropped": [asdict(d) for d in self.dropped[:SHOWN_DROPS]],
            "labels_stripped": self.labels_stripped,
            "labels_reordered": self.labels_reordered,
            "options_shuffled": self.shuffled,
            "multi_gold_items": self.multi_gold,
            "option_counts": {str(k): v for k, v in sorted(self.option_counts.items())},
            "options_differing_only_in_case": self.case_only_options,
            "items_by_language": dict(sorted(self.languages.items())),
            "examples": self.examples,
        }


@dataclass
class RowChanges:
    """What mapping one row changed; merged into :class:`LoadCounts` only if the row is kept."""

    labels_stripped: bool = False
    labels_reordered: bool = False
    multi_gold: bool = False
    shuffled: bool = False
    case_only: bool = False
    option_count: int | None = None

    def merge_into(self, counts: LoadCounts, item_id: str) -> None:
        """Count the row once, whatever number of languages it was mapped in."""
        if self.case_only:
            counts.case_only_options += 1
            counts.note("case_only_options", item_id)
        for what in ("labels_stripped", "labels_reordered", "multi_gold", "shuffled"):
            if getattr(self, what):
                setattr(counts, what, getattr(counts, what) + 1)
                counts.note(what, item_id)
        if self.option_count is not None:
            counts.option_counts[self.option_count] = (
                counts.option_counts.get(self.option_count, 0) + 1
            )


def drop_or_raise(spec: BenchmarkSpec, counts: LoadCounts, exc: RowError, item_id: str) -> None:
    """The row policy: an invalid row stops the load (``error``) or is dropped and listed."""
    if exc.reason == "duplicate_item" and spec.rows.duplicates == "drop":
        counts.dropped.append(Drop(exc.path, exc.row or 0, item_id, exc.reason, exc.column,
                                   exc.message))  # fmt: skip
        return
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


def check_drop_share(spec: BenchmarkSpec, counts: LoadCounts, rows: int, origin: str) -> None:
    """More invalid rows than ``rows.max_invalid_share`` of the kept rows: the source is unusable.

    Repeated items dropped under ``rows.duplicates: drop`` are counted and listed but are not
    invalid rows, so they do not count toward the share.
    """
    invalid = [d for d in counts.dropped if d.reason != "duplicate_item"]
    limit = spec.rows.max_invalid_share
    if not invalid or len(invalid) <= limit * rows:
        return
    first = invalid[0]
    reasons = dict(sorted(Counter(d.reason for d in invalid).items()))
    raise TooManyInvalid(
        origin,
        f"{len(invalid)} of {rows} rows ({len(invalid) / rows:.1%}) are invalid, more than "
        f"rows.max_invalid_share {limit:.0%} allows; by reason {reasons}; "
        f"first: {first.file}, row {first.row}{first.in_column}: {first.message}; fix "
        "the rows, narrow rows.keep, or raise rows.max_invalid_share",
        counts,
    )
