"""Turn any source table into :class:`~cultureqa.core.records.McqItem` records: one public function.

:func:`load_benchmark` is the whole loader, one straight line over modules named by its steps:
read and keep (:mod:`cultureqa.benchmarks.sources`), map fields (:mod:`.mapping`), check the row
(:mod:`.options`, :mod:`.answers`), build the item (:mod:`.shuffle`), each row's fate counted once
(:mod:`.counts`). Errors name file, row (1-based data row of that file; the line of a JSONL file)
and column, because a researcher fixing a 5,000-row CSV needs to know exactly where to look.
"""

from cultureqa.benchmarks.load.answers import parse_letter
from cultureqa.benchmarks.load.counts import (
    SHOWN_DROPS,
    Drop,
    LoadCounts,
    RowError,
    TooManyInvalid,
)
from cultureqa.benchmarks.load.frame import items_frame
from cultureqa.benchmarks.load.options import label_order, split_label, strip_labels
from cultureqa.benchmarks.load.pipeline import LoadedSource, load_benchmark

__all__ = [
    "SHOWN_DROPS",
    "Drop",
    "LoadCounts",
    "LoadedSource",
    "RowError",
    "TooManyInvalid",
    "items_frame",
    "label_order",
    "load_benchmark",
    "parse_letter",
    "split_label",
    "strip_labels",
]
