"""Files of the cross-cultural analysis: human answer sheets in; tables, metrics, plots out.

The analyze stage persists :class:`~cultureqa.cases.analysis.CasesAnalysis` tables as parquet
and a compact DVC metrics tree; the report stage draws the figures researchers expect from those
tables (error-type heatmaps, continent × domain mean and SD, WEIRD-bin trend lines) and a
markdown digest. matplotlib is imported on first use, through :mod:`cultureqa.analysis.plots`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.analysis.figures import colour_of, save_png
from cultureqa.analysis.plots import accuracy_by_setting
from cultureqa.analysis.stats import accuracy_table
from cultureqa.cases.analysis import (
    BINS,
    ERROR_TYPES,
    POOLED,
    CasesAnalysis,
    error_shares,
    overall_table,
    prepare,
)
from cultureqa.cases.construct import CORRECT_TYPE
from cultureqa.cases.evaluate import CASE_META
from cultureqa.cases.shuffle import LETTERS, parse_letter_types
from cultureqa.core.io import SourceError, read_table, write_json, write_parquet, write_text
from cultureqa.runs.tracking import SLICE, metric_key, usage_metrics

SHEET_COLUMNS = ("respondent_group", "case_id", "selection")


def human_predictions(paths: Sequence[Path], items: pd.DataFrame) -> pd.DataFrame:
    """Prediction rows from imported answer sheets, one model ``human:<group>`` per group.

    ``items`` is the shuffled item table the respondents saw; a blank or unknown selection is an
    unanswered item (``parse_error``), an unknown case id is an error naming the row.
    """
    frames = [_sheet_rows(Path(p), items.set_index("case_id", drop=False)) for p in paths]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _sheet_rows(path: Path, items: pd.DataFrame) -> pd.DataFrame:
    sheet = read_table(path)
    if missing := [c for c in SHEET_COLUMNS if c not in sheet.columns]:
        raise SourceError(path, f"missing column(s) {missing}; a sheet has {list(SHEET_COLUMNS)}")
    rows = []
    for row, record in enumerate(sheet.to_dict("records"), start=1):
        case_id = str(record["case_id"]).strip()
        if case_id not in items.index:
            raise SourceError(path, f"unknown case_id '{case_id}'", row=row, column="case_id")
        item = items.loc[case_id]
        letter = str(record["selection"] or "").strip().upper()
        kind = parse_letter_types(str(item["letter_types"])).get(letter, "")
        rows.append({"model": f"human:{record['respondent_group']}", "kind": "human",
                     "seed": int(item["shuffle_seed"]), "case_id": case_id, "pred": letter,
                     "pred_type": kind, "correct": kind == CORRECT_TYPE,
                     "status": "ok" if letter in LETTERS else "parse_error",
                     **{c: item[c] for c in CASE_META if c in item.index}})  # fmt: skip
    return pd.DataFrame(rows)


def write_analysis(result: CasesAnalysis, out_dir: Path) -> None:
    """Every table as parquet, plus the across-model roster, for the report stage."""
    for name, table in result.tables.items():
        write_parquet(out_dir / f"{name}.parquet", table)
    meta = {"aggregate_models": list(result.aggregate_models), "notes": result.notes}
    write_json(out_dir / "analysis.json", meta)


def read_analysis(out_dir: Path) -> CasesAnalysis:
    """The tables written by :func:`write_analysis`."""
    meta = out_dir / "analysis.json"
    if not meta.exists():
        raise FileNotFoundError(f"{meta} not found: run stages/cases_analyze.py first")
    tables = {p.stem: pd.read_parquet(p) for p in sorted(out_dir.glob("*.parquet"))}
    saved = json.loads(meta.read_text(encoding="utf-8"))
    return CasesAnalysis(tables, tuple(saved["aggregate_models"]), dict(saved.get("notes", {})))


def _num(value: Any) -> float | None:
    """JSON-safe rounded number (None for NaN)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(float(value), 6)


