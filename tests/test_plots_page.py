"""``make plots`` leaves report figures without data out of DVC's page and names them.

DVC's own image renderer (``dvc_render``) writes the page as ``dvc plots diff`` does, with the
project's template; one experiment's copy of a figure is a real plot, the other's the no-data
note a baseline-only experiment draws (``cultureqa.cases.report``). The rewrite must drop the
note's box, keep the plot's, and list what it left out with its revision and reason.
"""

from __future__ import annotations

from pathlib import Path

from dvc_render.html import render_html
from dvc_render.image import ImageRenderer

from cultureqa.analysis.figures import save_png
from cultureqa.cases.report import _empty_figure, _pyplot
from cultureqa.runs.plots_page import main, no_data_reason

ROOT = Path(__file__).resolve().parents[1]
REASON = "every roster entry is a baseline"


def _page(tmp_path: Path) -> Path:
    static = tmp_path / "dvc_plots" / "static"
    static.mkdir(parents=True)
    fig, ax = _pyplot().subplots()
    ax.bar(["a", "b"], [0.4, 0.6])
    save_png(fig, static / "model_reports_cases_weird_bins.png")
    _empty_figure(static / "rnd_reports_cases_weird_bins.png", "WEIRD bins", REASON)
    points = [{"rev": rev, "src": f"static/{rev}_reports_cases_weird_bins.png"}
              for rev in ("model", "rnd")]  # fmt: skip
    page = tmp_path / "dvc_plots" / "index.html"
    renderer = ImageRenderer(points, name="reports/cases/weird_bins.png")
    render_html([renderer], page, ROOT / ".dvc" / "plots" / "offline.html")
    return page


def test_a_figure_without_data_is_named_not_drawn(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    page = _page(tmp_path)
    static = page.parent / "static"
    assert no_data_reason((static / "rnd_reports_cases_weird_bins.png").read_bytes()) == REASON
    assert no_data_reason((static / "model_reports_cases_weird_bins.png").read_bytes()) is None
    before = page.read_text(encoding="utf-8")
    assert "static/rnd_reports_cases_weird_bins.png" in before  # planted: DVC shows the note
    assert main([str(page)]) == 0
    after = page.read_text(encoding="utf-8")
    assert "static/rnd_reports_cases_weird_bins.png" not in after
    assert "static/model_reports_cases_weird_bins.png" in after
    assert (
        f"<li><code>reports/cases/weird_bins.png</code> in <code>rnd</code>: {REASON}</li>" in after
    )
    printed = capsys.readouterr().out
    assert f"left out reports/cases/weird_bins.png of rnd: no data: {REASON}" in printed
    assert main([str(page)]) == 0 and page.read_text(encoding="utf-8") == after  # idempotent


def test_a_missing_image_file_is_named_not_a_traceback(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    page = _page(tmp_path)
    (page.parent / "static" / "model_reports_cases_weird_bins.png").unlink()  # planted
    assert main([str(page)]) == 0
    after = page.read_text(encoding="utf-8")
    assert "static/model_reports_cases_weird_bins.png</li>" in after
    assert '<img src="static/model_reports_cases_weird_bins.png">' not in after
    printed = capsys.readouterr().out
    assert (
        "left out reports/cases/weird_bins.png of model: image file missing: "
        "static/model_reports_cases_weird_bins.png" in printed
    )
