"""DVC plots render in a real browser: every benchmark's plot, one panel per roster slot.

The plot data come from the stages' own functions (synthetic predictions); ``dvc plots show`` fills
the project's templates (``.dvc/plots/``) and writes the page with ``.dvc/plots/offline.html``,
which loads Vega from ``dvc_plots/vendor`` (installed from npm as ``make plots`` does). Headless
Chromium runs the page; the test reads back every drawn mark's accessible label and compares it
with the CSV it came from, so an empty or swapped plot (the old IndoCulture x/y mix-up) fails.
"""

from __future__ import annotations

import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from cultureqa.analysis.plotdata import slot_accuracy

ROOT = Path(__file__).resolve().parents[1]
SLOTS = {
    "model": "m-under-test",
    "baselines.random": "random",
    "baselines.first_option": "first-option",
}
VEGA_JS = ("vega/build/vega.min.js", "vega-lite/build/vega-lite.min.js",
           "vega-embed/build/vega-embed.min.js")  # fmt: skip


def _predictions(rng: np.random.Generator, **levels: list[object]) -> pd.DataFrame:
    grid = pd.MultiIndex.from_product(
        [list(SLOTS), *levels.values(), range(12)], names=["roster_entry", *levels, "item_id"]
    ).to_frame(index=False)
    grid["model"] = grid["roster_entry"].map(SLOTS)
    grid["correct"] = rng.random(len(grid)) < 0.5
    return grid


def plot_files(rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    """Each plot's data as the analyze stages write it."""
    clue = runpy.run_path(str(ROOT / "stages" / "mocqa_analyze.py"))["clue_plot_data"]
    mocqa = _predictions(rng, prompt=["zero_shot", "cot"], clue_type=["entity", "temporal"],
                         language=["en", "id"])  # fmt: skip
    human = mocqa.head(8).assign(roster_entry=None, model="human", prompt="human")
    cases = _predictions(rng, seed=["60", "40"], weird_bin=[0, 3, 5])
    return {
        "metrics/indoculture/accuracy_by_setting.csv": slot_accuracy(
            _predictions(rng, setting=["mcq-none-id", "completion-none-id"]), ["setting"]
        ),
        "metrics/mocqa/analysis/multi_hop_by_clue.csv": clue(pd.concat([mocqa, human])),
        "metrics/cases/weird_bins.csv": slot_accuracy(cases[cases["seed"] == "60"], ["weird_bin"]),
        "metrics/cases/accuracy.csv": slot_accuracy(cases, ["seed"]),
    }


def _dvc(cwd: Path, *args: str) -> None:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    done = subprocess.run(["dvc", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]


def marks(dom: str) -> list[dict[str, str]]:
    """Accessible labels of the drawn bars and points (``key: value; ...``) as dicts."""
    tags = re.findall(r"<path [^>]*>", dom)
    kinds = ('aria-roledescription="bar"', 'aria-roledescription="point"')
    labels = [re.search(r'aria-label="([^"]*)"', t) for t in tags if any(k in t for k in kinds)]
    return [dict(p.split(": ", 1) for p in m.group(1).split("; ")) for m in labels if m]


def test_every_benchmark_plot_is_drawn_per_roster_slot(
    tmp_path: Path, browse: object, vega_dir: Path
) -> None:
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    _dvc(tmp_path, "init", "--no-scm", "-q")
    shutil.copytree(ROOT / ".dvc" / "plots", tmp_path / ".dvc" / "plots")
    files = plot_files(np.random.default_rng(7))
    for path, frame in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(tmp_path / path, index=False)
    _dvc(tmp_path, "plots", "show", *files, "--html-template",
         ".dvc/plots/offline.html", "-o", "dvc_plots")  # fmt: skip
    vendor = tmp_path / "dvc_plots" / "vendor"
    vendor.mkdir()
    for script in VEGA_JS:
        shutil.copy2(vega_dir / "node_modules" / script, vendor)

    dom = browse((tmp_path / "dvc_plots" / "index.html").as_uri())  # type: ignore[operator]
    assert 'data-plots-failed=""' in dom and f'data-plots-ok="{len(files)}"' in dom
    drawn = [(m.get("roster slot"), _normalized(m.values())) for m in marks(dom)]
    assert len(drawn) == sum(len(frame) for frame in files.values())
    declared = _declared_plots()
    for path, frame in files.items():
        x, y = declared[path]
        value, category = (x, y) if x in ("accuracy",) else (y, x)  # bars are horizontal
        for row in frame.to_dict("records"):
            cell = _normalized([str(row[category]), str(row[value])])
            assert any(slot == row["panel"] and cell <= seen for slot, seen in drawn), (path, row)
    panels = re.findall(r"aria-label=\"Title text '([^']*)'\"", dom)
    assert panels[0] == "model" and set(SLOTS) <= set(panels)  # the model under test first
    # 3 slots × 2 prompts + human = 7 ID-MoCQA panels, 3 a row: every view fits a 1400 px page
    widths = [int(float(w)) for w in re.findall(r'<svg[^>]*\bwidth="([\d.]+)"', dom)]
    assert widths and max(widths) <= 1400, widths


def _normalized(values: object) -> set[str]:
    """Label values with numbers written one way (``0.5`` and ``0.500000`` alike)."""
    out = set()
    for value in values:  # type: ignore[attr-defined]
        try:
            out.add(f"{float(value):.6g}")
        except ValueError:
            out.add(str(value))
    return out


def _declared_plots() -> dict[str, tuple[str, str]]:
    """``{csv path: (x, y)}`` of every stage-level plot in dvc.yaml, ``${item}`` resolved."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    out = {}
    for stage in stages.values():
        body = stage.get("do", stage)
        for entry in body.get("plots") or []:
            for path, props in entry.items():
                out[path.replace("${item}", "indoculture")] = (props["x"], props["y"])
    return out
