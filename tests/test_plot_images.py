"""Image plots of ``make plots PLOTS="diff A B"`` fit the page: none is cut on the right.

DVC's page puts the revisions of an image plot side by side in a row that hides its overflow, so
two 1400 px figures on a 1400 px page lost the right half of the second. The project's template
(``.dvc/plots/offline.html``) wraps them and scales each to the page; the page records how many
images reach past the right edge, which a headless Chromium reads back. The images here are
rendered by DVC's own renderer (``dvc_render``), as ``dvc plots diff`` does.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from dvc_render import render_html
from dvc_render.image import ImageRenderer

ROOT = Path(__file__).resolve().parents[1]


def _png(path: Path, width_px: int) -> None:
    fig = plt.figure(figsize=(width_px / 100, 4), dpi=100)
    fig.add_subplot().bar(["a", "b"], [0.3, 0.6])
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _page(tmp_path: Path, template: Path) -> str:
    out = tmp_path / "dvc_plots"
    out.mkdir(exist_ok=True)
    points = []
    for rev in ("exp-a", "exp-b"):
        _png(out / f"{rev}.png", 1400)
        points.append({"rev": rev, "src": str(out / f"{rev}.png")})
    page = out / f"{template.stem}.html"
    render_html([ImageRenderer(points, "reports/weird_bins.png")], page, template)
    return page.as_uri()


def test_two_revisions_of_a_wide_figure_are_both_whole(tmp_path: Path, browse: object) -> None:
    dom = browse(_page(tmp_path, ROOT / ".dvc/plots/offline.html"))  # type: ignore[operator]
    assert 'data-images-shown="2"' in dom
    assert 'data-images-cut="0"' in dom


def test_without_the_style_the_second_is_cut(tmp_path: Path, browse: object) -> None:
    """The check can fail: DVC's own layout, with only the recording script kept."""
    text = (ROOT / ".dvc/plots/offline.html").read_text(encoding="utf-8")
    bare = re.sub(r"<style>.*?</style>", "", text, flags=re.S)
    (tmp_path / "bare.html").write_text(bare, encoding="utf-8")
    dom = browse(_page(tmp_path, tmp_path / "bare.html"))  # type: ignore[operator]
    assert 'data-images-shown="2"' in dom and re.search(r'data-images-cut="[12]"', dom)
