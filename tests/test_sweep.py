"""A sweep compared at a glance, end to end: real DVC experiments, MLflow UI and a real browser.

Two experiments swap the model under test (``-S model=random`` and ``-S model=first_option``:
baselines, so no model loads) and run IndoCulture's evaluate, analyze and track stages. Then the
README's comparison commands must show numbers for every headline metric (``dvc metrics diff``,
``make exps``, ``make compare``), ``dvc plots diff`` must draw both experiments, and the MLflow
UI must open on a runs table whose names tell the models apart, with no run deleted.

With ``CULTUREQA_UPDATE_SCREENSHOTS=1`` the screenshots replace the README's in ``docs/img/``.
Slow: about 5 minutes on 2 cores.
"""

from __future__ import annotations

import csv
import html
import io
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]  # the module fixture runs 2 exps

ROOT = Path(__file__).resolve().parents[1]
COPIED = ["Makefile", "dvc.yaml", "params.yaml", ".dvcignore", ".gitignore", ".dvc/config",
          "dvc_hydra_plugins",  # DVC composes conf/ through it (the region sets' digest resolver)
          ".dvc/.gitignore", ".dvc/plots", "src", "stages", "prompts", "data/sources",
          "data/knowledge", "expectations", "conf", "metrics",  # tests/gold: mocqa_analyze reads it
          "tests/gold"]  # fmt: skip
RESULTS = ["headline.json", "summary.json", "accuracy_by_setting.csv"]
"""IndoCulture's results are left out of the first commit: the experiments make their own."""
EXPS = {"rnd": "random", "fst": "first_option"}
TRACK = ["track"]  # the whole pipeline: the one track stage logs every family
SHOTS = ROOT / "docs" / "img"
Browse = Callable[..., str]


def _env() -> dict[str, str]:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "MLFLOW_DISABLE_TELEMETRY": "true",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "160",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    for key in ("DVC_ROOT", "DVC_EXP_NAME", "CULTUREQA_STATE_DIR"):
        env.pop(key, None)
    return env


def run(cwd: Path, *args: str) -> str:
    done = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=1800, check=False)  # fmt: skip
    assert done.returncode == 0, f"{args}: {done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh repository with the two experiments run (``dvc exp run -n NAME -S model=...``)."""
    repo = tmp_path_factory.mktemp("sweep")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in COPIED:
        src, dst = ROOT / name, repo / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree(src, dst, ignore=ignore) if src.is_dir() else shutil.copy2(src, dst))
    for name in RESULTS:
        (repo / "metrics" / "indoculture" / name).unlink()
    run(repo, "git", "init", "-q")
    run(repo, "git", "add", "-A")
    run(repo, "git", "commit", "-qm", "baseline")
    for name, model in EXPS.items():
        run(repo, "dvc", "exp", "run", "-n", name, "-S", f"model={model}", *TRACK)
    return repo


def test_metrics_diff_shows_a_number_for_every_headline_metric(sweep: Path) -> None:
    diff = json.loads(run(sweep, "dvc", "metrics", "diff", "rnd", "fst", "--all", "--json"))
    headline = diff["metrics/indoculture/headline.json"]
    assert len(headline) == 3 * 7  # roster slots × settings
    assert all(
        isinstance(v["old"], float) and isinstance(v["new"], float) for v in headline.values()
    )
    slots = {key.split(".")[1] for key in headline}
    assert slots == {"model", "baselines"}  # keyed by slot, never by model id
    changed = {k for k, v in headline.items() if v["diff"] != 0}
    assert changed and all(k.startswith("accuracy.model.") for k in changed)
    table = run(sweep, "dvc", "metrics", "diff", "rnd", "fst")
    rows = [line.split() for line in table.splitlines()[1:] if line.strip()]
    assert rows and all(len(r) == 5 and r[2] != "-" and r[3] != "-" for r in rows)
    assert max(map(len, table.splitlines())) <= 160


def test_make_exps_fills_every_model_headline_cell_within_160_columns(sweep: Path) -> None:
    rows = list(csv.reader(io.StringIO(run(sweep, "make", "-s", "exps", "ARGS=--csv"))))
    header = rows[0]
    metrics = [i for i, c in enumerate(header) if c.startswith("indoculture.accuracy.model.")]
    assert header[1:3] == ["model.id", "prompt.style"] and len(metrics) == 7
    experiments = [r for r in rows[1:] if r[0] in EXPS]
    assert len(experiments) == 2
    assert [(r[0], header[i]) for r in experiments for i in metrics if r[i] in ("", "-")] == []
    shown = run(sweep, "make", "-s", "exps")
    assert max(map(len, shown.splitlines())) <= 160 and "first-option" in shown


