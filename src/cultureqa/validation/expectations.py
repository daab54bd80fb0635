"""Custom Great Expectations expectations for dataset invariants GX has no built-in for.

Import this module before loading suites that reference these types: GX resolves expectation
classes from a registry keyed by their snake_case name.
"""

from __future__ import annotations

from typing import Any, ClassVar

from great_expectations.expectations.expectation import ColumnAggregateExpectation
from great_expectations.expectations.expectation_configuration import ExpectationConfiguration
from great_expectations.validator.metric_configuration import MetricConfiguration

from cultureqa.validation.balance import CONFIDENCE, balance, uniform_counts


class ExpectColumnValueSharesToBeUniform(ColumnAggregateExpectation):  # type: ignore[misc]
    """Each value of ``value_set`` holds about 1/k of the rows (e.g. gold option positions).

    Decided on evidence at the size the check sees (:mod:`cultureqa.validation.balance`): it fails
    only when the ``confidence`` lower bound on the largest gap between a value's share and 1/k
    exceeds ``tolerance`` (or a value outside the set occurs). A balanced file so passes at least
    ``confidence`` of the time at any size, all rows at one value fail from 20 rows up, and a
    100,000-row file 0.76 points from uniform passes though a chi-square test rejects it. The
    chi-square statistic and p-value are reported beside the decision (``alpha`` labels only
    whether it would reject).
    """

    value_set: list[Any]
    tolerance: float = 0.1
    confidence: float = CONFIDENCE
    alpha: float = 0.01
    metric_dependencies: ClassVar[tuple[str, ...]] = ("column.value_counts",)
    success_keys: ClassVar[tuple[str, ...]] = ("value_set", "tolerance", "confidence")

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
        details = share_deviation(
            counts, [str(v) for v in self.value_set], self.alpha, self.tolerance, self.confidence
        )
        details["summary"] = details["summary"].replace("values:", f"{self.column}:", 1)
        result = {"observed_value": details["shares"], "details": details}
        return {"success": bool(details["success"]), "result": result}


def share_deviation(
    counts: dict[str, int],
    expected: list[str],
    alpha: float,
    tolerance: float = 0.1,
    confidence: float = CONFIDENCE,
) -> dict[str, Any]:
    """Shares of ``expected`` values against 1/k: the gap, its bound, the verdict and chi-square.

    Values outside ``expected`` count towards the rows (their share is missing from the set).
    """
    rows = sum(counts.values())
    found = balance(counts, uniform_counts(expected, rows), tolerance, confidence)
    details = found.as_dict()
    p_value = found.chi_square_p_value
    details["summary"] = found.sentence("values")
    details["chi_square_rejects_at_alpha"] = p_value is not None and p_value < alpha
    details["alpha"] = alpha
    return details


__all__ = ["ExpectColumnValueSharesToBeUniform", "ExpectationConfiguration"]
