"""Custom GX expectations for the ID-MoCQA dataset (DESIGN.md §8).

* language balance: every (source id, clue type) pair exists exactly once in every language;
* no province leakage: no province, city or regency used as a location in a question, judged
  row by row with the question's own language through the gazetteer;
* no own-province names: no question names its own province, capital, a city or regency of it
  or one of its peoples, in the clue or the statement, cultural terms included ("Rumoh Aceh",
  "Coto Makassar", "Batak wedding"): the rule verify enforces, with no allowlist exemption;
* claims hold nationally: every comparison or intersection clue's stored evidence, recomputed
  over all of Indonesia's provinces (``data/knowledge/national``), still singles out the row's
  province, by the configured margin on measured statistics;
* clues unique nationally: every template clue built from a named fact (entity, geographical,
  temporal, commonsense) has a national claim (``national/clue_facts.csv``) that is exactly the
  row's province: a shared, unknown or missing claim fails;
* no option copying: no question contains an option whole or shares a long n-gram with it;
* option lists: exactly ``n`` distinct non-empty strings per row.

Import this module before loading ``expectations/mocqa_dataset.json``: GX resolves expectation
classes from a registry keyed by their snake_case names. Uniform gold positions reuse
``expect_column_value_shares_to_be_uniform`` from :mod:`cultureqa.validation.expectations`.
"""

from __future__ import annotations

import json
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
from cultureqa.knowledge.gazetteer import find_location_mentions, find_own_province_leaks
from cultureqa.mocqa_build.textchecks import copied_option
from cultureqa.mocqa_shared.schema import as_options
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


def own_province_names(
    frame: pd.DataFrame, text_column: str, language_column: str, province_column: str
) -> list[dict[str, Any]]:
    """Rows whose text names its own province, a place in it or its people."""
    out = []
    columns = [text_column, language_column, province_column]
    for index, text, language, province in frame[columns].itertuples(name=None):
        leaks = find_own_province_leaks(str(text), str(language), str(province))  # type: ignore[arg-type]
        if leaks:
            names = [f"{x.name} ({x.kind} {x.term})" for x in leaks]
            out.append({"row": int(index), "province": str(province), "names": names})
    return out


table_metric(
    "table.mocqa_own_province_names",
    own_province_names,
    ("text_column", "language_column", "province_column"),
)


