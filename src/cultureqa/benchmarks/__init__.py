"""Declarative multiple-choice benchmarks: a YAML spec plus a column mapping, no code.

The loader (``load_benchmark``, ``LoadedSource``) is imported on first use: it reads sources
through pandas, and a stage that finds its benchmark's load stored never needs it.
"""

from typing import Any

from cultureqa.benchmarks.spec import BenchmarkSpec, ColumnMap, LanguageColumns, SourceSpec

__all__ = [
    "BenchmarkSpec",
    "ColumnMap",
    "LanguageColumns",
    "LoadedSource",
    "SourceSpec",
    "load_benchmark",
]


def __getattr__(name: str) -> Any:
    if name in ("LoadedSource", "load_benchmark"):
        from cultureqa.benchmarks import load

        return getattr(load, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
