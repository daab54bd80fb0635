"""Labels in, the seed's numbers out: κ per clue type, judge precision/recall, ICC(2,1), baseline.

Annotators rate quality on the judges' scale, naturalness and difficulty, and answer the question
themselves (region, then option). These functions produce exactly the numbers the seed reports:
Cohen's κ per clue type between annotators, judge-vs-human precision/recall on the binary
Acceptable label, ICC(2,1) per class, and a human-baseline accuracy row comparable with model
rows. The statistics come from ``cultureqa.analysis.stats`` (statsmodels' κ, Shrout & Fleiss
ICC); the tests check them against scikit-learn and a statsmodels ANOVA on the same labels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cultureqa.core.io import SourceError, read_table
from cultureqa.human.items import ANNOTATION_COLUMNS, LABELS, LETTERS, SCALES
from cultureqa.regions.judges.judging import ACCEPTABLE

LABEL_COLUMNS = ("item_id", "annotator", *ANNOTATION_COLUMNS)
"""The labels table (long: one row per item × annotator), from a sheet or from Label Studio."""


def import_labels(source: str | Path | pd.DataFrame, origin: str = "labels") -> pd.DataFrame:
    """Read annotator labels (long format: one row per item × annotator).

    Required columns: ``item_id``, ``annotator`` and the annotation columns (``answer_province``,
    the CSV sheet's older name, is read as ``answer_region``). Empty cells are allowed (not every
    annotator answers everything) and stay empty.

    Raises:
        SourceError: A missing column or a label off its scale, naming file, row and column.
    """
    frame = source if isinstance(source, pd.DataFrame) else read_table(source)
    origin = origin if isinstance(source, pd.DataFrame) else str(source)
    if "answer_province" in frame.columns and "answer_region" not in frame.columns:
        frame = frame.rename(columns={"answer_province": "answer_region"})
    missing = [c for c in LABEL_COLUMNS if c not in frame.columns]
    if missing:
        raise SourceError(origin, f"missing column(s) {missing}")
    frame = frame.copy()
    for column in LABEL_COLUMNS:
        frame[column] = frame[column].fillna("").astype(str).str.strip()
    for column, allowed in {**LABELS, "answer_option": LETTERS}.items():
        bad = ~frame[column].isin([*allowed, ""])
        if bad.any():
            pos = int(np.flatnonzero(bad.to_numpy())[0])
            raise SourceError(
                origin,
                f"{frame[column].iloc[pos]!r} is not one of {list(allowed)}",
                row=pos + 1,
                column=column,
            )
    return frame


def _pairs(labels: pd.DataFrame, column: str) -> list[tuple[str, str, pd.DataFrame]]:
    wide = labels[labels[column] != ""].pivot_table(
        index=["item_id", "clue_type"], columns="annotator", values=column, aggfunc="first"
    )
    return [(a, b, wide[[a, b]].dropna()) for a, b in combinations(sorted(wide.columns), 2)]


def kappa_by_clue_type(
    labels: pd.DataFrame, items: pd.DataFrame, column: str = "quality"
) -> pd.DataFrame:
    """Cohen's κ per clue type for every annotator pair (items both labelled)."""
    from cultureqa.analysis.stats import cohen_kappa

    merged = labels.merge(items[["item_id", "clue_type"]], on="item_id", how="inner")
    rows = []
    for a, b, both in _pairs(merged, column):
        for clue_type, part in both.groupby(level="clue_type"):
            rows.append(
                {
                    "clue_type": clue_type,
                    "annotator_a": a,
                    "annotator_b": b,
                    "n": len(part),
                    "kappa": cohen_kappa(list(part[a]), list(part[b])),
                }
            )
    return pd.DataFrame(rows, columns=["clue_type", "annotator_a", "annotator_b", "n", "kappa"])


def human_acceptable(labels: pd.DataFrame) -> pd.Series:
    """Per item: True when more than half of its quality labels are OK or Minor."""
    rated = labels[labels["quality"] != ""]
    return rated.groupby("item_id")["quality"].agg(lambda s: s.isin(ACCEPTABLE).mean() > 0.5)


def needs_adjudication(labels: pd.DataFrame) -> pd.DataFrame:
    """Items whose quality labels split on Acceptable (OK/Minor vs Moderate/Significant).

    These go to a third annotator (``cultureqa human push --adjudicate``); an item already rated
    by three or more people has its majority and is not listed again.
    """
    rated = labels[labels["quality"] != ""]
    per_item = rated.groupby("item_id")["quality"].agg(
        n="size", acceptable=lambda s: int(s.isin(ACCEPTABLE).sum()), labels=lambda s: "|".join(s)
    )
    split = per_item[(per_item["n"] == 2) & (per_item["acceptable"] == 1)]
    return split.reset_index()[["item_id", "n", "labels"]]


