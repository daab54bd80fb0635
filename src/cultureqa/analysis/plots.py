"""Figures written by report stages as PNG (matplotlib, headless Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.io import atomic_path


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def accuracy_by_setting(overall: pd.DataFrame, target: Path, title: str) -> Path:
    """Grouped bars: one group per setting, one bar per model, Wilson 95% CI whiskers."""
    plt = _pyplot()
    settings = sorted(overall["setting"].unique())
    models = sorted(overall["model"].unique())
    width = 0.8 / max(1, len(models))
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(settings)), 4))
    for k, model in enumerate(models):
        part = overall[overall["model"] == model].set_index("setting").reindex(settings)
        xs = [i + k * width for i in range(len(settings))]
        err = [part["accuracy"] - part["ci_low"], part["ci_high"] - part["accuracy"]]
        ax.bar(xs, part["accuracy"], width, yerr=err, capsize=2, label=model)
    ax.set_xticks([i + width * (len(models) - 1) / 2 for i in range(len(settings))])
    ax.set_xticklabels(settings, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("accuracy (Wilson 95% CI)")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
    return target


def heatmap(table: pd.DataFrame, target: Path, title: str, fmt: str = "{:.2f}") -> Path:
    """Annotated heatmap of a 2-D table (rows × columns), e.g. province × model accuracy."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * table.shape[1], 1.0 + 0.4 * table.shape[0]))
    image = ax.imshow(table.to_numpy(dtype=float), vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=30, ha="right")
    ax.set_yticks(range(table.shape[0]), [str(i) for i in table.index])
    for (r, c), value in pd.DataFrame(table.to_numpy()).stack().items():
        ax.text(c, r, fmt.format(value), ha="center", va="center", fontsize=7, color="white")
    fig.colorbar(image, ax=ax)
    ax.set_title(title)
    fig.tight_layout()
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
    return target