def summary(result: CasesAnalysis) -> dict[str, Any]:
    """Nested DVC metrics: per model accuracy per seed, robustness, error shares, trends."""
    t = result.tables
    out: dict[str, Any] = {"aggregate_models": list(result.aggregate_models), "models": {}}
    for r in t["overall"].to_dict("records"):
        entry = out["models"].setdefault(str(r["model"]), {"kind": r["kind"], "seeds": {}})
        keys = ("n", "accuracy", "ci_low", "ci_high", "macro_accuracy", "parse_error_rate",
                "empty_rate")  # fmt: skip
        entry["seeds"][str(r["seed"])] = {k: _num(r[k]) for k in keys}
    for r in t["robustness"].to_dict("records"):
        robust = None if r["robust"] is pd.NA else bool(r["robust"])
        out["models"][str(r["model"])]["robustness"] = {
            "max_gap_pp": _num(r["max_gap_pp"]), "robust": robust,
        }  # fmt: skip
    for r in t["error_types_by_model"].to_dict("records"):
        shares = {e: _num(r[f"share_{e}"]) for e in ERROR_TYPES}
        if r["model"] == POOLED:
            out["pooled_error_type_shares"] = shares
        else:
            out["models"][str(r["model"])]["error_type_shares"] = shares
    for r in t["weird_trends"].to_dict("records"):
        name = "accuracy" if r["measure"] == "accuracy" else f"error_share.{r['error_type']}"
        out.setdefault("weird_trends", {}).setdefault(str(r["model"]), {})[name] = {
            k: _num(r[k]) for k in ("z", "p_value", "q_value", "delta_pp")
        }
    return out


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _empty_figure(target: Path, title: str, reason: str) -> Path:
    """A figure that says why it has no data: every image DVC lists exists for every roster."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 1.6))
    ax.axis("off")
    ax.set_title(title, fontsize=10)
    ax.text(0.5, 0.4, f"no data: {reason}", ha="center", va="center", fontsize=8, wrap=True)
    return save_png(fig, target, 110, no_data=reason)


def _heatmap(
    table: pd.DataFrame,
    target: Path,
    title: str,
    vmax: float = 1.0,
    marks: Any = None,
    reason: str = "no rows",
) -> Path:
    """Annotated heatmap; cells where ``marks`` is True get a dagger (small n).

    An empty table gives a figure stating ``reason`` instead (the plot is still listed in
    dvc.yaml, e.g. when every roster entry is a baseline).
    """
    if table.empty:
        return _empty_figure(target, title, reason)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.6 + 0.95 * table.shape[1], 1.2 + 0.42 * table.shape[0]))
    image = ax.imshow(table.to_numpy(float), vmin=0, vmax=vmax, cmap="viridis", aspect="auto")
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=30, ha="right")
    ax.set_yticks(range(table.shape[0]), [str(i) for i in table.index])
    for r in range(table.shape[0]):
        for c in range(table.shape[1]):
            value = table.iat[r, c]
            mark = "†" if marks is not None and bool(marks.iat[r, c]) else ""
            text, color = ("–", "grey") if pd.isna(value) else (f"{value:.2f}{mark}", "white")
            ax.text(c, r, text, ha="center", va="center", fontsize=7, color=color)
    fig.colorbar(image, ax=ax)
    ax.set_title(title, fontsize=10)
    return save_png(fig, target, 110)


def _shares(table: pd.DataFrame, key: str, pooled: bool) -> pd.DataFrame:
    rows = table[table["model"] == POOLED] if pooled else table
    shares = rows.set_index(key)[[f"share_{e}" for e in ERROR_TYPES]]
    return shares.set_axis(list(ERROR_TYPES), axis=1)


def _bin_lines(result: CasesAnalysis, target: Path) -> Path:
    """Accuracy per model (left) and pooled error-type shares (right) along WEIRD bins 0–5.

    A panel with nothing to draw says why in its middle (e.g. no model to pool when the roster
    holds only baselines), never a blank frame.
    """
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    trends = result.tables["weird_trends"]
    acc = trends[trends["measure"] == "accuracy"] if not trends.empty else trends
    for r in acc.to_dict("records"):
        left.plot(BINS, [r[f"p_bin{b}"] for b in BINS], marker="o", label=str(r["model"]),
                  color=colour_of(str(r["model"])))  # fmt: skip
    shares = result.tables["error_types_by_weird_bin"]
    pooled = shares[shares["model"] == POOLED].set_index("weird_bin").reindex(list(BINS))
    columns = [f"share_{e}" for e in ERROR_TYPES]
    drawn = bool(pooled[columns].notna().to_numpy().any()) if not shares.empty else False
    for e in ERROR_TYPES if drawn else ():
        right.plot(BINS, pooled[f"share_{e}"], marker="o", label=f"type {e}")
    empty = {
        "accuracy": None if len(acc) else result.notes.get("weird_trends", "no accuracy rows"),
        f"error-type share ({POOLED})": None if drawn else result.notes.get(
            "pooled", result.notes.get("error_types_by_weird_bin", "no errors to count")),
    }  # fmt: skip
    for ax, label in ((left, "accuracy"), (right, f"error-type share ({POOLED})")):
        ax.set_xlabel("WEIRD bin")
        ax.set_ylabel(label)
        ax.set_ylim(0, 1)
        if empty[label]:
            ax.text(0.5, 0.5, f"nothing to draw: {empty[label]}", transform=ax.transAxes,
                    ha="center", va="center", fontsize=8, wrap=True)  # fmt: skip
        else:
            ax.legend(fontsize=7)
    return save_png(fig, target, 110)


def write_plots(result: CasesAnalysis, out_dir: Path) -> list[Path]:
    """Every figure of the report as PNG under ``out_dir``; an empty table's figure says why."""
    t = result.tables
    pooled_reason = result.notes.get("pooled", "no errors to count")
    overall = t["overall"].assign(setting=lambda f: "seed " + f["seed"].astype(str))
    paths: list[Path | None] = [
        accuracy_by_setting(overall, out_dir / "accuracy.png", "cases: accuracy by seed")
    ]
    for key, pooled in (("model", False), ("continent", True), ("domain", True)):
        table = t[f"error_types_by_{key}"]
        shares = _shares(table, "model" if key == "model" else key, pooled)
        paths.append(_heatmap(shares, out_dir / f"error_types_by_{key}.png",
                              f"error-type share (errors of type / errors) by {key}",
                              reason=pooled_reason if pooled else "no errors"))  # fmt: skip
    grid = t["across_models_by_continent_domain"]
    for column, vmax in (("mean_accuracy", 1.0), ("sd_accuracy", 0.5)):
        title = f"{column.replace('_', ' ')} across models († n<10)"
        target = out_dir / f"continent_domain_{column}.png"
        if grid.empty:
            reason = result.notes.get("across_models_by_continent_domain", pooled_reason)
            paths.append(_empty_figure(target, title, reason))
            continue
        marks = grid.pivot(index="continent", columns="domain", values="small_n").fillna(False)
        cells = grid.pivot(index="continent", columns="domain", values=column)
        paths.append(_heatmap(cells, target, title, vmax, marks))
    paths.append(_bin_lines(result, out_dir / "weird_bins.png"))
    return [p for p in paths if p is not None]


