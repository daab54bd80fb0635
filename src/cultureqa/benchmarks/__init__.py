"""Declarative multiple-choice benchmarks: a YAML spec plus a column mapping, no code."""

from cultureqa.benchmarks.load import load_items, load_source_frame
from cultureqa.benchmarks.spec import BenchmarkSpec, ColumnMap, LanguageColumns, SourceSpec

__all__ = [
    "BenchmarkSpec",
    "ColumnMap",
    "LanguageColumns",
    "SourceSpec",
    "load_items",
    "load_source_frame",
]
