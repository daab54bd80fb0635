"""Custom GX expectations for the cross-cultural scenario dataset (DESIGN.md §8).

* every country has all five WEIRD dimensions (one line per incomplete country);
* ``weird_bin == floor(weird_score)``;
* the continent is the one the geography map gives the country (continent correction held);
* every item's letter → type map holds each letter and each type A–F exactly once;
* every item's answer letter maps to the correct type F.

The item checks report the offending case ids with a reason ("type C twice, D missing"), because
a bare "3 unexpected values" sends the reader back into the parquet file. Import this module
before loading ``expectations/cases_*.json``: GX resolves expectation classes from a registry
keyed by their snake_case names. Uniform answer positions reuse
``expect_column_value_shares_to_be_uniform`` from :mod:`cultureqa.validation.expectations`.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

import pandas as pd
from great_expectations.expectations.expectation import BatchExpectation, ColumnPairMapExpectation

import cultureqa.validation.expectations  # noqa: F401 - the uniform-shares expectation
from cultureqa.cases.geography import UnknownCountryError, continent_of
from cultureqa.validation.gx_kit import pair_condition, table_metric

_SHOWN = 10
"""Problems listed in a result; the count always covers all of them."""


def incomplete_keys(frame: pd.DataFrame, key_column: str, columns: list[str]) -> dict[str, str]:
    """Key → the columns it lacks, for every key with a missing value in any of ``columns``."""
    missing = frame[columns].isna()
    lacking: dict[str, set[str]] = {}
    for index in frame.index[missing.any(axis=1)]:
        key = str(frame.at[index, key_column])
        lacking.setdefault(key, set()).update(c for c in columns if missing.at[index, c])
    return {key: ", ".join(c for c in columns if c in cols) for key, cols in lacking.items()}


def type_map_problem(value: object, letters: list[str], types: list[str]) -> str:
    """Why a letter → type map is broken ("" when it holds each letter and type once)."""
    try:
        mapping = json.loads(str(value))
    except json.JSONDecodeError:
        return "not a JSON object"
    if not isinstance(mapping, dict):
        return "not a JSON object"
    problems = []
    if sorted(map(str, mapping)) != sorted(letters):
        problems.append(f"letters {sorted(map(str, mapping))} instead of {letters}")
    counts = Counter(str(v) for v in mapping.values())
    problems += [f"type {t} {n} times" for t, n in sorted(counts.items()) if n > 1]
    problems += [f"type {t} missing" for t in types if t not in counts]
    problems += [f"unknown type {t}" for t in sorted(counts) if t not in types]
    return "; ".join(problems)


def answer_problem(answer: object, value: object, correct_type: str) -> str:
    """Why an answer letter does not point at the correct type ("" when it does)."""
    try:
        mapping = json.loads(str(value))
    except json.JSONDecodeError:
        return "letter_types is not JSON"
    found = mapping.get(str(answer)) if isinstance(mapping, dict) else None
    if found == correct_type:
        return ""
    return f"answer {answer} maps to type {found}, not {correct_type}"


def keyed_problems(
    frame: pd.DataFrame, key_column: str, check: Callable[[dict[str, Any]], str]
) -> dict[str, str]:
    """Key → reason for every row ``check`` finds a problem with."""
    found = {str(r[key_column]): check(r) for r in frame.to_dict("records")}
    return {k: v for k, v in found.items() if v}


table_metric(
    "table.cases_incomplete_keys",
    lambda frame, key_column, columns: incomplete_keys(frame, str(key_column), list(columns)),
    ("key_column", "columns"),
)
table_metric(
    "table.cases_type_map_problems",
    lambda frame, key_column, map_column, letters, types: keyed_problems(
        frame,
        str(key_column),
        lambda r: type_map_problem(r[str(map_column)], list(letters), list(types)),
    ),
    ("key_column", "map_column", "letters", "types"),
)
table_metric(
    "table.cases_answer_type_problems",
    lambda frame, key_column, answer_column, map_column, correct_type: keyed_problems(
        frame,
        str(key_column),
        lambda r: answer_problem(r[str(answer_column)], r[str(map_column)], str(correct_type)),
    ),
    ("key_column", "answer_column", "map_column", "correct_type"),
)


def _keyed_result(problems: dict[str, str], what: str, total: int) -> dict[str, Any]:
    shown = dict(list(sorted(problems.items()))[:_SHOWN])
    return {
        "success": not problems,
        "result": {
            "observed_value": f"{len(problems)} of {total} {what}",
            "details": {"problems": shown, "n_problems": len(problems)},
        },
    }


class _KeyedExpectation(BatchExpectation):  # type: ignore[misc]
    """Shared shape: one table metric returning ``key → reason``; success iff it is empty."""

    key_column: str = "case_id"
    what: ClassVar[str] = "rows break the rule"

    def _validate(
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        problems = metrics[self.metric_dependencies[0]]
        total = metrics.get("table.row_count")
        return _keyed_result(problems, self.what, int(total) if total is not None else 0)

    def get_validation_dependencies(
        self, execution_engine: Any = None, runtime_configuration: Any = None
    ) -> Any:
        """Add the row count, so the message can say "k of n"."""
        from great_expectations.validator.metric_configuration import MetricConfiguration

        deps = super().get_validation_dependencies(execution_engine, runtime_configuration)
        domain = self.configuration.get_domain_kwargs()
        deps.set_metric_configuration(
            "table.row_count", MetricConfiguration("table.row_count", domain, {})
        )
        return deps


class ExpectKeysToHaveCompleteValues(_KeyedExpectation):
    """Every key (e.g. country) has a value in each of ``columns`` (e.g. W, E, I, R, D)."""

    columns: list[str]
    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.cases_incomplete_keys",)
    success_keys: ClassVar[tuple[str, ...]] = ("key_column", "columns")
    what: ClassVar[str] = "rows are incomplete (key: missing columns)"


class ExpectLetterTypeMapsToBeComplete(_KeyedExpectation):
    """Each row's letter → type map holds every letter and every type exactly once."""

    map_column: str = "letter_types"
    letters: list[str]
    types: list[str]
    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.cases_type_map_problems",)
    success_keys: ClassVar[tuple[str, ...]] = ("key_column", "map_column", "letters", "types")
    what: ClassVar[str] = "items have a broken letter → type map"


