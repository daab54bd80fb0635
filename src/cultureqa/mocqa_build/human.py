"""Human validation tools: annotation sample out, labels in, agreement and baselines (DESIGN.md §5).

The paper validates ID-MoCQA with annotators who rate quality (the judges' categories),
naturalness and difficulty, and answer the question themselves (province, then option). These
functions produce exactly the numbers it reports: Cohen's κ per clue type between annotators,
judge-vs-human precision/recall on the binary Acceptable label, ICC(2,1) per class, and a
human-baseline accuracy row comparable with model rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cultureqa.io import SourceError, read_table
from cultureqa.mocqa_build.judging import ACCEPTABLE, CATEGORIES
from cultureqa.mocqa_shared.schema import LETTERS, as_options

LABELS: dict[str, tuple[str, ...]] = {
    "quality": CATEGORIES,
    "naturalness": ("Natural", "Acceptable", "Unnatural"),
    "difficulty": ("Easy", "Moderate", "Hard"),
}
SCALES: dict[str, dict[str, int]] = {
    "quality": {"OK": 3, "Minor": 2, "Moderate": 1, "Significant": 0},
    "naturalness": {"Natural": 2, "Acceptable": 1, "Unnatural": 0},
    "difficulty": {"Easy": 0, "Moderate": 1, "Hard": 2},
}
"""Ordinal codes for ICC (higher = better quality/naturalness, harder)."""
ANNOTATION_COLUMNS = ("quality", "naturalness", "difficulty", "answer_province", "answer_option")


def export_annotation_sample(
    dataset: pd.DataFrame,
    per_stratum: int,
    seed: int,
    strata: Sequence[str] = ("clue_type", "language"),
) -> pd.DataFrame:
    """A stratified sample with blank annotation columns; gold answer and province hidden."""
    shuffled = dataset.sample(frac=1.0, random_state=seed)
    picked = shuffled.groupby(list(strata), sort=True).head(per_stratum)
    rows = []
    for row in picked.sort_values(["clue_type", "language", "item_id"]).to_dict("records"):
        options = as_options(row["options"])
        rows.append(
            {
                "item_id": row["item_id"],
                "clue_type": row["clue_type"],
                "language": row["language"],
                "question": row["question"],
                **{f"option_{k}": v for k, v in zip(LETTERS, options, strict=False)},
                **dict.fromkeys(ANNOTATION_COLUMNS, ""),
            }
        )
    return pd.DataFrame(rows)


def import_labels(source: str | Path | pd.DataFrame, origin: str = "labels") -> pd.DataFrame:
    """Read annotator labels (long format: one row per item × annotator).

    Errors name the row and column.

    Required columns: ``item_id``, ``annotator`` and the :data:`ANNOTATION_COLUMNS`. Empty cells
    are allowed (not every annotator answers everything) and stay empty.
    """
    frame = source if isinstance(source, pd.DataFrame) else read_table(source)
    origin = origin if isinstance(source, pd.DataFrame) else str(source)
    missing = [c for c in ("item_id", "annotator", *ANNOTATION_COLUMNS) if c not in frame.columns]
    if missing:
        raise SourceError(origin, f"missing column(s) {missing}")
    frame = frame.copy()
    for column in ("item_id", "annotator", *ANNOTATION_COLUMNS):
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
    labels: pd.DataFrame, dataset: pd.DataFrame, column: str = "quality"
) -> pd.DataFrame:
    """Cohen's κ per clue type for every annotator pair (items both labelled)."""
    from cultureqa.analysis.stats import cohen_kappa

    merged = labels.merge(dataset[["item_id", "clue_type"]], on="item_id", how="inner")
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


def judge_vs_human(
    labels: pd.DataFrame, judge_keep: Mapping[str, bool], dataset: pd.DataFrame
) -> pd.DataFrame:
    """Precision and recall of the judge's Acceptable (keep) against the human majority label."""
    from cultureqa.analysis.stats import precision_recall

    human = human_acceptable(labels).rename("human").reset_index()
    human["judge"] = human["item_id"].map(judge_keep)
    human = human.dropna(subset=["judge"]).merge(dataset[["item_id", "clue_type"]], on="item_id")
    rows = []
    for name, part in [("all", human), *human.groupby("clue_type")]:
        precision, recall = precision_recall(list(part["judge"].astype(bool)), list(part["human"]))
        rows.append({"clue_type": name, "n": len(part), "precision": precision, "recall": recall})
    return pd.DataFrame(rows)


def icc_by_class(
    labels: pd.DataFrame, dataset: pd.DataFrame, column: str = "quality", by: str = "clue_type"
) -> pd.DataFrame:
    """ICC(2,1) of the ordinal ``column`` per class (items rated by every annotator only)."""
    from cultureqa.analysis.stats import icc_2_1

    coded = labels[labels[column] != ""].assign(code=lambda f: f[column].map(SCALES[column]))
    coded = coded.merge(dataset[["item_id", by]], on="item_id")
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
    labels: pd.DataFrame, dataset: pd.DataFrame, normalize: Callable[[str], str | None]
) -> pd.DataFrame:
    """Annotators as a model: multi-hop (option) and first-hop (province) accuracy.

    With Wilson intervals, overall and by clue type × language, in the shape of model rows.
    """
    from cultureqa.analysis.stats import accuracy_table

    answered = labels[labels["answer_option"] != ""].merge(
        dataset[["item_id", "clue_type", "language", "province", "answer"]], on="item_id"
    )
    answered["correct"] = answered["answer_option"] == answered["answer"]
    answered["province_correct"] = [
        normalize(p) == g
        for p, g in zip(answered["answer_province"], answered["province"], strict=True)
    ]
    out = []
    for by in ([], ["clue_type", "language"]):
        multi = accuracy_table(answered, by, "correct").assign(metric="multi_hop_accuracy")
        first = accuracy_table(answered, by, "province_correct").assign(metric="first_hop_accuracy")
        out += [multi, first]
    table = pd.concat(out, ignore_index=True).assign(model="human")
    return table.fillna({"clue_type": "all", "language": "all"})


def summarize(results: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """JSON-ready dict of the human-validation tables (for metrics/ and the card)."""
    return {
        name: frame.replace({np.nan: None}).to_dict(orient="records")
        for name, frame in results.items()
    }
