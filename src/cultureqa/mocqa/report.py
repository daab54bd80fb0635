"""ID-MoCQA report: the paper's tables (markdown + CSV), figures (PNG) and MLflow runs.

Tables go to ``reports/mocqa/`` (the human-readable report, a DVC output) and small plot data and
the summary to ``metrics/mocqa/analysis/`` (DVC metrics and plots, kept in git). Figures are the
ones the paper discusses: first-hop × second-hop breakdown bars per model and language, a CoT −
zero-shot heatmap, and accuracy per province.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.analysis.figures import colour_of, save_png
from cultureqa.analysis.plots import heatmap
from cultureqa.analysis.roster import key_by_roster
from cultureqa.analysis.tables import to_markdown
from cultureqa.core.io import write_csv, write_json, write_text
from cultureqa.evaluation.report import collect_predictions as collect_all
from cultureqa.knowledge.provinces import CANONICAL_PROVINCES
from cultureqa.mocqa import metrics as m
from cultureqa.mocqa.paired import DIFFERENCE, EQUIVALENT
from cultureqa.mocqa.question_analysis import QuestionAnalysis
from cultureqa.mocqa_shared.schema import CLUE_TYPES
from cultureqa.runs.tracking import SLICE, metric_key, usage_metrics

_COLOURS = {
    "both_right": "#1a9850",
    "province_only": "#91cf60",
    "answer_only": "#fee08b",
    "both_wrong": "#d73027",
}


@dataclass(frozen=True)
class ReportPaths:
    """Where the analysis writes: DVC metrics/plot data, and the report folder."""

    metrics: Path
    reports: Path


def collect_predictions(eval_dir: Path) -> pd.DataFrame:
    """Every roster entry × prompt style's predictions under ``data/eval/mocqa``."""
    return collect_all(eval_dir, "*/*/predictions.parquet")


def percent(frame: pd.DataFrame) -> pd.DataFrame:
    """Fractions as percentages with one decimal, the paper's table style."""
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_float_dtype(out[column]):
            out[column] = out[column].map(lambda v: "–" if pd.isna(v) else f"{100 * v:.1f}")
    return out


def write_report(
    preds: pd.DataFrame,
    paths: ReportPaths,
    human: pd.DataFrame | None = None,
    questions: QuestionAnalysis | None = None,
    bootstrap: tuple[int, int] = (2000, 0),
    margin: float = m.DELTA_MARGIN,
    **shared: Any,
) -> dict[str, Any]:
    """Write every table and figure; return the summary written as DVC metrics.

    Args:
        preds: All model predictions (keyed by roster entry here).
        paths: Output folders.
        human: Scored human answer sheets (rows shaped like predictions), if any.
        questions: The lexical (and, when a model ran it, semantic) question analysis.
        bootstrap: (resamples, seed) of the paired CoT − zero-shot intervals.
        margin: ``mocqa_eval.margin``: a delta reads "no difference" only within ± margin.
        shared: Keyword arguments for :func:`cultureqa.mocqa.metrics.shared_errors`.
    """
    preds = key_by_roster(preds)
    rows = pd.concat([preds, human], ignore_index=True) if human is not None else preds
    slices = m.all_slices(rows)
    errors = m.shared_errors(preds, **shared)
    tables = {
        "main_multi_hop": m.main_table(rows, "multi_hop"),
        "main_first_hop": m.main_table(rows, "first_hop"),
        "slice_ci": slices["clue_type_language"],
        "breakdown": slices["language"][[*m.KEYS, "language", "n", *m.OUTCOMES]],
        "cot_deltas": m.cot_deltas(preds, *bootstrap, margin=margin),
        "clue_type_range": m.clue_type_range(preds),
        "shared_errors_by_topic": errors.by_topic,
        "shared_errors_by_province": errors.by_province,
    }
    for name, table in {**tables, "shared_errors_items": errors.items}.items():
        write_csv(paths.reports / f"{name}.csv", table)
    for name, table in slices.items():
        write_csv(paths.reports / f"by_{name}.csv", table)
    questions = questions or QuestionAnalysis()
    for name, table in questions.tables().items():
        write_csv(paths.reports / f"{name}.csv", table)
    write_text(paths.reports / "tables.md", _markdown(tables) + questions.markdown())
    summary = m.summary(slices)
    write_json(paths.metrics / "summary.json", summary)
    _figures(slices, tables["cot_deltas"], paths.reports)
    return summary


