"""Run a GX suite stored as JSON in ``expectations/`` over a DataFrame; summarize readably.

GX reports a crashing expectation as a plain failure; :func:`run_suite` surfaces those crashes
separately so a broken check is never mistaken for broken data. Every failed row-level expectation
lists the ids of its failing items (up to :data:`SHOWN`, with the offending value) and the
column(s) it checked, so a failure points at the rows rather than at a count.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.core.io import SourceError

SHOWN = 10
"""Failing item ids listed per expectation; the count always covers all of them."""

ID_COLUMNS = ("item_id", "case_id", "id")
"""Columns that identify a row, most specific first."""


@dataclass
class SuiteReport:
    """Outcome of one suite run, JSON-serialisable for ``metrics/``."""

    suite: str
    success: bool
    evaluated: int
    failures: list[dict[str, Any]] = field(default_factory=list)
    crashes: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    """Expectation type → its result details, passing ones included (e.g. gold balance facts)."""

    def message(self) -> str:
        """One readable paragraph per failed or crashed expectation."""
        lines = [f"suite '{self.suite}': {len(self.failures)} of {self.evaluated} failed"]
        for f in self.failures:
            lines.append(f"  - {f['expectation']}({f['column']}): {f['detail']}")
        for c in self.crashes:
            lines.append(f"  - CRASHED {c['expectation']}({c['column']}): {c['detail']}")
        return "\n".join(lines)


def load_suite(suite_path: Path, root: Path | None = None) -> dict[str, Any]:
    """The suite JSON at ``suite_path``, which must lie inside the project ``root`` when given.

    A suite is a declared input like a source: outside the project DVC would not track it, and
    a missing file or one that is not JSON is one error line naming the file, never a traceback.
    """
    resolved = suite_path.resolve()
    if root is not None and root.resolve() not in resolved.parents:
        raise SourceError(
            suite_path,
            f"expectations suite outside the project ({root.resolve()}); keep it under "
            "expectations/",
        )
    try:
        text = suite_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SourceError(
            suite_path, "expectations suite not found; check the expectations: path"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(suite_path, f"expectations suite cannot be read ({exc})") from None
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(
            suite_path,
            f"expectations suite is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
        ) from None
    if not isinstance(spec, dict) or "name" not in spec:
        raise SourceError(suite_path, "expectations suite must be a JSON object with a 'name'")
    return spec


def quiet_gx() -> None:
    """GX logs dozens of INFO lines per run (docs registration, an empty datasource list "[]").

    Its package logger is raised to WARNING before the import (import-time records), and again
    after it for the modules that set their own level to INFO when they load.
    """
    names = ["great_expectations"] + [
        name for name in logging.root.manager.loggerDict if name.startswith("great_expectations.")
    ]
    for name in names:
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.level, logging.WARNING))


def run_suite(
    suite_path: Path,
    frame: pd.DataFrame,
    overrides: dict[str, dict[str, Any]] | None = None,
    root: Path | None = None,
    keep: Callable[[dict[str, Any]], bool] | None = None,
) -> SuiteReport:
    """Validate ``frame`` against the suite JSON at ``suite_path`` (inside ``root``).

    ``overrides`` (expectation type → kwargs) adapts a shared suite to one benchmark's
    declarations, e.g. mixed option counts it declares; ``keep`` selects the expectations that
    apply (a shared suite's format-specific parts).
    """
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    spec = load_suite(suite_path, root)
    quiet_gx()
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    quiet_gx()  # after the import: GX sets its own loggers' levels when it loads
    from great_expectations.execution_engine import pandas_execution_engine

    # GX fingerprints every in-memory batch under 1 GB with pandas' hash_pandas_object, which
    # turns each Arrow string column into Python objects (540 MB for a million items) for a batch
    # marker that nothing here reads: the dataset's own md5 is in the run's provenance.
    pandas_execution_engine.HASH_THRESHOLD = 0

    # Importing registers the custom expectation types (generic, and the MCQ invariants).
    import cultureqa.validation.expectations
    import cultureqa.validation.mcq_expectations  # noqa: F401

    if keep is not None:
        spec["expectations"] = [e for e in spec.get("expectations", []) if keep(e)]
    for expectation in spec.get("expectations", []):
        expectation["kwargs"] = {
            **expectation.get("kwargs", {}),
            **(overrides or {}).get(expectation["type"], {}),
        }
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
    id_column = next((c for c in ID_COLUMNS if c in frame.columns), None)
    result_format: dict[str, Any] = {"result_format": "SUMMARY", "partial_unexpected_count": SHOWN}
    if id_column:
        names = [id_column] + (["language"] if "language" in frame.columns else [])
        result_format["unexpected_index_column_names"] = names
    result = definition.run(batch_parameters={"dataframe": frame}, result_format=result_format)
    report = SuiteReport(
        suite=suite.name, success=bool(result.success), evaluated=len(result.results)
    )
    for r in result.results:
        config = r.expectation_config
        assert config is not None, "GX returned a result without its expectation"
        items = failing_items(r.result, id_column)
        entry = {
            "expectation": config.type,
            "column": checked_columns(config.kwargs),
            "detail": _detail(r.result) + (f"; items: {', '.join(items)}" if items else ""),
            "items": items,
            "details": _jsonable(r.result.get("details")),
        }
        if isinstance(r.result.get("details"), dict):
            report.details[config.type] = entry["details"]
        if r.exception_info and r.exception_info.get("raised_exception"):
            entry["detail"] = str(r.exception_info.get("exception_message"))
            report.crashes.append(entry)
        elif not r.success:
            report.failures.append(entry)
    return report


def _jsonable(value: Any) -> Any:
    """GX result details as plain JSON values (numpy scalars and tuples become numbers, lists)."""
    return json.loads(json.dumps(value, default=str)) if value is not None else None


def checked_columns(kwargs: dict[str, Any]) -> str:
    """The column(s) an expectation checked, as the message names them."""
    if "column" in kwargs:
        return str(kwargs["column"])
    if "column_list" in kwargs:
        return ", ".join(map(str, kwargs["column_list"]))
    pair = [str(kwargs[k]) for k in ("column_A", "column_B") if k in kwargs]
    return ", ".join(pair)


def failing_items(result: dict[str, Any], id_column: str | None) -> list[str]:
    """Up to SHOWN failing item ids with their offending value (and language, if any)."""
    rows = result.get("partial_unexpected_index_list") or []
    out: list[str] = []
    for row in rows[:SHOWN]:
        if not isinstance(row, dict) or id_column is None:
            out.append(str(row))
            continue
        item = str(row.get(id_column))
        if row.get("language") is not None:
            item += f"/{row['language']}"
        values = {k: v for k, v in row.items() if k not in (id_column, "language")}
        shown = ", ".join(f"{k}={v!r}"[:80] for k, v in values.items())
        out.append(f"{item} ({shown})" if shown else item)
    return out


def _detail(result: dict[str, Any]) -> str:
    details = result.get("details")
    if isinstance(details, dict) and isinstance(details.get("summary"), str):
        return str(details["summary"])
    if "unexpected_count" in result and result.get("element_count"):
        return f"{result['unexpected_count']} of {result['element_count']} rows fail"
    if "details" in result:
        return json.dumps(
            {"observed": result.get("observed_value"), **result["details"]}, default=str
        )
    parts = []
    for key in ("observed_value", "unexpected_count"):
        if key in result and result[key] not in (None, []):
            parts.append(f"{key}={result[key]!r}"[:300])
    return "; ".join(parts) or json.dumps(result, default=str)[:300]
