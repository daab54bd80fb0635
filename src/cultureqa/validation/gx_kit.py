"""GX metric providers built from plain functions, so each check is written once.

A custom GX expectation needs a metric provider class whose body is always the same: fetch the
batch (or two columns), call one function, return its value. Writing that class by hand for every
check repeated ~15 lines each time and hid the function that matters; here the function is the
only thing a module supplies. GX registers a provider when its class is created (its metaclass),
so building the class with ``type`` registers it exactly as a ``class`` statement would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.execution_engine.pandas_execution_engine import PandasExecutionEngine
from great_expectations.expectations.metrics.map_metric_provider.column_pair_condition_partial import (  # noqa: E501
    column_pair_condition_partial,
)
from great_expectations.expectations.metrics.map_metric_provider.column_pair_map_metric_provider import (  # noqa: E501
    ColumnPairMapMetricProvider,
)
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider

PAIR_DOMAIN = (
    "batch_id",
    "table",
    "column_A",
    "column_B",
    "row_condition",
    "condition_parser",
    "ignore_row_if",
)
"""Domain keys of a column-pair row condition (GX's own list for pair map metrics)."""


def _class_name(metric: str, prefix: str) -> str:
    return prefix + "".join(part.title() for part in metric.split(".")[-1].split("_"))


def table_metric(
    name: str, compute: Callable[..., Any], value_keys: tuple[str, ...] = ()
) -> type[TableMetricProvider]:
    """Register the table metric ``name`` as ``compute(frame, **{key: value for value_keys})``."""

    @metric_value(engine=PandasExecutionEngine)  # type: ignore[untyped-decorator]
    def _pandas(
        cls: Any,
        execution_engine: Any,
        metric_domain_kwargs: dict[str, Any],
        metric_value_kwargs: dict[str, Any],
        metrics: Any,
        runtime_configuration: Any,
    ) -> Any:
        frame, _, _ = execution_engine.get_compute_domain(
            metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE
        )
        return compute(frame, **{key: metric_value_kwargs[key] for key in value_keys})

    attrs = {
        "metric_name": name,
        "value_keys": value_keys,
        "_pandas": _pandas,
        "__doc__": f"Metric: {getattr(compute, '__name__', name)} over the whole batch.",
        "__module__": getattr(compute, "__module__", __name__),
    }
    return type(_class_name(name, "Table"), (TableMetricProvider,), attrs)


def pair_condition(
    name: str, holds: Callable[..., bool], value_keys: tuple[str, ...] = ()
) -> type[ColumnPairMapMetricProvider]:
    """Register the row condition ``name``: ``holds(a, b, **values)`` for each row's pair.

    Values named in ``value_keys`` are passed only when the expectation sets them, so the
    function's own defaults apply otherwise.
    """

    @column_pair_condition_partial(engine=PandasExecutionEngine)  # type: ignore[untyped-decorator]
    def _pandas(cls: Any, column_A: pd.Series, column_B: pd.Series, **kwargs: Any) -> pd.Series:
        values = {key: kwargs[key] for key in value_keys if kwargs.get(key) is not None}
        flags = [holds(a, b, **values) for a, b in zip(column_A, column_B, strict=True)]
        return pd.Series(flags, index=column_A.index, dtype=bool)

    attrs = {
        "condition_metric_name": name,
        "condition_domain_keys": PAIR_DOMAIN,
        "condition_value_keys": value_keys,
        "_pandas": _pandas,
        "__doc__": f"Row condition: {getattr(holds, '__name__', name)} holds for the pair.",
        "__module__": getattr(holds, "__module__", __name__),
    }
    return type(_class_name(name, "ColumnPair"), (ColumnPairMapMetricProvider,), attrs)