def _labels(frame: pd.DataFrame) -> pd.Series:
    """``model (prompt)``, or just ``human`` for the human rows."""
    label = frame["model"].astype(str) + " (" + frame["prompt"].astype(str) + ")"
    return label.where(frame["prompt"] != m.HUMAN, frame["model"].astype(str))


_TITLES = {
    "main_multi_hop": "Multi-hop accuracy (%) by clue type and language",
    "main_first_hop": "First-hop (province) accuracy (%) by clue type and language",
    "breakdown": "Both hops: right/right, province only, answer only, wrong/wrong (%)",
    "slice_ci": "Accuracy (%) per clue type and language with Wilson 95% intervals",
    "cot_deltas": "CoT − zero-shot (percentage points): paired over items, bootstrap 95% "
    "interval and exact McNemar p. Reading: * = a difference (McNemar, Holm over the table), "
    "= = no difference beyond ± mocqa_eval.margin (Tango TOST, Holm), unmarked = inconclusive "
    "at this n (the reading column gives the items that would decide it)",
    "clue_type_range": "Best − worst clue type, multi-hop accuracy (%)",
    "shared_errors_by_topic": "Items every model gets wrong with the same option, by topic",
    "shared_errors_by_province": "Items every model gets wrong with the same option, by province",
}


def _markdown(tables: dict[str, pd.DataFrame]) -> str:
    sections = ["# ID-MoCQA evaluation\n"]
    shown_as = {"slice_ci": slice_ci_display, "cot_deltas": delta_display}
    for name, table in tables.items():
        if name in shown_as:
            shown = shown_as[name](table)
        else:
            shown = table if name.startswith("shared") else percent(table)
        body = to_markdown(shown) if len(table) else "_(none)_\n"
        sections += [f"\n## {_TITLES[name]}\n", body]
    return "\n".join(sections)


def _interval(value: float, low: float, high: float, signed: bool = False) -> str:
    """``62.3 [50.1, 73.4]`` in percent (points when ``signed``), or ``–`` when undefined."""
    if pd.isna(value) or pd.isna(low) or pd.isna(high):
        return "–"
    form = "{:+.1f}" if signed else "{:.1f}"
    parts = [form.format(100 * v) for v in (value, low, high)]
    return f"{parts[0]} [{parts[1]}, {parts[2]}]"


def slice_ci_display(table: pd.DataFrame) -> pd.DataFrame:
    """Per-slice accuracies with their intervals, one readable cell per metric."""
    out = table[[*m.KEYS, "language", "clue_type", "n"]].copy()
    for name in ("multi_hop", "first_hop"):
        out[name.replace("_", "-")] = [
            _interval(r[name], r[f"{name}_ci_low"], r[f"{name}_ci_high"])
            for r in table.to_dict("records")
        ]
    return out


MARKS = {DIFFERENCE: " *", EQUIVALENT: " ="}
"""The mark of a delta's reading; an inconclusive delta has none."""


def _delta_cell(row: dict[str, Any], name: str) -> str:
    """``+3.2 [-1.0, +7.5]``, marked by its reading (* a difference, = none beyond the margin)."""
    low, high = row[f"{name}_delta_ci_low"], row[f"{name}_delta_ci_high"]
    mark = MARKS.get(str(row.get(f"{name}_reading")), "")
    return _interval(row[f"{name}_delta"], low, high, signed=True) + mark


def _reading_cell(row: dict[str, Any], name: str) -> str:
    """The reading, with the items that would decide an inconclusive one."""
    needed = row.get(f"{name}_n_to_decide")
    reading = str(row.get(f"{name}_reading"))
    return reading + (f" (n≈{int(needed)})" if needed is not None and pd.notna(needed) else "")


def delta_display(table: pd.DataFrame) -> pd.DataFrame:
    """CoT − zero-shot rows: both accuracies, the delta with its interval and p, per metric."""
    if table.empty:
        return table
    out = table[["model", "language", "clue_type", "n"]].copy()
    for name in m.DELTA_METRICS:
        label = name.replace("_", "-")
        records = table.to_dict("records")
        out[f"{label} zero-shot"] = [f"{100 * r[f'{name}_zero_shot']:.1f}" for r in records]
        out[f"{label} CoT"] = [f"{100 * r[f'{name}_cot']:.1f}" for r in records]
        out[f"{label} Δ [95% CI]"] = [_delta_cell(r, name) for r in records]
        out[f"{label} p"] = [f"{r[f'{name}_p']:.3g}" for r in records]
        out[f"{label} reading"] = [_reading_cell(r, name) for r in records]
    return out


