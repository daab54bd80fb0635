"""What every report figure shares: a width that fits a page, and one colour per model everywhere.

- **Width.** Figures grow with their data (settings, clue types × languages, roster size) and
  legends placed outside the axes; saved at a fixed dpi, the ID-MoCQA panels overflowed a 1400 px
  page. :func:`save_png` saves the tight bounding box (outside legends included) at the given
  dpi, lowered where needed so the PNG is at most :data:`MAX_WIDTH_PX` wide.
- **Colour.** matplotlib's colour cycle follows plotting order, so a model's colour changed with
  the roster and between experiments. :func:`colour_of` maps a model id to a colour by a stable
  hash (the baselines have fixed ones), so a model keeps its colour across plots and experiments.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from cultureqa.core.io import atomic_path

MAX_WIDTH_PX = 1400
"""The page width report images must fit (a README or MLflow artifact view at 1400 px)."""
PAD_INCHES = 0.05
FIXED = {"random": "#7f7f7f", "first-option": "#8c564b", "human": "#000000"}
"""Baselines and human rows: the same neutral colours in every figure."""
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#e377c2", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#f7b6d2", "#dbdb8d", "#9edae5",
)  # fmt: skip
"""tab20 without its greys and browns (kept for :data:`FIXED`)."""


def colour_of(model_id: str) -> str:
    """The colour of ``model_id`` in every figure: fixed for baselines, else a stable hash."""
    if model_id in FIXED:
        return FIXED[model_id]
    digest = hashlib.sha256(model_id.encode("utf-8")).digest()
    return PALETTE[int.from_bytes(digest[:4], "big") % len(PALETTE)]


NO_DATA = "no data: "
"""How the PNG text chunk ``Description`` of a figure without data starts (then its reason).

A figure that ``dvc.yaml`` lists must exist for every roster, so one without data is drawn as a
note; ``make plots`` reads this chunk to leave such figures out of its page and name them
(:mod:`cultureqa.runs.plots_page`)."""


def save_png(fig: Any, target: Path, dpi: int = 120, no_data: str | None = None) -> Path:
    """Save ``fig``'s tight bounding box as PNG, at most :data:`MAX_WIDTH_PX` wide; close it.

    ``no_data``: the reason the figure has no data, written into the PNG (:data:`NO_DATA`).
    """
    import matplotlib.pyplot as plt

    fig.tight_layout()
    box = fig.get_tightbbox(fig.canvas.get_renderer())
    inches = box.width + 2 * PAD_INCHES
    used = min(float(dpi), (MAX_WIDTH_PX - 2) / inches)
    metadata = {"Description": NO_DATA + no_data} if no_data is not None else None
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format="png", dpi=used, bbox_inches="tight", pad_inches=PAD_INCHES,
                    metadata=metadata)  # fmt: skip
    plt.close(fig)
    return target
