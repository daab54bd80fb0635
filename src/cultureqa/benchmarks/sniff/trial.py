"""Load the sampled rows through the proposed config before writing anything.

A proposal that reads its own sample badly is wrong however plausible it looks; the trial says
how many sampled rows became items and why the others did not, and picks the fixture's rows from
the ones that did (so the contract test runs on rows the config reads).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from cultureqa.benchmarks.load import load_benchmark
from cultureqa.benchmarks.spec import BenchmarkSpec, SampleSpec
from cultureqa.io import SourceError


@dataclass(frozen=True)
class Trial:
    """Sampled rows the filter keeps, those that load, and the counts of the rest by reason."""

    rows: pd.DataFrame
    """The sampled rows that became items (with ``_file`` and ``_row``)."""
    kept: int
    skipped: int
    dropped: dict[str, int]

    def note(self) -> str:
        """One line for the user: what the proposal made of the sample."""
        line = f"trial load: {len(self.rows)} of {self.kept} sampled rows become items"
        if self.skipped:
            line += f" ({self.skipped} more skipped by rows.keep)"
        if self.dropped:
            reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.dropped.items()))
            line += f"; not loadable: {reasons} (README: Rows)"
        return line


def trial_load(spec: BenchmarkSpec, frame: pd.DataFrame, origin: str) -> Trial:
    """Load ``frame`` through ``spec`` with every invalid row dropped and counted."""
    lenient = replace(
        spec,
        rows=replace(spec.rows, invalid="drop", max_invalid_share=0.999),
        sample=SampleSpec(),
    )
    try:
        loaded = load_benchmark(lenient, rows=(frame, origin))
    except SourceError as exc:
        raise SourceError(
            origin,
            f"the proposed config reads none of the {len(frame)} sampled rows ({exc}); "
            "write conf/benchmark/<name>.yaml by hand (README: Add a benchmark by config)",
        ) from exc
    counts = loaded.counts
    kept = counts.rows_read - counts.skipped
    return Trial(loaded.source, kept, counts.skipped, counts.dropped_by_reason())