class ExpectQuestionsToNotNameOwnProvince(BatchExpectation):  # type: ignore[misc]
    """No question names its own province, a place in it or its people (no exemptions)."""

    text_column: str = "question"
    language_column: str = "language"
    province_column: str = "province"
    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.mocqa_own_province_names",)
    success_keys: ClassVar[tuple[str, ...]] = ("text_column", "language_column", "province_column")

    def _validate(
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        found = metrics["table.mocqa_own_province_names"]
        return {
            "success": not found,
            "result": {
                "observed_value": f"{len(found)} questions name their own province",
                "details": {"rows": found[:20]},
            },
        }


def false_claims(
    frame: pd.DataFrame, evidence_column: str, province_column: str, min_gap_share: float = 0.0
) -> list[dict[str, Any]]:
    """Rows whose comparison/intersection evidence no longer singles out their province."""
    from cultureqa.knowledge.national import load_national
    from cultureqa.mocqa_build import claims

    national = load_national()
    out = []
    for index, text, province in frame[[evidence_column, province_column]].itertuples(name=None):
        try:
            evidence = json.loads(str(text))
        except json.JSONDecodeError:
            out.append({"row": int(index), "why": "evidence is not JSON"})
            continue
        if not isinstance(evidence, dict) or evidence.get("claim") not in CLAIM_KINDS:
            continue
        if not claims.verify_evidence(national, evidence, str(province), float(min_gap_share)):
            out.append({"row": int(index), "province": str(province), "claim": _claim(evidence)})
    return out


CLAIM_KINDS = ("comparison", "intersection")


def _claim(evidence: dict[str, Any]) -> str:
    if evidence.get("claim") == "comparison":
        return f"{evidence.get('rank')} {evidence.get('statistic')} in {evidence.get('scope')}"
    s1, s2 = evidence.get("s1", {}), evidence.get("s2", {})
    return f"{s1.get('id')} & {s2.get('id')}"


table_metric(
    "table.mocqa_false_claims",
    false_claims,
    ("evidence_column", "province_column", "min_gap_share"),
)


class ExpectClaimsToHoldNationally(BatchExpectation):  # type: ignore[misc]
    """Every comparison/intersection claim is true and unique over all provinces of Indonesia."""

    evidence_column: str = "clue_evidence"
    province_column: str = "province"
    min_gap_share: float = 0.0
    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.mocqa_false_claims",)
    success_keys: ClassVar[tuple[str, ...]] = (
        "evidence_column", "province_column", "min_gap_share",
    )  # fmt: skip

    def _validate(
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        found = metrics["table.mocqa_false_claims"]
        return {
            "success": not found,
            "result": {
                "observed_value": f"{len(found)} claims do not hold over all provinces",
                "details": {"rows": found[:20]},
            },
        }


NAMED_FACT_TYPES = ("entity:", "geographical:", "temporal:", "commonsense:")


def shared_clues(frame: pd.DataFrame, evidence_column: str, province_column: str) -> dict[str, Any]:
    """Rows whose named-fact clue is not unique in all of Indonesia, and rows not checkable.

    A row is checkable when its evidence names a template fact (``fact_key``); LLM clues carry
    none and are counted, never silently passed.
    """
    from cultureqa.knowledge.national_clues import load_clue_facts

    table = load_clue_facts()
    failed, unchecked = [], 0
    for index, text, province in frame[[evidence_column, province_column]].itertuples(name=None):
        try:
            evidence = json.loads(str(text))
        except json.JSONDecodeError:
            failed.append({"row": int(index), "why": "evidence is not JSON"})
            continue
        key = str(evidence.get("fact_key", "")) if isinstance(evidence, dict) else ""
        if isinstance(evidence, dict) and evidence.get("claim") in CLAIM_KINDS:
            continue  # comparison/intersection: expect_claims_to_hold_nationally checks them
        if not key.startswith(NAMED_FACT_TYPES):
            unchecked += 1
            continue
        verdict = table.verdict(str(province), key)
        if not verdict.unique:
            where = list(verdict.claim.provinces) if verdict.claim else []
            failed.append(
                {"row": int(index), "province": str(province), "fact": key, "why": verdict.reason,
                 "provinces": where}
            )  # fmt: skip
    return {"failed": failed, "unchecked": unchecked}


table_metric("table.mocqa_shared_clues", shared_clues, ("evidence_column", "province_column"))


class ExpectCluesToBeUniqueNationally(BatchExpectation):  # type: ignore[misc]
    """Every named-fact clue belongs to its province alone among Indonesia's provinces."""

    evidence_column: str = "clue_evidence"
    province_column: str = "province"
    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.mocqa_shared_clues",)
    success_keys: ClassVar[tuple[str, ...]] = ("evidence_column", "province_column")

    def _validate(
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        found = metrics["table.mocqa_shared_clues"]
        failed, unchecked = found["failed"], found["unchecked"]
        return {
            "success": not failed,
            "result": {
                "observed_value": (
                    f"{len(failed)} clues are not unique nationally "
                    f"({unchecked} rows carry no named fact to check)"
                ),
                "details": {"rows": failed[:20], "unchecked": unchecked},
            },
        }


def names_no_location(text: object, language: object) -> bool:
    """Whether ``text`` uses no province, city or regency as a location (in ``language``)."""
    return not find_location_mentions(str(text), str(language))  # type: ignore[arg-type]


pair_condition("column_pair_values.mocqa_no_location_leak", names_no_location)


class ExpectQuestionsToNotLeakProvince(ColumnPairMapExpectation):  # type: ignore[misc]
    """No province, city or regency of the 11 provinces is used as a location in a question."""

    ignore_row_if: str = "both_values_are_missing"
    map_metric: ClassVar[str] = "column_pair_values.mocqa_no_location_leak"
    success_keys: ClassVar[tuple[str, ...]] = ("ignore_row_if", "mostly")


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
