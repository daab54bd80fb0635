"""Accuracy tables for any benchmark: overall per (model, setting) and per declared slice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from cultureqa.analysis.stats import accuracy_table
from cultureqa.core.io import declared_frame

KEYS = ["benchmark", "model", "setting"]


def overall_table(predictions: pd.DataFrame) -> pd.DataFrame:
    """Accuracy with Wilson CI per (benchmark, model, setting), plus error rates."""
    table = accuracy_table(predictions, by=KEYS)
    rates = (
        predictions.assign(
            error=predictions["status"] == "error",
            parse_error=predictions["status"] == "parse_error",
            empty=predictions["status"] == "empty",
        )
        .groupby(KEYS, sort=True)[["error", "parse_error", "empty"]]
        .mean()
        .rename(
            columns={
                "error": "error_rate",
                "parse_error": "parse_error_rate",
                "empty": "empty_rate",
            }
        )
        .reset_index()
    )
    return table.merge(rates, on=KEYS, how="left")


def slice_tables(
    predictions: pd.DataFrame, slices: Sequence[Sequence[str]]
) -> dict[str, pd.DataFrame]:
    """One table per slice, e.g. ``province×is_province_specific``; unknown columns are an error."""
    tables = {}
    for columns in slices:
        missing = [c for c in columns if c not in predictions.columns]
        if missing:
            raise KeyError(f"slice {list(columns)}: predictions have no column(s) {missing}")
        tables["×".join(columns)] = accuracy_table(predictions, by=[*KEYS, *columns])
    return tables


def metrics_tree(overall: pd.DataFrame) -> dict[str, Any]:
    """Nested {model: {setting: {...}}} for DVC metrics (stable keys, rounded numbers)."""
    tree: dict[str, Any] = {}
    for row in overall.to_dict(orient="records"):
        tree.setdefault(str(row["model"]), {})[str(row["setting"])] = {
            "n": int(row["n"]),
            "accuracy": round(float(row["accuracy"]), 6),
            "ci_low": round(float(row["ci_low"]), 6),
            "ci_high": round(float(row["ci_high"]), 6),
            "parse_error_rate": round(float(row["parse_error_rate"]), 6),
            "empty_rate": round(float(row["empty_rate"]), 6),
            "error_rate": round(float(row["error_rate"]), 6),
        }
    return tree


def to_markdown(frame: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub-flavoured markdown table without the optional ``tabulate`` dependency.

    Floats pass the declared precision first, so a last-bit difference between machines cannot
    tip a value that sits on a display-rounding edge.
    """
    shown = declared_frame(frame)
    for col in shown.columns:
        if pd.api.types.is_float_dtype(shown[col]):
            shown[col] = shown[col].map(lambda v: f"{v:.{digits}f}")
    header = "| " + " | ".join(map(str, shown.columns)) + " |"
    rule = "|" + "|".join("---" for _ in shown.columns) + "|"
    body = ["| " + " | ".join(map(str, row)) + " |" for row in shown.itertuples(index=False)]
    return "\n".join([header, rule, *body]) + "\n"