def test_make_compare_pairs_the_experiments(sweep: Path) -> None:
    table = run(sweep, "make", "-s", "compare", "ARGS=--baseline rnd")
    assert max(map(len, table.splitlines())) <= 160
    numbers = list(csv.DictReader(io.StringIO(
        run(sweep, "make", "-s", "compare", "ARGS=--baseline rnd --csv"))))  # fmt: skip
    fst = next(r for r in numbers if r["experiment"] == "fst" and r["column"] == "indoculture")
    assert fst["model.id"] == "first-option" and fst["note"] == "paired, n=88"
    assert fst["prompt"] == "zero_shot" and fst["settings"] == "7/7"
    # over the same items in every setting, the mean of per-item means is the mean accuracy
    diff = json.loads(run(sweep, "dvc", "metrics", "diff", "rnd", "fst", "--all", "--json"))
    model = [v["new"] for k, v in diff["metrics/indoculture/headline.json"].items()
             if k.startswith("accuracy.model.")]  # fmt: skip
    assert float(fst["accuracy"]) == pytest.approx(sum(model) / len(model), abs=1e-6)
    low, high = float(fst["Δ ci_low"]), float(fst["Δ ci_high"])
    assert low < float(fst["Δ"]) < high
    assert "workspace" not in {r["experiment"] for r in numbers}  # = fst: shown once
    assert "workspace = fst (same params and predictions)" in table


def test_comparison_commands_in_a_160_column_terminal(
    sweep: Path, browse: Browse, tmp_path: Path
) -> None:
    """The README's comparison commands as a 160-column terminal shows them (README image)."""
    shown = {
        "dvc metrics diff rnd fst": run(sweep, "dvc", "metrics", "diff", "rnd", "fst"),
        'make compare ARGS="--baseline rnd"': run(
            sweep, "make", "-s", "compare", "ARGS=--baseline rnd"
        ),
    }
    text = "\n".join(f"$ {command}\n{out}" for command, out in shown.items())
    assert max(map(len, text.splitlines())) <= 160 and " - " not in text
    page = tmp_path / "terminal.html"
    page.write_text(
        "<html><body style='margin:0;padding:10px;background:#1e1e1e;color:#ddd'>"
        f"<pre style='font:12px monospace;width:160ch'>{html.escape(text)}</pre></body></html>",
        encoding="utf-8",
    )
    shot = tmp_path / "sweep_compare_terminal.png"
    browse(page.as_uri(), shot, "1250,330")
    _keep(shot)


def test_plots_diff_draws_both_experiments_in_a_browser(
    sweep: Path, browse: Browse, vega_dir: Path, tmp_path: Path
) -> None:
    targets = "--targets metrics/indoculture/accuracy_by_setting.csv"
    run(sweep, "make", "-s", "plots", "PLOTS=diff rnd fst", f"ARGS={targets}",
        f"VEGA_DIR={vega_dir}")  # fmt: skip
    shot = tmp_path / "dvc_plots_diff.png"
    dom = browse((sweep / "dvc_plots" / "index.html").as_uri(), shot, "1100,560")
    assert 'data-plots-ok="1"' in dom and 'data-plots-failed=""' in dom
    bars = dom.count('aria-roledescription="bar"')
    assert bars == 3 * 7 * 2  # slots × settings × experiments
    for name in EXPS:
        assert f"rev: {name}; experiment: {name}; roster slot: model" in dom
    _keep(shot)


