"""Names and column contracts shared by every ID-MoCQA stage.

One place for the six clue types, the two languages and the columns of each artifact, so a stage
that drops or renames a column fails in :func:`require_columns` with the stage name, not three
stages later inside a GX suite.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

CLUE_TYPES: tuple[str, ...] = (
    "entity",
    "geographical",
    "temporal",
    "commonsense",
    "comparison",
    "intersection",
)
LANGUAGES: tuple[str, ...] = ("en", "id")
LETTERS: tuple[str, ...] = ("A", "B", "C")
N_OPTIONS = 3

SOURCE_COLUMNS: tuple[str, ...] = (
    "source_id",
    "province",
    "topic",
    "context_id",
    "options_id",
    "context_en",
    "options_en",
    "answer",
    "source",
)
"""Ingest output: one row per province-specific source item, both languages side by side."""

VARIANT_COLUMNS: tuple[str, ...] = (
    "variant_id",
    "pair_id",
    "source_id",
    "clue_type",
    "language",
    "province",
    "topic",
    "clue",
    "context",
    "question",
    "options",
    "answer",
    "clue_evidence",
    "generator",
    "template_id",
    "fact_key",
)
"""Expand → rebalance: one row per (source item, clue type, language)."""

DATASET_COLUMNS: tuple[str, ...] = (
    "item_id",
    "pair_id",
    "source_id",
    "clue_type",
    "language",
    "province",
    "topic",
    "question",
    "options",
    "answer",
    "clue",
    "clue_evidence",
    "clue_source",
    "generator",
    "template_id",
    "n_words",
)
"""The published dataset (``twohop_build@indonesia``, validated by the ``statement`` part of
``expectations/twohop_dataset.json``).

``clue_source`` cites the publication behind the clue's claim (``BPS, Statistik Indonesia 2021
(2020)``): item metadata, so the question itself carries no citation a reader would have to
skip (issue 34)."""

REMOVED_COLUMNS: tuple[str, ...] = (
    "variant_id",
    "pair_id",
    "language",
    "stage",
    "reason",
    "detail",
)
"""What every stage writes for the rows it drops, so the card can say why each one went."""


def pair_id(source_id: str, clue_type: str) -> str:
    """Key shared by the English and Indonesian version of one two-hop question."""
    return f"{source_id}.{clue_type}"


def variant_id(source_id: str, clue_type: str, language: str) -> str:
    """Stable id of one question in one language (also the published ``item_id``)."""
    return f"{source_id}.{clue_type}.{language}"


def require_columns(frame: pd.DataFrame, columns: Iterable[str], stage: str) -> None:
    """Raise naming the stage and the missing columns when an input lacks its contract."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"mocqa {stage}: input lacks columns {missing}; has {list(frame.columns)}")


def removed_rows(
    rows: pd.DataFrame, stage: str, reason: str | pd.Series, detail: str | pd.Series = ""
) -> pd.DataFrame:
    """Removal records for ``rows`` (variants) in the shared :data:`REMOVED_COLUMNS` shape."""
    out = pd.DataFrame(
        {
            "variant_id": rows["variant_id"].astype(str).to_numpy(),
            "pair_id": rows["pair_id"].astype(str).to_numpy(),
            "language": rows["language"].astype(str).to_numpy(),
        }
    )
    out["stage"] = stage
    out["reason"] = reason.to_numpy() if isinstance(reason, pd.Series) else reason
    out["detail"] = detail.to_numpy() if isinstance(detail, pd.Series) else detail
    return out.loc[:, list(REMOVED_COLUMNS)]


def empty_removed() -> pd.DataFrame:
    """A removal table with no rows but the right columns (parquet needs a schema)."""
    return pd.DataFrame({c: pd.Series([], dtype="str") for c in REMOVED_COLUMNS})


def dumps_evidence(evidence: Mapping[str, Any]) -> str:
    """Canonical JSON for ``clue_evidence`` (sorted keys: identical facts give identical text)."""
    return json.dumps(evidence, sort_keys=True, ensure_ascii=False, default=str)


def clue_source(evidence: Mapping[str, Any]) -> str:
    """The citation of a clue's claim, from its evidence; empty when none is recorded.

    Comparison: the statistic's publication and the year of the figure. Intersection: the
    publications of every statistic the conditions use. Named facts: the source of the national
    claim (``national/clue_facts.csv``), else the knowledge-base page the fact came from.
    """
    national = evidence.get("national")
    if isinstance(national, Mapping) and national.get("source"):
        source, year = str(national["source"]), national.get("year")
    else:
        source, year = str(evidence.get("source") or ""), evidence.get("year")
    if not source:
        return ""
    if evidence.get("claim") == "comparison" and year is not None and str(year) not in source:
        return f"{source} ({year})"
    return source


def as_options(value: Any) -> list[str]:
    """Options as a plain list of str, whatever container parquet or pandas handed back."""
    if isinstance(value, str):
        return [value]
    return [str(v) for v in list(value)]
