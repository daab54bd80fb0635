"""Custom Great Expectations expectations for dataset invariants GX has no built-in for.

Import this module before loading suites that reference these types: GX resolves expectation
classes from a registry keyed by their snake_case name.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from great_expectations.expectations.expectation import ColumnAggregateExpectation
from great_expectations.expectations.expectation_configuration import ExpectationConfiguration
from great_expectations.validator.metric_configuration import MetricConfiguration
from scipy.stats import chisquare


class ExpectColumnValueSharesToBeUniform(ColumnAggregateExpectation):  # type: ignore[misc]
    """Each value of ``value_set`` holds about 1/k of the rows (e.g. gold option positions).

    The decision is on the effect: the largest deviation of a value's share from 1/k must be at
    most ``tolerance`` (and no value outside the set may occur). A significance test cannot
    decide it: at 100,000 rows a chi-square test rejects a file 0.76 points from uniform that no
    model could exploit, while at 100 rows it passes real skew. The chi-square statistic and its
    p-value are reported beside the effect (``alpha`` only labels whether it would reject).
    """

    value_set: list[Any]
    tolerance: float = 0.1
    alpha: float = 0.01
    metric_dependencies: ClassVar[tuple[str, ...]] = ("column.value_counts",)
    success_keys: ClassVar[tuple[str, ...]] = ("value_set", "tolerance")

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
        details = share_deviation(counts, [str(v) for v in self.value_set], self.alpha)
        success = not details["unexpected_values"] and details["rows"] > 0
        floor = rounding_floor([details["rows"] / len(self.value_set)] * len(self.value_set))
        details["rounding_floor"] = round(floor, 4)
        success = success and details["max_deviation"] <= max(self.tolerance, floor) + 1e-9
        details["tolerance"] = self.tolerance
        details["summary"] = _summary(details, len(self.value_set))
        result = {"observed_value": details["shares"], "details": details}
        return {"success": success, "result": result}


def _summary(details: dict[str, Any], k: int) -> str:
    """One readable clause: the effect against its tolerance, counts, then the test."""
    outside = details["unexpected_values"]
    return (
        f"max deviation of a share from 1/{k}: {details['max_deviation']:.4f} "
        f"(tolerance {details['tolerance']}) over {details['rows']} rows (closest split whole "
        f"counts allow: {details['rounding_floor']}); counts "
        f"{details['counts']}; chi-square {details['chi_square']} "
        f"(p={details['chi_square_p_value']:.3g}, reported, not decisive)"
        + (f"; values outside the set {outside}" if outside else "")
    )


def rounding_floor(expected_counts: list[float]) -> float:
    """Smallest max deviation of a share that whole counts can reach (largest-remainder rounding).

    Five items over three letters cannot be closer to uniform than 2/2/1 (0.133 from 1/3), so a
    tolerance below that would reject every small file; the check allows
    ``max(tolerance, rounding_floor)`` and reports both.
    """
    n = round(sum(expected_counts))
    if n <= 0:
        return 0.0
    counts = [math.floor(e) for e in expected_counts]
    by_remainder = sorted(
        range(len(counts)), key=lambda j: expected_counts[j] - counts[j], reverse=True
    )
    for j in by_remainder[: n - sum(counts)]:
        counts[j] += 1
    return max(abs(c - e) for c, e in zip(counts, expected_counts, strict=True)) / n


def share_deviation(counts: dict[str, int], expected: list[str], alpha: float) -> dict[str, Any]:
    """Shares of ``expected`` values, their largest deviation from 1/k, and a chi-square test.

    Values outside ``expected`` count towards the rows (their share is missing from the set).
    """
    total = sum(counts.values())
    observed = [counts.get(v, 0) for v in expected]
    shares = {v: (c / total if total else 0.0) for v, c in zip(expected, observed, strict=True)}
    k = len(expected)
    max_dev = max(abs(s - 1 / k) for s in shares.values()) if total and k else 1.0
    test = chisquare(observed) if sum(observed) else None
    p_value = float(test.pvalue) if test is not None else 0.0
    return {
        "rows": total,
        "counts": dict(zip(expected, observed, strict=True)),
        "shares": {v: round(s, 4) for v, s in shares.items()},
        "unexpected_values": sorted(set(counts) - set(expected)),
        "max_deviation": round(max_dev, 4),
        "chi_square": round(float(test.statistic), 3) if test is not None else None,
        "chi_square_p_value": p_value,
        "chi_square_rejects_at_alpha": p_value < alpha,
        "alpha": alpha,
    }


__all__ = ["ExpectColumnValueSharesToBeUniform", "ExpectationConfiguration"]
