"""Analysis of one benchmark's predictions across the roster: tables, metrics, plots."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.analysis.plots import accuracy_by_setting, heatmap
from cultureqa.analysis.tables import metrics_tree, overall_table, slice_tables, to_markdown
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.io import write_csv, write_json, write_text


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


def collect_records(eval_dir: Path) -> dict[str, dict[str, Any]]:
    """Every evaluation's ``run.json`` under ``eval_dir``, keyed by its folder (roster entry).

    Only the DVC-tracked record: the run logs (``.runlog/``) hold what one run's calls did and
    are not read here, so the report is the same bytes wherever the outputs came from.
    """
    return {
        f.parent.relative_to(eval_dir).as_posix(): json.loads(f.read_text(encoding="utf-8"))
        for f in sorted(eval_dir.glob("**/run.json"))
        if not any(part.startswith(".") for part in f.relative_to(eval_dir).parts)
    }


def analyze_benchmark(
    spec: BenchmarkSpec,
    predictions: pd.DataFrame,
    paths: ReportPaths,
    validation: Mapping[str, Any] | None = None,
    records: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Write summary metrics, slice tables (CSV + markdown) and plots; return the summary.

    ``validation`` is ``validate``'s summary: its gold-position lines, warnings and reported
    checks head the report, so a skew that passed is read beside the accuracies it may inflate.
    ``records`` (each run's ``run.json``) give the run accounting: what failed, was unparsable,
    empty, not sent, skipped or dropped, beside the accuracies those items count against.
    """
    overall = overall_table(predictions)
    tables = slice_tables(predictions, spec.slices)
    summary = metrics_tree(overall)
    write_json(paths.metrics, summary)
    write_csv(paths.reports / "overall.csv", overall)
    sections = [f"# {spec.name}: accuracy (Wilson 95% CI)\n", to_markdown(overall)]
    sections += _data_checks(validation)
    sections += run_accounting(records or {})
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


VOLATILE_NOTE = (
    "Retries, replies charged by estimate (a server that sent no `usage`) and cost describe the "
    "calls of one run, not its results: they are in each run's `.runlog/run.json`, in the stage's "
    "closing line and in MLflow (`api.*` metrics), not in this DVC-tracked report, so a rerun "
    "answered from the response store writes the same bytes."
)


def run_accounting(records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The report's section on how each run ended: no removal, failure or skip left unsaid.

    Unusable items (failed calls, unparsable and empty replies, requests never sent) count
    against accuracy and toward ``max_error_share``; rows the loader dropped or skipped never
    became items; settings a run skipped have no accuracy at all. Each is counted per run with
    its reason, so a reader sees what the accuracies above rest on.
    """
    if not records:
        return []
    rows = []
    notes = []
    for run, record in records.items():
        counts = record.get("counts") or {}
        loaded = (record.get("details") or {}).get("rows") or {}
        dropped = loaded.get("dropped_by_reason") or {}
        rows.append(
            {
                "run": run,
                "items": counts.get("items", 0),
                "ok": counts.get("ok", 0),
                "failed": counts.get("errors", 0),
                "unparsable": counts.get("parse_errors", 0),
                "empty": counts.get("empty", 0),
                "not sent": counts.get("not_sent", 0),
                "error share": float(record.get("error_share") or 0.0),
                "limit": float(record.get("max_error_share") or 0.0),
                "rows dropped": int(loaded.get("rows_dropped") or 0),
                "rows skipped": int(loaded.get("rows_skipped") or 0),
            }
        )
        if dropped:
            reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(dropped.items()))
            notes.append(f"- {run}: rows dropped by reason: {reasons}")
        for setting, why in sorted((record.get("skipped") or {}).items()):
            notes.append(f"- {run}: setting {setting} skipped: {why}")
        for cause, entry in sorted((record.get("error_causes") or {}).items()):
            example = entry.get("example", "") if isinstance(entry, Mapping) else ""
            by = entry.get("by_cause") if isinstance(entry, Mapping) else None
            split = f" ({', '.join(f'{k} {n}' for k, n in by.items())})" if by else ""
            notes.append(
                f"- {run}: {cause}: {entry.get('items', 0)} items{split}, e.g. {example!r}"
            )
    table = to_markdown(pd.DataFrame(rows))
    return ["\n## Run accounting\n", table, *(["\n".join(notes) + "\n"] if notes else []),
            f"\n{VOLATILE_NOTE}\n"]  # fmt: skip
