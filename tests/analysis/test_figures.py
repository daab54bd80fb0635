"""Report figures fit a 1400 px page and give a model the same colour in every figure."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from cultureqa.analysis.figures import FIXED, MAX_WIDTH_PX, PALETTE, colour_of
from cultureqa.analysis.plots import accuracy_by_setting
from cultureqa.mocqa.report import clue_type_intervals
from cultureqa.mocqa_shared.schema import CLUE_TYPES


def _width(path: Path) -> int:
    with Image.open(path) as image:
        return int(image.size[0])


def _overall(models: list[str], settings: int) -> pd.DataFrame:
    rows = [{"model": m, "setting": f"mcq-province-{k:02d}", "accuracy": 0.5, "ci_low": 0.4,
             "ci_high": 0.6} for m in models for k in range(settings)]  # fmt: skip
    return pd.DataFrame(rows)


def test_a_wide_figure_is_saved_within_the_page(tmp_path: Path) -> None:
    target = accuracy_by_setting(_overall(["m1", "random"], 14), tmp_path / "a.png", "wide")
    assert 1000 < _width(target) <= MAX_WIDTH_PX  # 18 in at 120 dpi would be 2184 px


def test_the_mocqa_panels_with_an_outside_legend_fit(tmp_path: Path) -> None:
    """Two language panels at 5.5 in each, plus a legend outside: 1500+ px before the cap."""
    rows = [{"model": m, "prompt": p, "language": lang, "clue_type": c, "multi_hop": 0.5,
             "multi_hop_ci_low": 0.4, "multi_hop_ci_high": 0.6}
            for m in ("gemma3-270m", "random", "first-option") for p in ("zero_shot", "cot")
            for lang in ("en", "id") for c in CLUE_TYPES]  # fmt: skip
    target = clue_type_intervals(pd.DataFrame(rows), tmp_path / "clue.png")
    assert _width(target) <= MAX_WIDTH_PX


def test_a_model_keeps_its_colour_whatever_else_is_plotted() -> None:
    assert colour_of("gemma3-270m") == colour_of("gemma3-270m") in PALETTE
    assert colour_of("random") == FIXED["random"] and colour_of("first-option") == "#8c564b"
    spread = {colour_of(f"model-{k}") for k in range(40)}
    assert len(spread) > 8 and not spread & set(FIXED.values())


@pytest.mark.parametrize("roster", [["gemma3-270m", "random"], ["random", "qwen", "gemma3-270m"]])
def test_bars_take_the_models_colour(roster: list[str], tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seen: dict[str, str] = {}
    real = plt.Axes.bar

    def bar(self: object, *args: object, **kwargs: object) -> object:
        seen[str(kwargs["label"])] = str(kwargs["color"])
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    plt.Axes.bar = bar  # type: ignore[method-assign]
    try:
        accuracy_by_setting(_overall(roster, 2), tmp_path / "b.png", "t")
    finally:
        plt.Axes.bar = real  # type: ignore[method-assign]
    assert seen == {m: colour_of(m) for m in roster}