@pytest.fixture
def mlflow_ui(sweep: Path) -> Iterator[str]:
    """``mlflow ui`` as `make ui` starts it, on a free port; stopped with its whole group."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [str(Path(sys.executable).parent / "mlflow"), "ui", "--backend-store-uri",
               f"sqlite:///{sweep / 'mlflow.db'}", "--host", "127.0.0.1", "--port", str(port),
               "--workers", "1"]  # fmt: skip
    server = subprocess.Popen(command, cwd=sweep, env=_env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "mlflow ui down"
                time.sleep(2)
        yield base
    finally:  # its job runner's workers outlive a SIGTERM for a while: stop the whole group
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        finally:
            os.killpg(server.pid, signal.SIGKILL)


def test_mlflow_ui_opens_on_runs_named_after_the_models(
    sweep: Path, mlflow_ui: str, browse: Browse, tmp_path: Path
) -> None:
    links = run(sweep, sys.executable, "-m", "cultureqa.cli", "ui-links", "--base", mlflow_ui)
    url = next(line.split(": ", 1)[1] for line in links.splitlines() if "indoculture" in line)
    shot = tmp_path / "mlflow_runs.png"
    dom = browse(url, shot, "1600,520")
    assert "<title>Runs - " in dom  # the runs table, not the (empty) GenAI overview
    for name, model_id in (("rnd", "random"), ("fst", "first-option")):
        assert f"{model_id} · zero_shot · {name}" in dom  # the parent run of each experiment
    with sqlite3.connect(sweep / "mlflow.db") as db:
        stages = dict(db.execute("select lifecycle_stage, count(*) from runs group by 1"))
        per_exp: dict[str, dict[str, int]] = {}
        for exp, experiment, count in db.execute(
            "select t.value, e.name, count(*) from tags t join tags s on s.run_uuid = t.run_uuid "
            "join runs r on r.run_uuid = t.run_uuid "
            "join experiments e on e.experiment_id = r.experiment_id "
            "where t.key = 'dvc.exp_name' and s.key = 'roster_entry' and s.value = 'model' "
            "group by 1, 2"):  # fmt: skip
            per_exp.setdefault(exp, {})[experiment] = count
    # The one track stage logs every family: each setting's run of the model slot once per
    # experiment (IndoCulture's 7 settings, ID-MoCQA's 4, the cases' 2, and the results' 4).
    once = {"cultureqa/indoculture": 7, "cultureqa/mocqa": 4, "cultureqa/cases": 2,
            "cultureqa/results": 4}  # fmt: skip
    assert stages.get("deleted", 0) == 0 and per_exp == {"rnd": once, "fst": once}
    _keep(shot)


def _keep(shot: Path) -> None:
    assert shot.stat().st_size > 10_000
    if os.environ.get("CULTUREQA_UPDATE_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy2(shot, SHOTS / shot.name)


def test_mlflow_parent_runs_show_the_headline_without_expanding(
    sweep: Path, mlflow_ui: str, browse: Browse, tmp_path: Path
) -> None:
    """What a researcher opens an experiment's parent run for is on the parent: its children's
    headline with CIs as metrics, `model.id`/`prompt.style` as its params, the comparison table
    as a logged table; versions in one tag, not dozens of `package.*` params."""
    with sqlite3.connect(sweep / "mlflow.db") as db:
        (experiment,) = db.execute(
            "select experiment_id from experiments where name = 'cultureqa/indoculture'"
        ).fetchone()
        parents = dict(db.execute(  # IndoCulture's: every family's experiment has its parents
            "select t.value, t.run_uuid from tags t join tags g on g.run_uuid = t.run_uuid "
            "join runs r on r.run_uuid = t.run_uuid "
            "where t.key = 'dvc.exp_name' and g.key = 'cultureqa.group' and r.experiment_id = ?",
            (experiment,)))  # fmt: skip
        parent = (parents["fst"],)
        metrics = dict(db.execute("select key, value from latest_metrics where run_uuid = ?",
                                  parent))  # fmt: skip
        params = dict(db.execute("select key, value from params where run_uuid = ?", parent))
        packages = db.execute("select count(*) from params where key like 'package.%'").fetchone()
    assert params == {"model.id": "first-option", "prompt.style": "zero_shot"}
    assert {"indoculture.accuracy", "indoculture.accuracy.ci_low", "indoculture.accuracy.ci_high",
            "indoculture.accuracy.n_items"} <= set(metrics)  # fmt: skip
    assert all(len(repr(v)) <= 8 for v in metrics.values())  # 4 significant digits
    assert packages == (0,)
    page = f"{mlflow_ui}/#/experiments/{experiment}/runs/{parents['fst']}"
    shot = tmp_path / "mlflow_parent_run.png"
    dom = browse(page, shot, "1400,1000")
    assert "indoculture.accuracy" in dom and "first-option" in dom
    _keep(shot)
    artifacts = browse(f"{page}/artifacts/comparison.json", tmp_path / "table.png", "1400,800")
    assert "comparison.json" in artifacts
    _keep(tmp_path / "table.png")
