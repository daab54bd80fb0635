"""Two-hop items in one shape, and the stratified annotation sample (DESIGN.md §5).

ID-MoCQA and a ``statement``-format build (``province``, ``options`` as a list) and a
``case``-format build (``region``, a narrative, ``option_A`` … by position with the gold letter
in ``answer``) differ in layout; :func:`two_hop_items` maps either to the columns the annotation
tools read, so push, pull and the CSV path share one sample and one label format.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from cultureqa.core.io import SourceError
from cultureqa.mocqa_shared.schema import as_options
from cultureqa.regions.judges.judging import CATEGORIES

LETTERS: tuple[str, ...] = tuple("ABCDEFGH")
"""Option letters as annotators see them (ID-MoCQA uses the first three)."""
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
ANNOTATION_COLUMNS = ("quality", "naturalness", "difficulty", "answer_region", "answer_option")
ITEM_COLUMNS = (
    "item_id",
    "pair_key",
    "clue_type",
    "language",
    "region",
    "context",
    "question",
    "options",
    "answer",
)
"""What the annotation tools read. ``answer`` is the gold letter, or "" where the table has none
(a case table still laid out by error type, ``type_A`` …, before the shuffle places the options)."""


def two_hop_items(frame: pd.DataFrame, origin: str = "dataset") -> pd.DataFrame:
    """ID-MoCQA or region-set items as :data:`ITEM_COLUMNS` (one row per item and language).

    Raises:
        SourceError: When the frame is neither layout; the message names the missing columns.
    """
    frame = frame.rename(columns={"variant_id": "item_id"}) if "variant_id" in frame else frame
    if {"province", "options", "answer"} <= set(frame.columns):
        out = pd.DataFrame(
            {
                "item_id": frame["item_id"].astype(str),
                "pair_key": frame["pair_id"].astype(str) + "|" + frame["clue_type"].astype(str),
                "clue_type": frame["clue_type"].astype(str),
                "language": frame["language"].astype(str),
                "region": frame["province"].astype(str),
                "context": "",
                "question": frame["question"].astype(str),
                "options": [list(as_options(o)) for o in frame["options"]],
                "answer": frame["answer"].astype(str),
            }
        )
        return out.reset_index(drop=True)
    # a case-format build lays its options out by position (option_A … with the gold letter in
    # ``answer``); an unshuffled table by error type (type_A …, no gold letter)
    placed = [c for c in (f"option_{x}" for x in LETTERS) if c in frame.columns]
    typed = [c for c in frame.columns if str(c).startswith("type_")]
    option_columns = placed if placed and "answer" in frame.columns else typed
    needed = {"item_id", "source_id", "region", "language", "clue_type", "narrative", "question"}
    if needed <= set(frame.columns) and option_columns:
        out = pd.DataFrame(
            {
                "item_id": frame["item_id"].astype(str),
                "pair_key": frame["source_id"].astype(str) + "|" + frame["clue_type"].astype(str),
                "clue_type": frame["clue_type"].astype(str),
                "language": frame["language"].astype(str),
                "region": frame["region"].astype(str),
                "context": frame["narrative"].astype(str),
                "question": frame["question"].astype(str),
                "options": frame[option_columns].astype(str).to_numpy().tolist(),
                "answer": frame["answer"].astype(str) if option_columns == placed else "",
            }
        )
        return out.reset_index(drop=True)
    missing = sorted(
        {"item_id", "clue_type", "language", "question", "narrative|options"} - set(frame.columns)
    )
    if not {"province", "region"} & set(frame.columns):
        missing.append("province|region")
    raise SourceError(origin, f"not a two-hop dataset (ID-MoCQA or region set): lacks {missing}")


def sample_items(
    items: pd.DataFrame,
    per_stratum: int,
    seed: int,
    strata: Sequence[str] = ("clue_type", "language"),
) -> pd.DataFrame:
    """A stratified sample: ``per_stratum`` items per clue type × language, seeded, sorted."""
    shuffled = items.sample(frac=1.0, random_state=seed)
    picked = shuffled.groupby(list(strata), sort=True).head(per_stratum)
    return picked.sort_values(["clue_type", "language", "item_id"]).reset_index(drop=True)


def siblings(items: pd.DataFrame, picked: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per sampled item, its version in every language (itself included), by ``pair_key``."""
    versions = items[items["pair_key"].isin(set(picked["pair_key"]))]
    grouped = {key: part.sort_values("language") for key, part in versions.groupby("pair_key")}
    return {str(row.item_id): grouped[row.pair_key] for row in picked.itertuples()}


def annotation_sheet(picked: pd.DataFrame) -> pd.DataFrame:
    """The CSV path's sheet: one row per sampled item, blank label columns; gold hidden."""
    width = max((len(o) for o in picked["options"]), default=0)
    rows = []
    for row in picked.to_dict("records"):
        rows.append(
            {
                "item_id": row["item_id"],
                "clue_type": row["clue_type"],
                "language": row["language"],
                "context": row["context"],
                "question": row["question"],
                **{f"option_{LETTERS[i]}": o for i, o in enumerate(row["options"])},
                **{f"option_{LETTERS[i]}": "" for i in range(len(row["options"]), width)},
                **dict.fromkeys(ANNOTATION_COLUMNS, ""),
            }
        )
    return pd.DataFrame(rows)