class ExpectAnswerToMapToCorrectType(_KeyedExpectation):
    """Each row's answer letter holds ``correct_type`` in its letter → type map."""

    answer_column: str = "answer"
    map_column: str = "letter_types"
    correct_type: str = "F"
    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.cases_answer_type_problems",)
    success_keys: ClassVar[tuple[str, ...]] = (
        "key_column", "answer_column", "map_column", "correct_type",
    )  # fmt: skip
    what: ClassVar[str] = "answers do not map to the correct type"


def _continent_matches(continent: object, country: object) -> bool:
    try:
        return continent_of(str(country)) == str(continent)
    except UnknownCountryError:
        return False


def _is_floor(bin_value: Any, score: Any) -> bool:
    try:
        return bool(int(bin_value) == math.floor(float(score)))
    except (TypeError, ValueError):
        return False


pair_condition("column_pair_values.cases_bin_is_floor", _is_floor)


class ExpectColumnPairBinToBeFloorOfScore(ColumnPairMapExpectation):  # type: ignore[misc]
    """``column_A == floor(column_B)`` on every row (WEIRD bin against WEIRD score)."""

    ignore_row_if: str = "either_value_is_missing"
    map_metric: ClassVar[str] = "column_pair_values.cases_bin_is_floor"
    success_keys: ClassVar[tuple[str, ...]] = ("ignore_row_if", "mostly")


pair_condition("column_pair_values.cases_continent_of_country", _continent_matches)


class ExpectContinentToMatchCountry(ColumnPairMapExpectation):  # type: ignore[misc]
    """The continent column holds the geography map's continent of the country column."""

    ignore_row_if: str = "both_values_are_missing"
    map_metric: ClassVar[str] = "column_pair_values.cases_continent_of_country"
    success_keys: ClassVar[tuple[str, ...]] = ("ignore_row_if", "mostly")
