"""`make exps` in a terminal: what differs and the model slot's headline metrics first, ≤ 160 cols.

Plain `dvc exp show` prints every dep path of every stage and the whole params.yaml (287 columns on
the default tree); cut down with `--drop` it still opened on a constant baseline metric and hid
`prompt.style` and every metric of the model under test behind `…`. `make exps` shows the params
that differ (and always `model.id`, `prompt.style`), then the model slot's headline metrics, as
many columns as fit; `make exps ALL=1` is DVC's own full table.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cultureqa.runs.exps import table

ROOT = Path(__file__).resolve().parents[1]
COPIED = ["Makefile", "dvc.yaml", "dvc.lock", "params.yaml", ".dvcignore", ".dvc/config", "src",
          "stages", "prompts", "data/sources", "data/knowledge", "expectations", "conf",
          "metrics"]  # fmt: skip
HEADLINES = ["indoculture", "mocqa", "cases"]


def _metrics() -> dict[str, Any]:
    files = {name: ROOT / "metrics" / name / "headline.json" for name in HEADLINES}
    return {f"metrics/{k}/headline.json": {"data": json.loads(p.read_text())}
            for k, p in files.items()}  # fmt: skip


def _show(variants: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """``dvc exp show --json`` of main and one experiment per (name, model id, prompt style)."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())

    def data(model: str, style: str, shift: float = 0.0) -> dict[str, Any]:
        p = copy.deepcopy(params)
        p["model"]["id"], p["prompt"]["style"] = model, style
        p["model"]["options"] = {"seed": len(model)}  # a group's leaves differ with its id
        metrics = _metrics()
        indo = metrics["metrics/indoculture/headline.json"]["data"]["accuracy"]["model"]
        for key in indo:
            indo[key] = round(indo[key] + shift, 6)
        return {"params": {"params.yaml": {"data": p}}, "metrics": metrics}

    exps = [{"name": n, "revs": [{"rev": "b" * 40, "name": n, "data": data(m, s, 0.1)}]}
            for n, m, s in variants]  # fmt: skip
    main = data("gemma3-270m", "zero_shot")
    return [{"rev": "workspace", "name": None, "data": main},
            {"rev": "a" * 40, "name": "main", "data": main, "experiments": exps}]  # fmt: skip


SWEEP = [("rnd-zs", "random", "zero_shot"), ("rnd-cot", "random", "cot"),
         ("fst-zs", "first-option", "zero_shot"), ("fst-cot", "first-option", "cot")]  # fmt: skip


def test_a_sweep_shows_what_differs_and_the_model_metrics_first_in_160_columns() -> None:
    text = table(_show(SWEEP))
    lines = text.splitlines()
    assert max(map(len, lines)) <= 160
    header = lines[1]
    names = [c.strip() for c in header.strip("|").split("|")]
    assert names[:3] == ["Experiment", "model.id", "prompt.style"]  # the group, by its id
    assert "model.options.seed" not in text
    assert "IndoCulture accuracy" in lines[0] and "ID-MoCQA multi-hop" in lines[0]
    rows = {line.split("|")[1].strip(): line for line in lines if line.startswith("| ")}
    assert "cot" in rows["fst-cot"] and "first-option" in rows["fst-cot"]
    assert "0.520" in rows["fst-cot"] and "0.420" in rows["main"]  # the model's own numbers
    assert "baselines" not in "\n".join(lines[:3])  # other slots only if room is left
    assert "not shown to fit 160 columns" in text and "make exps ALL=1" in text


def test_the_width_is_measured_not_assumed() -> None:
    narrow = table(_show(SWEEP), width=80)
    assert max(map(len, narrow.splitlines())) <= 80 and "model.id" in narrow


def test_the_default_width_is_the_terminals(monkeypatch: pytest.MonkeyPatch) -> None:
    """An 80-column terminal gets 80 columns; no terminal and no COLUMNS, 160."""
    from cultureqa.runs.exps import WIDTH, terminal_width

    monkeypatch.setenv("COLUMNS", "80")
    assert terminal_width() == 80
    assert max(map(len, table(_show(SWEEP), width=terminal_width()).splitlines())) <= 80
    monkeypatch.delenv("COLUMNS")
    monkeypatch.setattr("os.get_terminal_size", lambda *a: (_ for _ in ()).throw(OSError()))
    assert terminal_width() == WIDTH == 160


def test_csv_names_every_column_of_the_view() -> None:
    rows = list(csv.reader(io.StringIO(table(_show(SWEEP), csv=True))))
    header = rows[0]
    assert header[:3] == ["Experiment", "model.id", "prompt.style"]
    model = [h for h in header if ".model." in h or h.endswith(".model")]
    assert header[3 : 3 + len(model)] == model  # the model slot's metrics before any other
    assert "indoculture.accuracy.model.mcq-none-id" in model and len(rows) == 1 + 6


def _run(cwd: Path, *args: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PATH": f"{Path(sys.executable).parent}:"
           f"{os.environ['PATH']}", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    env.pop("DVC_ROOT", None)
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_make_exps_on_the_real_tree(tmp_path: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in COPIED:
        src, dst = ROOT / name, tmp_path / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree(src, dst, ignore=ignore) if src.is_dir() else shutil.copy2(src, dst))
    _run(tmp_path, "git", "init", "-q")
    _run(tmp_path, "git", "add", "-A")
    _run(tmp_path, "git", "commit", "-qm", "tree")
    shown = _run(tmp_path, "make", "-s", "exps")
    assert max(map(len, shown.splitlines())) <= 160 and "model.id" in shown
    full = next(csv.reader(io.StringIO(_run(tmp_path, "make", "-s", "exps", "ALL=1",
                                            "ARGS=--csv"))))  # fmt: skip
    view = next(csv.reader(io.StringIO(_run(tmp_path, "make", "-s", "exps", "ARGS=--csv"))))
    assert len(view) < 60 < len(full), (len(view), len(full))
    assert {"model.id", "prompt.style", "indoculture.accuracy.model.mcq-none-id",
            "mocqa.multi_hop.model.cot", "cases.max_gap_pp.model"} <= set(view)  # fmt: skip