def judge_vs_human(
    labels: pd.DataFrame, judge_keep: Mapping[str, bool], items: pd.DataFrame
) -> pd.DataFrame:
    """Precision and recall of the judge's Acceptable (keep) against the human majority label.

    ``n_rejected`` counts the labelled items the judge rejected: recall below 1 needs one of them.
    """
    from cultureqa.analysis.stats import precision_recall

    human = human_acceptable(labels).rename("human").reset_index()
    human["judge"] = human["item_id"].map(judge_keep)
    human = human.dropna(subset=["judge"]).merge(items[["item_id", "clue_type"]], on="item_id")
    rows = []
    for name, part in [("all", human), *human.groupby("clue_type")]:
        precision, recall = precision_recall(list(part["judge"].astype(bool)), list(part["human"]))
        rejected = int((~part["judge"].astype(bool)).sum())  # both classes present, or not
        rows.append(
            {"clue_type": name, "n": len(part), "n_rejected": rejected,
             "precision": precision, "recall": recall}
        )  # fmt: skip
    return pd.DataFrame(rows)


def icc_by_class(
    labels: pd.DataFrame, items: pd.DataFrame, column: str = "quality", by: str = "clue_type"
) -> pd.DataFrame:
    """ICC(2,1) of the ordinal ``column`` per class (items rated by every annotator only)."""
    from cultureqa.analysis.stats import icc_2_1

    coded = labels[labels[column] != ""].assign(code=lambda f: f[column].map(SCALES[column]))
    coded = coded.merge(items[["item_id", by]], on="item_id")
    rows = []
    for name, part in coded.groupby(by):
        matrix = part.pivot_table(index="item_id", columns="annotator", values="code").dropna()
        value = icc_2_1(matrix.to_numpy()) if min(matrix.shape) >= 2 else float("nan")
        rows.append(
            {
                by: name,
                "rating": column,
                "n_items": len(matrix),
                "n_raters": matrix.shape[1],
                "icc_2_1": value,
            }
        )
    return pd.DataFrame(rows)


def human_baseline(
    labels: pd.DataFrame, items: pd.DataFrame, normalize: Callable[[str], str | None]
) -> pd.DataFrame:
    """Annotators as a model: multi-hop (option) and first-hop (region) accuracy.

    With Wilson intervals, overall and by clue type × language, in the shape of model rows.
    Items without a gold letter (a case table laid out by error type) count toward first-hop
    accuracy only.
    """
    from cultureqa.analysis.stats import accuracy_table

    answered = labels[labels["answer_option"] != ""].merge(
        items[["item_id", "clue_type", "language", "region", "answer"]], on="item_id"
    )
    answered["correct"] = answered["answer_option"] == answered["answer"]
    answered["region_correct"] = [
        normalize(p) == g
        for p, g in zip(answered["answer_region"], answered["region"], strict=True)
    ]
    scored = answered[answered["answer"] != ""]
    out = []
    for by in ([], ["clue_type", "language"]):
        if len(scored):
            multi = accuracy_table(scored, by, "correct").assign(metric="multi_hop_accuracy")
            out.append(multi)
        first = accuracy_table(answered, by, "region_correct").assign(metric="first_hop_accuracy")
        out.append(first)
    if not out or not len(answered):
        return pd.DataFrame(columns=["metric", "model", "clue_type", "language"])
    table = pd.concat(out, ignore_index=True).assign(model="human")
    return table.fillna({"clue_type": "all", "language": "all"})


def published(items: pd.DataFrame, judge_keep: Mapping[str, bool] | None) -> pd.DataFrame:
    """The items a model is scored on: those the judge kept (all items when there is no judge).

    The sample holds rejected variants so the judge can be measured, but a baseline comparable
    with model rows must be scored on the published items only; how many labelled rejected
    items it leaves out is ``n_rejected`` of the judge table.
    """
    if judge_keep is None:
        return items
    return items[[bool(judge_keep.get(str(i), False)) for i in items["item_id"]]]


def summarize(results: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """JSON-ready dict of the human-validation tables (for metrics/ and MLflow)."""
    return {
        name: frame.replace({np.nan: None}).to_dict(orient="records")
        for name, frame in results.items()
    }


def all_tables(
    labels: pd.DataFrame,
    items: pd.DataFrame,
    judge_keep: Mapping[str, bool] | None,
    normalize: Callable[[str], str | None],
) -> dict[str, pd.DataFrame]:
    """Every table the seed reports, from one labels table (the CSV and Label Studio paths)."""
    tables = {
        "kappa_quality": kappa_by_clue_type(labels, items),
        "icc_quality": icc_by_class(labels, items, "quality"),
        "icc_naturalness": icc_by_class(labels, items, "naturalness"),
        "icc_difficulty": icc_by_class(labels, items, "difficulty"),
        "human_baseline": human_baseline(labels, published(items, judge_keep), normalize),
        "needs_adjudication": needs_adjudication(labels),
    }
    if judge_keep is not None:
        tables["judge_vs_human"] = judge_vs_human(labels, judge_keep, items)
    return tables
