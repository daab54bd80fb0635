"""Custom GX expectations of the two-hop datasets' ID-MoCQA (``statement``) layout.

* language balance: every (source id, clue type) pair exists exactly once in every language;
* no option copying: no question contains an option whole or shares a long n-gram with it;
* option lists: exactly ``n`` distinct non-empty strings per row.

``expectations/twohop_dataset.json`` reads them (the ``statement`` part for the last two);
import this module before loading it: GX resolves expectation classes from a registry keyed by
their snake_case names. Uniform gold positions reuse ``expect_column_value_shares_to_be_uniform``
from :mod:`cultureqa.validation.expectations`; a question naming its own region is the shared
suite's leak check (:mod:`cultureqa.validation.twohop_expectations`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import pandas as pd
from great_expectations.execution_engine.pandas_execution_engine import PandasExecutionEngine
from great_expectations.expectations.expectation import (
    BatchExpectation,
    ColumnMapExpectation,
    ColumnPairMapExpectation,
)
from great_expectations.expectations.metrics.map_metric_provider.column_condition_partial import (
    column_condition_partial,
)
from great_expectations.expectations.metrics.map_metric_provider.column_map_metric_provider import (
    ColumnMapMetricProvider,
)

import cultureqa.validation.expectations  # noqa: F401 - the uniform-shares expectation
from cultureqa.mocqa_shared.schema import as_options
from cultureqa.mocqa_shared.textchecks import copied_option
from cultureqa.validation.gx_kit import pair_condition, table_metric


def language_gaps(
    frame: pd.DataFrame, pair_columns: list[str], language_column: str, languages: list[str]
) -> dict[str, Any]:
    """Pairs lacking a language, and pairs with a language more than once."""
    keys = frame[pair_columns].astype(str).agg("|".join, axis=1)
    counts = pd.crosstab(keys, frame[language_column].astype(str))
    counts = counts.reindex(columns=sorted(set(languages) | set(counts.columns)), fill_value=0)
    missing = [
        {"pair": k, "missing": [lang for lang in languages if row[lang] == 0]}
        for k, row in counts.iterrows()
        if any(row[lang] == 0 for lang in languages)
    ]
    repeated = [k for k, row in counts.iterrows() if any(row[lang] > 1 for lang in languages)]
    return {"n_pairs": len(counts), "missing": missing, "repeated": repeated}


table_metric(
    "table.mocqa_language_gaps", language_gaps, ("pair_columns", "language_column", "languages")
)


class ExpectPairsToExistInEveryLanguage(BatchExpectation):  # type: ignore[misc]
    """Every pair (e.g. source id × clue type) has exactly one row per language."""

    pair_columns: list[str]
    language_column: str = "language"
    languages: list[str]
    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.mocqa_language_gaps",)
    success_keys: ClassVar[tuple[str, ...]] = ("pair_columns", "language_column", "languages")

    def _validate(
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        gaps = metrics["table.mocqa_language_gaps"]
        success = not gaps["missing"] and not gaps["repeated"]
        return {
            "success": success,
            "result": {
                "observed_value": (
                    f"{len(gaps['missing'])} of {gaps['n_pairs']} pairs lack a language, "
                    f"{len(gaps['repeated'])} repeat one"
                ),
                "details": {"missing": gaps["missing"][:20], "repeated": gaps["repeated"][:20]},
            },
        }


def copies_no_option(text: object, options: object, n: int = 4) -> bool:
    """Whether ``text`` contains no option whole and shares no ``n``-token run with one."""
    return copied_option(str(text), as_options(options), int(n)) is None


pair_condition("column_pair_values.mocqa_no_option_copy", copies_no_option, ("n",))


class ExpectQuestionsToNotCopyOptions(ColumnPairMapExpectation):  # type: ignore[misc]
    """No question contains an option whole or shares an ``n``-token run with it."""

    n: int = 4
    ignore_row_if: str = "both_values_are_missing"
    map_metric: ClassVar[str] = "column_pair_values.mocqa_no_option_copy"
    success_keys: ClassVar[tuple[str, ...]] = ("n", "ignore_row_if", "mostly")


class ColumnValuesDistinctListOfN(ColumnMapMetricProvider):  # type: ignore[misc]
    """Row condition: the value is a list of exactly ``n`` distinct non-empty strings."""

    condition_metric_name = "column_values.mocqa_distinct_list_of_n"
    condition_value_keys = ("n",)

    @column_condition_partial(engine=PandasExecutionEngine)  # type: ignore[misc,untyped-decorator]
    def _pandas(cls, column: pd.Series, n: int = 3, **kwargs: Any) -> pd.Series:
        def ok(value: Any) -> bool:
            if isinstance(value, str) or not hasattr(value, "__len__"):
                return False
            items = [str(v).strip() for v in value]
            return len(items) == int(n) and all(items) and len(set(items)) == int(n)

        return column.map(ok)


class ExpectColumnValuesToBeDistinctListsOfN(ColumnMapExpectation):  # type: ignore[misc]
    """Each value is a list of exactly ``n`` distinct, non-empty option texts."""

    n: int = 3
    map_metric: ClassVar[str] = "column_values.mocqa_distinct_list_of_n"
    success_keys: ClassVar[tuple[str, ...]] = ("n", "mostly")
