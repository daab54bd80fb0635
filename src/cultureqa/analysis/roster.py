"""Result identity: one row set per roster entry, whatever display ids the entries share.

A sweep such as ``dvc exp run -S model=random`` gives the model under test the display id of the
random baseline; grouping predictions by ``model`` alone would pool the two (n doubled). Every
family's report therefore passes its predictions through :func:`key_by_roster` first.
"""

from __future__ import annotations

import pandas as pd


def key_by_roster(preds: pd.DataFrame) -> pd.DataFrame:
    """Rename ``model`` to ``<id> [<roster entry>]`` wherever one id spans several roster entries.

    Entries whose id is unique keep it, so the default roster's reports are unchanged; rows
    without a roster entry (human respondents) are left as they are. Two entries with identical
    configs still stay two rows: they are two results the user asked for, and merging them would
    hide one of them.
    """
    if preds.empty or "roster_entry" not in preds.columns:
        return preds
    known = preds["roster_entry"].notna()
    entries = preds.loc[known, ["model", "roster_entry"]].drop_duplicates()
    shared = entries.groupby("model")["roster_entry"].transform("nunique") > 1
    clash = set(entries.loc[shared, "model"])
    if not clash:
        return preds
    out = preds.copy()
    hit = known & out["model"].isin(clash)
    out.loc[hit, "model"] = (
        out.loc[hit, "model"].astype(str) + " [" + out.loc[hit, "roster_entry"].astype(str) + "]"
    )
    return out


def roster_slots(preds: pd.DataFrame) -> dict[str, str]:
    """``{label: roster entry}`` for the labels :func:`key_by_roster` gives ``preds``' rows.

    Reports are keyed by label (a readable model id); headline metrics, plot data and MLflow runs
    by roster slot, so a sweep that swaps the model in one slot lines up across experiments.
    """
    if preds.empty or "roster_entry" not in preds.columns:
        return {}
    keyed = key_by_roster(preds)
    known = keyed["roster_entry"].notna()
    pairs = keyed.loc[known, ["model", "roster_entry"]].drop_duplicates()
    return {str(m): str(e) for m, e in zip(pairs["model"], pairs["roster_entry"], strict=True)}


def slot_column(preds: pd.DataFrame) -> pd.Series:
    """Each row's roster slot; rows without one (human respondents) keep their model label."""
    if "roster_entry" not in preds.columns:
        return preds["model"].astype(str)
    return (
        preds["roster_entry"]
        .astype("object")
        .where(preds["roster_entry"].notna(), preds["model"])
        .astype(str)
    )
