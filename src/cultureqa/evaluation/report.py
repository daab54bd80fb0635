"""Analysis of one benchmark's predictions across the roster: tables, metrics, plots."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.analysis.plots import accuracy_by_setting, heatmap
from cultureqa.analysis.tables import metrics_tree, overall_table, slice_tables, to_markdown
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.io import write_csv, write_json, write_text


@dataclass(frozen=True)
class ReportPaths:
    """Where one benchmark's analysis goes (one folder per stage, DVC-tracked)."""

    metrics: Path
    reports: Path


def collect_predictions(eval_dir: Path, pattern: str = "**/predictions.parquet") -> pd.DataFrame:
    """Every evaluation's predictions under ``eval_dir`` (one file per roster entry [× prompt]).

    Files that predate the ``roster_entry`` column get it from their folder
    (``<eval_dir>/<entry>/...``), so results are keyed by roster entry, never by display id alone.
    """
    files = sorted(eval_dir.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no predictions under {eval_dir}: run the evaluate stages first")
    frames = []
    for f in files:
        frame = pd.read_parquet(f)
        if "roster_entry" not in frame.columns:
            frame.insert(0, "roster_entry", f.relative_to(eval_dir).parts[0])
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def analyze_benchmark(
    spec: BenchmarkSpec,
    predictions: pd.DataFrame,
    paths: ReportPaths,
    validation: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write summary metrics, slice tables (CSV + markdown) and plots; return the summary.

    ``validation`` is ``validate``'s summary: its gold-position lines, warnings and reported
    checks head the report, so a skew that passed is read beside the accuracies it may inflate.
    """
    overall = overall_table(predictions)
    tables = slice_tables(predictions, spec.slices)
    summary = metrics_tree(overall)
    write_json(paths.metrics, summary)
    write_csv(paths.reports / "overall.csv", overall)
    sections = [f"# {spec.name}: accuracy (Wilson 95% CI)\n", to_markdown(overall)]
    sections += _data_checks(validation)
    for name, table in tables.items():
        slug = name.replace("×", "_x_")
        write_csv(paths.reports / f"by_{slug}.csv", table)
        sections += [f"\n## by {name}\n", to_markdown(table)]
    write_text(paths.reports / "tables.md", "\n".join(sections))
    accuracy_by_setting(
        overall, paths.reports / "accuracy_by_setting.png", f"{spec.name}: accuracy"
    )
    region = spec.location.region_column
    if region and region in predictions.columns:
        pivot = (
            predictions.groupby([region, "model"])["correct"].mean().unstack("model").sort_index()
        )
        heatmap(
            pivot,
            paths.reports / f"accuracy_by_{region}.png",
            f"{spec.name}: accuracy by {region} (all settings)",
        )
    return summary


def _data_checks(validation: Mapping[str, Any] | None) -> list[str]:
    """The report's lines on the data: gold positions (warning or ok) and reported checks."""
    if not validation:
        return []
    lines = []
    for on, gold in sorted((validation.get("gold_balance") or {}).items()):
        if gold and gold.get("line"):
            mark = (
                "**warning**" if gold.get("warning") else ("ok" if gold.get("success") else "FAIL")
            )
            lines.append(f"- {mark} [{on}] {gold['line']}")
    for entry in validation.get("reported") or []:
        lines.append(f"- reported [{entry['on']}] {entry['expectation']}: {entry['detail']}")
    return ["\n## Data checks (validate)\n", "\n".join(lines) + "\n"] if lines else []
