"""Figures written by report stages as PNG (matplotlib, headless Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.analysis.figures import colour_of, save_png
from cultureqa.core.io import declared_frame


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def accuracy_by_setting(overall: pd.DataFrame, target: Path, title: str) -> Path:
    """Grouped bars: one group per setting, one bar per model, Wilson 95% CI whiskers."""
    plt = _pyplot()
    overall = declared_frame(overall)
    settings = sorted(overall["setting"].unique())
    models = sorted(overall["model"].unique())
    width = 0.8 / max(1, len(models))
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(settings)), 4))
    for k, model in enumerate(models):
        part = overall[overall["model"] == model].set_index("setting").reindex(settings)
        xs = [i + k * width for i in range(len(settings))]
        err = [part["accuracy"] - part["ci_low"], part["ci_high"] - part["accuracy"]]
        ax.bar(xs, part["accuracy"], width, yerr=err, capsize=2, label=model,
               color=colour_of(str(model)))  # fmt: skip
    ax.set_xticks([i + width * (len(models) - 1) / 2 for i in range(len(settings))])
    ax.set_xticklabels(settings, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("accuracy (Wilson 95% CI)")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return save_png(fig, target, 120)


def heatmap(table: pd.DataFrame, target: Path, title: str, fmt: str = "{:.2f}") -> Path:
    """Annotated heatmap of a 2-D table (rows × columns), e.g. province × model accuracy."""
    plt = _pyplot()
    table = declared_frame(table)
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * table.shape[1], 1.0 + 0.4 * table.shape[0]))
    image = ax.imshow(table.to_numpy(dtype=float), vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=30, ha="right")
    ax.set_yticks(range(table.shape[0]), [str(i) for i in table.index])
    for (r, c), value in pd.DataFrame(table.to_numpy()).stack().items():
        ax.text(c, r, fmt.format(value), ha="center", va="center", fontsize=7, color="white")
    fig.colorbar(image, ax=ax)
    ax.set_title(title)
    return save_png(fig, target, 120)


def _save(fig: Any, target: Path) -> Path:
    return save_png(fig, target, 110)


def grouped_bars(table: pd.DataFrame, target: Path, title: str, ylabel: str) -> Path:
    """One group of bars per row of ``table`` (index on the x axis), one bar per column."""
    plt = _pyplot()
    table = declared_frame(table)
    fig, ax = plt.subplots(figsize=(max(5, 0.9 * len(table)), 3.6))
    width = 0.8 / max(1, table.shape[1])
    for k, column in enumerate(table.columns):
        xs = [i + k * width for i in range(len(table))]
        ax.bar(xs, table[column].to_numpy(float), width, label=str(column))
    ax.set_xticks([i + width * (table.shape[1] - 1) / 2 for i in range(len(table))])
    ax.set_xticklabels([str(i) for i in table.index])
    ax.set_xlabel(str(table.index.name or ""))
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, target)


def forest(table: pd.DataFrame, target: Path, title: str) -> Path:
    """Odds ratios with CI whiskers on a log axis; rows labelled by ``label``, NaN rows skipped.

    ``table`` has columns ``label, odds_ratio, ci_low, ci_high`` and optionally ``group`` (one
    colour per group, e.g. without / with continent fixed effects).
    """
    plt = _pyplot()
    table = declared_frame(table)
    rows = table.dropna(subset=["odds_ratio", "ci_low", "ci_high"]).reset_index(drop=True)
    labels = list(dict.fromkeys(rows["label"]))
    fig, ax = plt.subplots(figsize=(6.5, 1.2 + 0.22 * max(1, len(labels))))
    groups = list(dict.fromkeys(rows.get("group", pd.Series([""] * len(rows)))))
    for g, group in enumerate(groups):
        part = rows[rows["group"] == group] if "group" in rows else rows
        ys = [labels.index(label) + 0.25 * g for label in part["label"]]
        err = [part["odds_ratio"] - part["ci_low"], part["ci_high"] - part["odds_ratio"]]
        ax.errorbar(part["odds_ratio"], ys, xerr=err, fmt="o", ms=3, capsize=2, label=str(group))
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("odds ratio per level (95% CI, log scale)")
    ax.set_title(title, fontsize=10)
    if len(groups) > 1:
        ax.legend(fontsize=7)
    return _save(fig, target)


def level_lines(table: pd.DataFrame, target: Path, title: str, ylabel: str) -> Path:
    """One line per row of ``table`` over its columns (ordered levels), e.g. rate per level."""
    plt = _pyplot()
    table = declared_frame(table)
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for name, values in table.iterrows():
        ax.plot(list(table.columns), values.to_numpy(float), marker="o", label=str(name))
    ax.set_xlabel("level")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    return _save(fig, target)


def mean_sd_points(per_model: pd.DataFrame, key: str, target: Path, title: str) -> Path:
    """Accuracy per ``key`` across models: mean ± SD bars, each model's accuracy as a point.

    ``per_model`` has columns ``model``, ``key`` and ``accuracy`` (one row per model and key);
    keys are ordered by mean accuracy, and points are spread left to right in model order.
    """
    plt = _pyplot()
    per_model = declared_frame(per_model)
    stats = per_model.groupby(key)["accuracy"].agg(["mean", "std"]).sort_values("mean")
    models = sorted(per_model["model"].astype(str).unique())
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(stats)), 4))
    xs = range(len(stats))
    ax.bar(xs, stats["mean"], yerr=stats["std"].fillna(0), capsize=3, color="lightgrey",
           label="mean ± SD across models")  # fmt: skip
    spread = 0.5 / max(1, len(models))
    for k, model in enumerate(models):
        part = per_model[per_model["model"].astype(str) == model].set_index(key)["accuracy"]
        values = part.reindex(stats.index).to_numpy(float)
        offset = (k - (len(models) - 1) / 2) * spread
        ax.scatter([x + offset for x in xs], values, s=14, zorder=3, label=model)
    ax.set_xticks(list(xs), [str(i) for i in stats.index], rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, target)
