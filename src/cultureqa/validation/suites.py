"""Run a GX suite stored as JSON in ``expectations/`` over a DataFrame; summarize readably.

GX reports a crashing expectation as a plain failure; :func:`run_suite` surfaces those crashes
separately so a broken check is never mistaken for broken data.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass
class SuiteReport:
    """Outcome of one suite run, JSON-serialisable for ``metrics/``."""

    suite: str
    success: bool
    evaluated: int
    failures: list[dict[str, Any]] = field(default_factory=list)
    crashes: list[dict[str, Any]] = field(default_factory=list)

    def message(self) -> str:
        """One readable paragraph per failed or crashed expectation."""
        lines = [f"suite '{self.suite}': {len(self.failures)} of {self.evaluated} failed"]
        for f in self.failures:
            lines.append(f"  - {f['expectation']}({f['column']}): {f['detail']}")
        for c in self.crashes:
            lines.append(f"  - CRASHED {c['expectation']}({c['column']}): {c['detail']}")
        return "\n".join(lines)


def run_suite(suite_path: Path, frame: pd.DataFrame) -> SuiteReport:
    """Validate ``frame`` against the suite JSON at ``suite_path``."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # Importing registers the custom expectation types (generic, and the MCQ invariants).
    import cultureqa.validation.expectations
    import cultureqa.validation.mcq_expectations  # noqa: F401

    spec = json.loads(suite_path.read_text(encoding="utf-8"))
    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    suite = ctx.suites.add(gx.ExpectationSuite(**spec))
    batch = (
        ctx.data_sources.add_pandas("cultureqa")
        .add_dataframe_asset("items")
        .add_batch_definition_whole_dataframe("all")
    )
    definition = ctx.validation_definitions.add(
        gx.ValidationDefinition(name=f"{suite.name}_vd", data=batch, suite=suite)
    )
    result = definition.run(batch_parameters={"dataframe": frame}, result_format="SUMMARY")
    report = SuiteReport(
        suite=suite.name, success=bool(result.success), evaluated=len(result.results)
    )
    for r in result.results:
        config = r.expectation_config
        assert config is not None, "GX returned a result without its expectation"
        entry = {
            "expectation": config.type,
            "column": config.kwargs.get("column", ""),
            "detail": _detail(r.result),
        }
        if r.exception_info and r.exception_info.get("raised_exception"):
            entry["detail"] = str(r.exception_info.get("exception_message"))
            report.crashes.append(entry)
        elif not r.success:
            report.failures.append(entry)
    return report


def _detail(result: dict[str, Any]) -> str:
    if "details" in result:
        return json.dumps(
            {"observed": result.get("observed_value"), **result["details"]}, default=str
        )
    parts = []
    for key in ("observed_value", "unexpected_count", "partial_unexpected_list"):
        if key in result and result[key] not in (None, []):
            parts.append(f"{key}={result[key]!r}"[:300])
    return "; ".join(parts) or json.dumps(result, default=str)[:300]
