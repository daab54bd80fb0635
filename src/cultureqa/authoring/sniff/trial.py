"""Load the sampled rows through the proposed config before writing anything.

A proposal that reads its own sample badly is wrong however plausible it looks; the trial says
how many sampled rows became items and why the others did not, and picks the fixture's rows from
the ones that did (so the contract test runs on rows the config reads).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import pandas as pd

from cultureqa.benchmarks.load import LoadCounts, TooManyInvalid, load_benchmark
from cultureqa.benchmarks.spec import BenchmarkSpec, SampleSpec
from cultureqa.core.io import SourceError


@dataclass(frozen=True)
class Trial:
    """Sampled rows the filter keeps, those that load, and the counts of the rest by reason."""

    rows: pd.DataFrame
    """The sampled rows that became items (with ``_file`` and ``_row``)."""
    kept: int
    skipped: int
    dropped: dict[str, int]
    """Invalid rows by reason (a repeated item is not invalid: see ``repeats``)."""
    repeats: int = 0
    """Sampled rows repeating an earlier item's question and options."""
    blank: int = 0
    """Sampled rows with no value in any column (separator lines), left out and counted."""

    def note(self) -> str:
        """One line for the user: what the proposal made of the sample."""
        line = f"trial load: {len(self.rows)} of {self.kept} sampled rows become items"
        if self.skipped:
            line += f" ({self.skipped} more skipped by rows.keep)"
        if self.blank:
            line += f"; {self.blank} blank rows (separator lines) skipped and counted"
        if self.dropped:
            reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.dropped.items()))
            line += f"; not loadable: {reasons} (docs/benchmark-configs.md: Rows)"
        if self.repeats:
            line += f"; {self.repeats} repeat an earlier item"
        return line


def trial_load(spec: BenchmarkSpec, frame: pd.DataFrame, origin: str) -> Trial:
    """Load ``frame`` through ``spec`` with every invalid row dropped and counted."""
    lenient = replace(
        spec,
        rows=replace(spec.rows, invalid="drop", max_invalid_share=0.999, duplicates="drop"),
        sample=SampleSpec(),
    )
    try:
        loaded = load_benchmark(lenient, rows=(frame, origin))
    except SourceError as exc:
        counts = exc.counts if isinstance(exc, TooManyInvalid) else LoadCounts()
        raise SourceError(origin, _unread(len(frame), counts, str(exc))) from exc
    counts = loaded.counts
    kept = counts.rows_read - counts.skipped - counts.blank
    dropped = counts.dropped_by_reason()
    repeats = dropped.pop("duplicate_item", 0)
    return Trial(loaded.source, kept, counts.skipped, dropped, repeats, counts.blank)


def _unread(rows: int, counts: LoadCounts, error: str) -> str:
    """The refusal: which field of the proposal ``add`` could not make read the rows.

    Every sampled row failing one way is the proposal's fault, not the rows', so the line names
    the field and the first failure and never asks the user to fix the rows.
    """
    if counts.dropped:
        column = Counter(d.column for d in counts.dropped).most_common(1)[0][0]
        first = next(d for d in counts.dropped if d.column == column)
        what = (f"'{column}' fails on {sum(d.column == column for d in counts.dropped)} of "
                f"{rows} (first, row {first.row}: {first.message})")  # fmt: skip
        decide = f"add could not tell how to read '{column}'"
    else:
        what, decide = error, "add could not tell how to read them"
    return (f"the proposed config reads none of the {rows} sampled rows: {what}; {decide}: write "
            "conf/benchmark/<name>.yaml by hand (docs/adding-a-benchmark.md)")  # fmt: skip
