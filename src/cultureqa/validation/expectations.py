"""Custom Great Expectations expectations for dataset invariants GX has no built-in for.

Import this module before loading suites that reference these types: GX resolves expectation
classes from a registry keyed by their snake_case name.
"""

from __future__ import annotations

from typing import Any, ClassVar

from great_expectations.expectations.expectation import ColumnAggregateExpectation
from great_expectations.expectations.expectation_configuration import ExpectationConfiguration
from great_expectations.validator.metric_configuration import MetricConfiguration
from scipy.stats import chisquare


class ExpectColumnValueSharesToBeUniform(ColumnAggregateExpectation):  # type: ignore[misc]
    """Each value of ``value_set`` holds about 1/k of the rows (e.g. gold option positions).

    Two checks, both required: every share is within ``tolerance`` of 1/k, and a chi-square
    goodness-of-fit test against uniform does not reject at ``alpha``. Values outside the set fail.
    """

    value_set: list[Any]
    tolerance: float = 0.1
    alpha: float = 0.01
    metric_dependencies: ClassVar[tuple[str, ...]] = ("column.value_counts",)
    success_keys: ClassVar[tuple[str, ...]] = ("value_set", "tolerance", "alpha")

    def get_validation_dependencies(
        self, execution_engine: Any = None, runtime_configuration: Any = None
    ) -> Any:
        """Ask GX for the column's value counts."""
        deps = super().get_validation_dependencies(execution_engine, runtime_configuration)
        config = self.configuration
        deps.set_metric_configuration(
            "column.value_counts",
            MetricConfiguration(
                "column.value_counts", config.get_domain_kwargs(), {"sort": "value"}
            ),
        )
        return deps

    def _validate(
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        counts = {str(k): int(v) for k, v in metrics["column.value_counts"].items()}
        expected = [str(v) for v in self.value_set]
        total = sum(counts.values())
        observed = [counts.get(v, 0) for v in expected]
        shares = {v: (c / total if total else 0.0) for v, c in zip(expected, observed, strict=True)}
        extra = sorted(set(counts) - set(expected))
        k = len(expected)
        max_gap = max(abs(s - 1 / k) for s in shares.values()) if shares else 1.0
        p_value = float(chisquare(observed).pvalue) if total else 0.0
        success = not extra and total > 0 and max_gap <= self.tolerance and p_value >= self.alpha
        return {
            "success": success,
            "result": {
                "observed_value": shares,
                "details": {
                    "counts": dict(zip(expected, observed, strict=True)),
                    "unexpected_values": extra,
                    "max_gap_from_uniform": round(max_gap, 4),
                    "chi_square_p_value": p_value,
                    "tolerance": self.tolerance,
                    "alpha": self.alpha,
                },
            },
        }


__all__ = ["ExpectColumnValueSharesToBeUniform", "ExpectationConfiguration"]
