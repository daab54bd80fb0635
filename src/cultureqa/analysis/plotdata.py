"""Plot data for ``dvc plots show`` / ``dvc plots diff``: accuracy per roster slot, long format.

One row per (panel, category) with ``accuracy``, its Wilson 95% interval and ``n``. ``panel`` is
the roster slot (``model``, ``baselines.random``, ...; with ``· <prompt>`` where a benchmark runs
several prompts), never the model id, so the same panel of two experiments holds comparable bars
even when a sweep swapped the model in a slot; the id is kept in the ``model`` column for
tooltips. The project's Vega-Lite templates (``.dvc/plots/``) draw one panel per slot, one bar
(or point) per category, coloured by experiment.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from cultureqa.analysis.headline import slot_order
from cultureqa.analysis.roster import key_by_roster, slot_column
from cultureqa.analysis.stats import accuracy_table

VALUES = ["accuracy", "ci_low", "ci_high", "n", "model", "order"]


def slot_accuracy(
    preds: pd.DataFrame,
    by: Sequence[str],
    correct: str = "correct",
    panel_by: Sequence[str] = (),
) -> pd.DataFrame:
    """Accuracy with Wilson CI per (roster slot[ · ``panel_by``], *by), panels in roster order.

    Columns: ``panel``, ``*by``, ``accuracy``, ``ci_low``, ``ci_high``, ``n``, ``model``
    (the display label of the slot's model) and ``order`` (the panel's rank, for the template:
    the model under test first). Numbers are rounded to 6 places so the file's hash
    does not depend on floating-point noise.
    """
    frame = key_by_roster(preds)
    panel = slot_column(frame)
    for column in panel_by:
        panel = panel + " · " + frame[column].astype(str)
    frame = frame.assign(panel=panel)
    table = accuracy_table(frame, ["panel", *by], correct)
    labels = frame.groupby("panel", sort=False)["model"].first().astype(str)
    table["model"] = table["panel"].map(labels)
    for column in ("accuracy", "ci_low", "ci_high"):
        table[column] = table[column].round(6)
    order = sorted(table["panel"].unique(), key=slot_order)
    table["order"] = table["panel"].map({p: i for i, p in enumerate(order)})
    table = table.sort_values(["order", *by], kind="stable")
    return table[["panel", *by, *VALUES]].reset_index(drop=True)