def _figures(slices: dict[str, pd.DataFrame], deltas: pd.DataFrame, out: Path) -> None:
    by_lang = slices["language"]
    human = by_lang["prompt"] == m.HUMAN
    for prompt in by_lang.loc[~human, "prompt"].unique():
        rows = by_lang[(by_lang["prompt"] == prompt) | human]
        breakdown_bars(rows, out / f"breakdown_{prompt}.png", prompt)
    delta_heatmap(deltas, out / "cot_delta_heatmap.png")
    clue_type_intervals(slices["clue_type_language"], out / "accuracy_by_clue_type.png")
    province = slices["province"].assign(label=_labels)
    for metric in ("multi_hop", "first_hop"):
        table = province.pivot_table(index="province", columns="label", values=metric)
        order = [p for p in CANONICAL_PROVINCES if p in table.index]
        title = f"ID-MoCQA {metric.replace('_', '-')} accuracy by province"
        heatmap(table.reindex(order), out / f"{metric}_by_province.png", title)


def breakdown_bars(table: pd.DataFrame, target: Path, prompt: str) -> Path:
    """Stacked 4-way breakdown bars, one per model × language."""
    plt = _pyplot()
    labels = [f"{a}\n{b}" for a, b in zip(table["model"], table["language"], strict=True)]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(labels) + 2), 4))
    bottom = pd.Series(0.0, index=table.index)
    for name in m.OUTCOMES:
        ax.bar(labels, table[name], bottom=bottom, color=_COLOURS[name], label=name)
        bottom = bottom + table[name]
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of items")
    ax.set_title(f"ID-MoCQA first-hop × second-hop outcomes ({prompt})")
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(plt, fig, target)