def write_report(result: CasesAnalysis, out_dir: Path) -> list[Path]:
    """Plots, the per-section CSVs and ``tables.md`` under ``out_dir``."""
    from cultureqa.cases import sections

    plots = write_plots(result, out_dir) + sections.section_figures(result, out_dir)
    write_text(out_dir / "tables.md", sections.document(result, out_dir))
    return plots


def run_metrics(part: pd.DataFrame) -> dict[str, float]:
    """Metrics of one model on one seed under stable dotted names, for its MLflow run."""
    pred = prepare(part)
    row = overall_table(pred).iloc[0]
    names = {"accuracy": "accuracy", "ci_low": "accuracy.ci_low", "ci_high": "accuracy.ci_high",
             "n": "n", "macro_accuracy": "macro_accuracy", "parse_error_rate": "parse_error_rate",
             "empty_rate": "empty_rate", "error_rate": "error_rate"}  # fmt: skip
    metrics = {name: row[column] for column, name in names.items()}
    for column in ("domain", "continent", "weird_bin"):
        for r in accuracy_table(pred, [column]).to_dict("records"):
            metrics[metric_key(SLICE, "acc", column, r[column])] = r["accuracy"]
    shares = error_shares(pred, [], ()).iloc[0]
    metrics.update({f"error_share.{e}": shares[f"share_{e}"] for e in ERROR_TYPES})
    metrics.update(usage_metrics(part))
    return {k: float(v) for k, v in metrics.items() if pd.notna(v)}


def log_entry_runs(
    root: Path,
    experiment: str,
    run_info: dict[str, Any],
    predictions: pd.DataFrame,
    plots: Sequence[Path],
    uri: str | None = None,
    sweep: dict[str, str] | None = None,
) -> dict[str, str]:
    """One finished MLflow run per seed of one roster entry; returns ``{seed: run_id}``.

    The report's ``plots`` go to the DVC experiment's parent run (named after ``sweep``).
    """
    from cultureqa.runs.tracking import DatasetRef, log_runs

    details = run_info["details"]
    gap = details["robustness"]["max_gap_pp"]

    subset = details.get("subset") or {}
    coverage = {f"subset.{k}": float(subset[k]) for k in ("cases", "of") if k in subset}

    def metrics_of(part: pd.DataFrame) -> dict[str, float]:
        return (
            run_metrics(part)
            | coverage
            | ({"robustness.max_gap_pp": float(gap)} if gap is not None else {})
        )

    def dataset_of(seed: str) -> DatasetRef:
        items = details["items"][seed]
        return DatasetRef(f"cases/seed{seed}", str(items["md5"]), str(items["path"]))

    return log_runs(
        root, experiment, run_info, predictions, "seed", metrics_of, dataset_of, uri, sweep, plots
    )
