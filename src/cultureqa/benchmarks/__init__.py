"""Declarative multiple-choice benchmarks: a YAML spec plus a column mapping, no code."""

from cultureqa.benchmarks.load import LoadedSource, load_benchmark
from cultureqa.benchmarks.spec import BenchmarkSpec, ColumnMap, LanguageColumns, SourceSpec

__all__ = [
    "BenchmarkSpec",
    "ColumnMap",
    "LanguageColumns",
    "LoadedSource",
    "SourceSpec",
    "load_benchmark",
]