def delta_heatmap(deltas: pd.DataFrame, target: Path) -> Path:
    """CoT − zero-shot multi-hop deltas (pp): models × ``<lang>.<clue type>``, diverging scale."""
    plt = _pyplot()
    if deltas.empty:
        fig, ax = plt.subplots(figsize=(5, 1.5))
        ax.axis("off")
        ax.text(0.5, 0.5, "no model was evaluated with both prompt styles", ha="center")
        return _save(plt, fig, target)
    cells = deltas.assign(column=deltas["language"] + "." + deltas["clue_type"])
    table = 100 * cells.pivot_table(index="model", columns="column", values="multi_hop_delta")
    order = [f"{x}.{c}" for x in ("en", "id") for c in (*CLUE_TYPES, "all")]
    table = table[[c for c in order if c in table.columns]]
    bound = max(1.0, float(table.abs().max().max()))
    fig, ax = plt.subplots(figsize=(1.5 + 0.6 * table.shape[1], 1.2 + 0.45 * table.shape[0]))
    image = ax.imshow(table.to_numpy(float), cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto")
    ax.set_xticks(range(table.shape[1]), list(table.columns), rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(table.shape[0]), list(table.index), fontsize=7)
    low = 100 * cells.pivot_table(index="model", columns="column", values="multi_hop_delta_ci_low")
    high = 100 * cells.pivot_table(
        index="model", columns="column", values="multi_hop_delta_ci_high"
    )
    low, high = low.reindex_like(table), high.reindex_like(table)
    reading = cells.pivot_table(
        index="model", columns="column", values="multi_hop_reading", aggfunc="first"
    ).reindex_like(table)
    for r, model in enumerate(table.index):
        for c, column in enumerate(table.columns):
            value, lo, hi = table.at[model, column], low.at[model, column], high.at[model, column]
            if pd.isna(value):
                continue
            mark = MARKS.get(str(reading.at[model, column]), "").strip()
            text = f"{value:+.1f}{mark}\n[{lo:+.0f}, {hi:+.0f}]"
            ax.text(c, r, text, ha="center", va="center", fontsize=5)
    fig.colorbar(image, ax=ax, label="pp")
    ax.set_title(
        "ID-MoCQA CoT − zero-shot, multi-hop (paired 95% CI; * difference, = none beyond the "
        "margin, Holm)",
        fontsize=8,
    )
    return _save(plt, fig, target)


def clue_type_intervals(cells: pd.DataFrame, target: Path) -> Path:
    """Multi-hop accuracy per clue type with Wilson 95% error bars: one panel per language."""
    plt = _pyplot()
    languages = [x for x in ("en", "id") if x in set(cells["language"])] or ["en"]
    fig, axes = plt.subplots(1, len(languages), figsize=(5.5 * len(languages), 3.6), squeeze=False)
    labelled = cells.assign(label=_labels)
    series = sorted(labelled["label"].unique())
    width = 0.8 / max(1, len(series))
    for ax, language in zip(axes[0], languages, strict=True):
        part = labelled[labelled["language"] == language]
        for k, label in enumerate(series):
            rows = part[part["label"] == label].set_index("clue_type").reindex(CLUE_TYPES)
            x = [i - 0.4 + width * (k + 0.5) for i in range(len(CLUE_TYPES))]
            error = [rows["multi_hop"] - rows["multi_hop_ci_low"]]
            error.append(rows["multi_hop_ci_high"] - rows["multi_hop"])
            first = part[part["label"] == label].iloc[:1]
            model = str(first["model"].iloc[0]) if len(first) else label
            marker = "s" if "(cot)" in label else "o"  # colour: the model; marker: the prompt
            ax.errorbar(x, rows["multi_hop"], yerr=error, fmt=marker, ms=3, capsize=2,
                        label=label, color=colour_of(model))  # fmt: skip
        ax.axhline(1 / 3, color="grey", lw=0.8, ls="--")
        ax.set_xticks(range(len(CLUE_TYPES)), CLUE_TYPES, rotation=30, ha="right", fontsize=7)
        ax.set_ylim(0, 1)
        ax.set_title(f"multi-hop accuracy, {language} (Wilson 95% CI; dashed: chance)", fontsize=8)
    axes[0][-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(plt, fig, target)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # headless: stages run without a display
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, target: Path) -> Path:
    return save_png(fig, target, 120)


def run_metrics(part: pd.DataFrame) -> dict[str, float]:
    """MLflow metrics of one (model, prompt, language) run, under stable dotted names.

    ``multi_hop`` (also as ``accuracy``, the cross-family headline), ``first_hop`` (each with
    ``.ci_low``/``.ci_high``), ``breakdown.<outcome>``, the rates,
    then slices: ``slice.acc.<clue type>.<lang>`` and ``slice.first_hop.<clue type>.<lang>``
    (e.g. ``slice.acc.entity.en``), ``slice.acc.province.<name>``, ``slice.acc.topic.<name>``;
    plus tokens, cost and latency percentiles.
    """
    top = m.slice_table(part, []).iloc[0]
    out: dict[str, float] = {"n": float(top["n"])}
    for name in ("multi_hop", "first_hop"):
        out |= {name: top[name], f"{name}.ci_low": top[f"{name}_ci_low"]}
        out[f"{name}.ci_high"] = top[f"{name}_ci_high"]
    # the headline under the name every family uses, so MLflow compares across benchmarks
    out |= {f"accuracy{s}": out[f"multi_hop{s}"] for s in ("", ".ci_low", ".ci_high")}
    out |= {f"breakdown.{o}": top[o] for o in m.OUTCOMES}
    rates = ("parse_error_rate", "province_parse_error_rate", "answer_parse_error_rate")
    out |= {r: top[r] for r in (*rates, "empty_rate", "error_rate")}
    for row in m.slice_table(part, ["clue_type", "language"]).to_dict("records"):
        cell = (row["clue_type"], row["language"])
        out[metric_key(SLICE, "acc", *cell)] = row["multi_hop"]
        out[metric_key(SLICE, "first_hop", *cell)] = row["first_hop"]
        out[metric_key(SLICE, "n", *cell)] = row["n"]
    for column in ("province", "topic"):
        for row in m.slice_table(part, [column]).to_dict("records"):
            out[metric_key(SLICE, "acc", column, row[column])] = row["multi_hop"]
            out[metric_key(SLICE, "first_hop", column, row[column])] = row["first_hop"]
    out |= usage_metrics(part)
    return {k: float(v) for k, v in out.items()}


def log_runs(
    root: Path,
    experiment: str,
    run: dict[str, Any],
    preds: pd.DataFrame,
    uri: str | None = None,
    sweep: dict[str, str] | None = None,
    figures: Sequence[Path] = (),
) -> list[str]:
    """One MLflow run per language of one (model, prompt) evaluation; returns the run ids.

    ``uri`` is ``tracking.uri`` (a tracking server); None logs into ``<root>/mlflow.db``.
    ``sweep`` names the DVC experiment's parent run, which gets the report's ``figures``.
    """
    from cultureqa.runs.tracking import DatasetRef
    from cultureqa.runs.tracking import log_runs as log_record_runs

    data = run["provenance"]["dataset"]
    dataset = DatasetRef("mocqa", str(data.get("md5")), str(data.get("path")))
    runs = log_record_runs(
        root, experiment, run, preds, "language", run_metrics, lambda _: dataset, uri,
        sweep, figures,
    )  # fmt: skip
    return list(runs.values())
