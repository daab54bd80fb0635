"""``make compare``'s output: the comparison as a long frame (``--csv``) or as text tables.

One padded markdown table per cell column with its notes under it, and a legend that says how
each cell reads; every line fits the terminal's width. Nothing here computes a number: the
numbers come from :func:`cultureqa.runs.compare.compare`.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import pandas as pd

from cultureqa.runs.compare_data import (
    ALPHA,
    DIFFERENT,
    NOT_AVAILABLE,
    NOT_VARIED,
    SAME,
    SHARED,
    UNDECIDED,
    Estimate,
)

if TYPE_CHECKING:
    from cultureqa.runs.compare import Comparison


PROMPT_NOTES = {
    "mocqa": "ID-MoCQA runs every prompt style of mocqa_eval.prompts in each experiment: "
    "prompt.style does not apply",
    "cases": "the cases benchmark has its own prompt: prompt.style does not apply",
}
"""Why a family's prompt is not the experiment's ``prompt.style``."""


def as_frame(result: Comparison, text: bool) -> pd.DataFrame:
    """Long format: one row per cell column × experiment; text cells or numbers with CI and n."""
    out = []
    for row in result.rows:
        flat: dict[str, Any] = {}
        for key, cell in row.items():
            if not isinstance(cell, Estimate):
                flat[key] = cell
            elif text:
                flat[key] = cell.text(signed=key == "Δ")
            else:
                flat |= {key: cell.value, f"{key} ci_low": cell.low}
                flat |= {f"{key} ci_high": cell.high, f"{key} n": cell.n}
        out.append(flat)
    return pd.DataFrame(out)


def render(result: Comparison, width: int = 160) -> str:
    """One padded markdown table per cell column, its notes under it; lines fit ``width``."""
    if not result.rows:
        return f"no predictions of roster slot `{result.slot}` in any experiment\n"
    frame = as_frame(result, text=True)
    if "note" in frame.columns:  # the reason of an empty Δ is a section note, not a cell
        frame.loc[frame["Δ"].astype(str) == NOT_VARIED, "note"] = "see below"
    base = result.baseline or "(none)"
    frame = frame.rename(columns={"Δ": f"Δ vs {base}", "accuracy": "accuracy ± 95% CI"})
    out: list[str] = []
    for column in result.columns:
        part = frame[frame["column"] == column].drop(columns=["column"])
        if part.empty:
            continue
        if not part["settings"].astype(str).str.len().any():
            part = part.drop(columns=["settings"])
        part = part.drop(columns=[SHARED])  # a note under the table: the table fits the width
        part = part.rename(columns={"settings": f"{result.spans.get(column, 'setting')}s"})
        out += [f"## {column}", "", *_table(part), ""]
        notes = _section_notes(result, column) + _shared_notes(result, column)
        for note in notes:
            out += _wrap(f"- {note}", width, indent="  ")
        out += [""] if notes else []
    legend = (
        f"Roster slot `{result.slot}`: accuracy over its rows ± 95% CI (t over items); "
        f"Δ = experiment − {base}, paired by item over the rows both measured (n items shown); "
        f"reading: {DIFFERENT} (paired t, Holm over the table's Δs, α = {ALPHA}), {SAME} "
        f"± {result.margin:g} ({result.margin_source}; TOST, Holm) or {UNDECIDED}; "
        f"settings (seeds) = run here / run by any experiment; {NOT_AVAILABLE}: no "
        f"predictions at that revision; {NOT_VARIED}: the experiments' differences do not "
        "reach this benchmark."
    )
    out += _wrap(legend, width)
    if result.folded:
        out.append(result.folded)
    return "\n".join(out) + "\n"


def _shared_notes(result: Comparison, column: str) -> list[str]:
    """Per row that ran fewer settings than the baseline: the baseline over the same ones."""
    span = result.spans.get(column, "setting")
    return [
        f"{row['experiment']} ran {row['settings'] or 'fewer'} {span}s: {result.baseline} over"
        f" the same ones is {row[SHARED].text()} (n={row[SHARED].n}),"
        " the accuracy its Δ is paired against"
        for row in result.rows
        if row["column"] == column and isinstance(row.get(SHARED), Estimate)
    ]


def _section_notes(result: Comparison, column: str) -> list[str]:
    family = column.split("·")[0]
    notes = [PROMPT_NOTES[family]] if family in PROMPT_NOTES else []
    return notes + result.notes.get(column, [])


def _table(frame: pd.DataFrame) -> list[str]:
    cells = [list(map(str, frame.columns)), *frame.astype(str).to_numpy().tolist()]
    widths = [max(len(r[i]) for r in cells) for i in range(len(frame.columns))]
    lines = ["| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |"
             for r in cells]  # fmt: skip
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return lines


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(text, min(width, 120), subsequent_indent=indent)
