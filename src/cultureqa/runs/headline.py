"""The table a run ends with: benchmark × prompt × roster slot, accuracy ± 95% CI and n items.

lm-eval ends every run with its results table; ``make repro`` used to end with DVC's lines, so a
researcher had to know where the numbers were. ``cultureqa headline`` (the last command of
``make repro``) prints this table for the workspace. Its cells are the ones ``make compare``
prints (:mod:`cultureqa.runs.compare`: the same cells, predictions and t-interval over items), for
every roster slot at once instead of one slot across experiments; a cell whose predictions are
missing reads ``n/a``, never a number from elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from cultureqa.runs.compare import _model_id
from cultureqa.runs.compare_data import Experiment, estimate, item_means, measure
from cultureqa.runs.compare_render import _table

ACCURACY = "accuracy ± 95% CI"


def slots(params: Mapping[str, Any]) -> list[str]:
    """Every roster slot some family evaluates, in roster order (the model under test first)."""
    found: list[str] = []
    for node in (params.get("evaluate"), params.get("mocqa_eval"), params.get("cases")):
        found += [str(s) for s in ((node or {}).get("roster") or [])]
    hop = ((params.get("twohop") or {}).get("hop") or {}).get("model")
    return list(dict.fromkeys([*found, *([str(hop)] if hop else [])]))


def headline(root: Path, params: Mapping[str, Any]) -> pd.DataFrame:
    """One row per benchmark cell × slot of the workspace: model id, accuracy text, numbers."""
    exp = Experiment("workspace", None, params)
    by_column: dict[str, list[dict[str, Any]]] = {}
    for slot in slots(params):
        for column, found in measure(root, exp, slot).items():
            row: dict[str, Any] = {"benchmark": found.cell.family, "prompt": found.cell.prompt,
                                   "slot": slot, "model": _model_id(exp, slot)}  # fmt: skip
            if found.rows is None:
                row |= {ACCURACY: found.missing, "n items": "", "accuracy": float("nan"),
                        "ci_low": float("nan"), "ci_high": float("nan")}  # fmt: skip
            else:
                est = estimate(item_means(found))
                row |= {ACCURACY: est.text(), "n items": est.n, "accuracy": est.value,
                        "ci_low": est.low, "ci_high": est.high}  # fmt: skip
            by_column.setdefault(column, []).append(row)
    return pd.DataFrame([row for rows in by_column.values() for row in rows])


def render(frame: pd.DataFrame) -> str:
    """The table as padded markdown with a one-line legend under it."""
    if frame.empty:
        return "no predictions in the workspace: run `make repro`\n"
    shown = frame[["benchmark", "prompt", "slot", "model", ACCURACY, "n items"]]
    legend = (
        "accuracy over each slot's rows, ± 95% CI (t over items); the cells of `make compare` "
        "(docs/comparing-runs.md)"
    )
    return "\n".join([*_table(shown), legend]) + "\n"


def read_params(root: Path) -> dict[str, Any]:
    """The workspace's ``params.yaml``."""
    with (root / "params.yaml").open(encoding="utf-8") as fh:
        return dict(yaml.safe_load(fh) or {})
