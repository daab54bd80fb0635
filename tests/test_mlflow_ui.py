"""MLflow as the comparison place: the sweep's table two clicks from MLflow's home page.

Four DVC experiments (``model=random,first_option`` × ``prompt=zero_shot,cot``, as the README
sweep) are tracked through the stages' own function (:func:`cultureqa.runs.tracking.log_runs`, one
group per ``DVC_EXP_NAME``) into a fresh ``mlflow.db``; ``mlflow ui`` serves it as ``make ui``
does. Playwright drives Debian's Chromium in a new profile (MLflow 3.17 opens in its GenAI view
there, whatever an experiment's kind tag): the home page shows each experiment's description,
which names the way to the table (:func:`cultureqa.runs.mlflow_home.experiment_note`); home page →
click ``cultureqa/results`` (its GenAI overview, counting the item traces) →
click "Evaluation runs", and every model × prompt × benchmark row shows accuracy and its CI,
equal to what ``make compare`` computes from the same items
(:func:`cultureqa.runs.compare.estimate`, to its printed digit). Then a result's items (one
click) and one item's record (one more): its reply, parsed answer, scores and gold.
No click from the home page lands on an empty page: the sweep also tracks one dataset build (its
items as traces) as the track stage does, which deletes MLflow's empty ``Default`` experiment;
every experiment the home page lists is clicked in turn and its overview must count traces
(the family experiment its items, the build its judged questions). An experiment planted without
traces must fail that check. ``CULTUREQA_DOCS_IMG=1`` also writes the screenshots to
``docs/img/mlflow_home.png``, ``docs/img/mlflow_results.png``, ``docs/img/mlflow_item.png`` and
``docs/img/mlflow_family.png``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from cultureqa.runs.compare import estimate
from cultureqa.runs.mlflow_home import experiment_note, retire_default
from cultureqa.runs.mlflow_runs import DatasetRef
from cultureqa.runs.parent_summary import RESULTS_NOTE
from cultureqa.runs.tracking import benchmark_dataset, evaluation_metrics, log_build, log_runs

ROOT = Path(__file__).resolve().parents[1]
SWEEP = [(m, p) for m in ("random", "first-option") for p in ("zero_shot", "cot")]
ITEMS = 40
"""Prediction rows per experiment (20 items × 2 settings): one trace each."""
BUILD = "cultureqa/twohop-demo-build"
JUDGED = pd.DataFrame({
    "item_id": [f"q{k}.direct.en" for k in range(6)], "question": "Which province?",
    "options": '{"A": "Bali", "B": "Aceh"}', "answer": "A", "clue_type": "direct",
    "language": "en", "judge_keep": [True] * 5 + [False], "judge": "rules",
    "judge_reason": [""] * 5 + ["leaks the answer"],
})  # fmt: skip
"""A build's judged questions (five kept, one removed): its run's traces."""


def _predictions(rng: np.random.Generator, model: str) -> pd.DataFrame:
    items = [f"i{k}" for k in range(20)]
    grid = pd.MultiIndex.from_product([items, ["mcq_en", "mcq_id"]], names=["item_id", "setting"])
    frame = grid.to_frame(index=False).assign(benchmark="indoculture", model=model, status="ok")
    frame["correct"] = rng.random(len(frame)) < 0.45
    frame["gold"] = rng.choice(list("ABCD"), len(frame))
    wrong = frame["gold"].map({"A": "B", "B": "C", "C": "D", "D": "A"})
    frame["pred"] = frame["gold"].where(frame["correct"], wrong)
    frame["raw"] = "The answer is " + frame["pred"]
    frame["language"] = frame["setting"].str[-2:]
    frame["scores"] = "[-1.5, -2.25, -3.0, -4.0]"
    return frame.assign(prompt_tokens=10, completion_tokens=1, cost_usd=0.0, latency_s=0.1)


def _run(model: str, prompt: str) -> dict[str, object]:
    dataset = {"name": "indoculture", "version": "v1", "md5": "0" * 32,
               "source": "data/sources/indoculture.jsonl"}  # fmt: skip
    return {
        "benchmark": "indoculture", "roster_entry": "model", "model": {"id": model},
        "prompt": prompt, "templates": {"mcq_en": "a", "mcq_id": "b"}, "model_calls": 40,
        "api": {}, "provenance": {"dataset": dataset, "git": {"commit": "c", "dirty": False},
                                  "packages": {}, "dvc_exp_name": None},
    }  # fmt: skip


def _sweep(root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[float, float, float]]:
    """Track the four experiments; return each row's (accuracy, low, high) as compare has it."""
    rng, expected = np.random.default_rng(11), {}
    for model, prompt in SWEEP:
        monkeypatch.setenv("DVC_EXP_NAME", f"{model}-{prompt}")
        preds, run = _predictions(rng, model), _run(model, prompt)
        dataset = benchmark_dataset(run["provenance"]["dataset"])  # type: ignore[index]

        def dataset_of(_: str, d: DatasetRef = dataset) -> DatasetRef:
            return d

        log_runs(root, "cultureqa/indoculture", run, preds, "setting",
                 lambda part: evaluation_metrics(part, []), dataset_of,
                 sweep={"model": model, "prompt": prompt})  # fmt: skip
        found = estimate(preds.groupby("item_id")["correct"].mean().astype(float))
        expected[f"{model} · {prompt} · indoculture"] = (found.value, found.low, found.high)
    log_build(root, BUILD, {"build": {"kept": 5, "removed": 1}}, {"judge": "rules"}, None, JUDGED)
    assert retire_default() is not None  # as the track stage does: MLflow's empty Default goes
    return expected


def _overview_traces(page: Any, base: str, name: str) -> int:
    """From the home page, click ``name``: the trace count of the overview it lands on.

    MLflow 3.17 lands on the GenAI overview ("Usage"): its "Traces" card shows the number of
    traces in the default window (last 7 days), 0 with "No data available" when there are none.
    """
    page.goto(base)
    page.get_by_role("link", name=name, exact=True).first.click()
    page.wait_for_url(re.compile(r".*/overview/.*"))
    card = re.compile(r"\nTraces\n([\d,]+)\n(No data available)?")  # the card, not the nav link
    deadline, shown = time.monotonic() + 90, ""
    while time.monotonic() < deadline:
        shown = page.inner_text("body")
        found = card.search(shown)
        if found and (found[1] != "0" or found[2]):
            return int(found[1].replace(",", ""))
        time.sleep(1)
    raise AssertionError(f"{name}: the overview's Traces card did not load: {shown[:400]!r}")


def _home_experiments(page: Any, base: str) -> list[str]:
    """The experiments MLflow's home page lists (its "Recent Experiments", at most 5)."""
    page.goto(base)
    page.get_by_text("Recent Experiments", exact=True).wait_for()
    links = page.locator("a[href*='#/experiments/']")
    links.first.wait_for()
    return sorted({link.inner_text().strip() for link in links.all()})


def _plant_experiment(root: Path) -> str:
    """An experiment with a run and no trace, as an older version of the stage left them."""
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
    found = mlflow.create_experiment("cultureqa/planted-build", (root / "art").as_uri())
    mlflow.MlflowClient().create_run(found, run_name="build · workspace")
    return "cultureqa/planted-build"


def _serve(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    mlflow = Path(sys.executable).parent / "mlflow"
    server = subprocess.Popen(
        [str(mlflow), "ui", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true",
             "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},  # no job consumers to outlive it
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=5):
                return server, base
        except OSError:
            time.sleep(1)
    _stop(server)
    raise AssertionError("mlflow ui did not answer within 180 s")


def _stop(server: subprocess.Popen[bytes]) -> None:
    """Kill the server's whole process group: its uvicorn worker would outlive a killed parent."""
    os.killpg(server.pid, signal.SIGKILL)
    server.wait()


@pytest.mark.timeout(600)  # mlflow ui starts in 20-120 s on a loaded machine
def test_the_sweep_table_is_two_clicks_from_mlflow_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chromium: str
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    monkeypatch.chdir(tmp_path)
    expected = _sweep(tmp_path, monkeypatch)
    server, base = _serve(tmp_path)
    shot, item_shot = tmp_path / "mlflow_results.png", tmp_path / "mlflow_item.png"
    home_shot, family_shot = tmp_path / "mlflow_home.png", tmp_path / "mlflow_family.png"
    try:
        with sync_api.sync_playwright() as play:
            browser = play.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_context(viewport={"width": 1600, "height": 900}).new_page()
            page.set_default_timeout(90_000)
            # no click from the home page lands on an empty page: every experiment listed there
            # opens on an overview counting its items (4 experiments × 40 rows; the build's 6)
            listed = _home_experiments(page, base)
            assert listed == sorted([BUILD, "cultureqa/indoculture", "cultureqa/results"])
            counts = {}
            for name in listed:
                counts[name] = _overview_traces(page, base, name)
                if name == "cultureqa/indoculture":  # a family experiment: its own items
                    tip = page.get_by_role("button", name="Got it")  # a one-time tip
                    if tip.count():
                        tip.first.click()
                    page.screenshot(path=str(family_shot))
            assert counts == {
                "cultureqa/indoculture": ITEMS * len(SWEEP),
                "cultureqa/results": ITEMS * len(SWEEP),
                BUILD: len(JUDGED),
            }
            page.goto(base)
            # beside each experiment, the home page shows its description: where the table is
            for experiment in ("cultureqa/indoculture", "cultureqa/results"):
                note = experiment_note(experiment) or RESULTS_NOTE
                page.get_by_text(note, exact=True).first.wait_for()
            page.screenshot(path=str(home_shot))
            page.get_by_role("link", name="cultureqa/results").first.click()  # click 1
            # MLflow 3.17 opens its GenAI overview whatever the experiment's kind tag: it is not
            # empty, it counts the item traces (4 experiments × 40 rows).
            page.get_by_text(str(ITEMS * len(SWEEP)), exact=True).first.wait_for()
            tip = page.get_by_role("button", name="Got it")  # a one-time tip, not a page
            if tip.count():
                tip.first.click()
            page.get_by_text("Evaluation runs", exact=True).first.click()  # click 2
            page.get_by_text("ci_high", exact=True).first.wait_for()
            names = list(expected)
            for name in names:
                page.get_by_text(name, exact=True).first.wait_for()
            page.screenshot(path=str(shot))
            headers = [h.strip() for h in page.get_by_role("columnheader").all_inner_texts()]
            shown = {}
            for row in page.get_by_role("row").all()[1:]:
                cells = [c.strip() for c in row.get_by_role("cell").all_inner_texts()]
                assert len(cells) == len(headers), (headers, cells)
                name = next(n for n in names if any(c.endswith(n) for c in cells))
                shown[name] = tuple(float(cells[headers.index(k)]) for k in
                                    ("accuracy", "ci_low", "ci_high"))  # fmt: skip
            # one click on a result opens its items; one more opens an item's record
            page.get_by_text(names[0], exact=True).first.click()
            page.get_by_text('"item": "i19", "setting": "mcq_en"').first.click()
            for field in ("parsed_answer", "reply", "scores", "gold"):
                page.get_by_text(field, exact=True).first.wait_for()
            page.get_by_text("i19 · mcq_en · en", exact=True).first.wait_for()
            page.screenshot(path=str(item_shot))
            planted = _plant_experiment(tmp_path)  # an experiment without data fails the check
            assert planted in _home_experiments(page, base)
            assert _overview_traces(page, base, planted) == 0
            browser.close()
    finally:
        _stop(server)
    if os.environ.get("CULTUREQA_DOCS_IMG"):
        shutil.copy(shot, ROOT / "docs" / "img" / "mlflow_results.png")
        shutil.copy(item_shot, ROOT / "docs" / "img" / "mlflow_item.png")
        shutil.copy(home_shot, ROOT / "docs" / "img" / "mlflow_home.png")
        shutil.copy(family_shot, ROOT / "docs" / "img" / "mlflow_family.png")
    assert set(shown) == set(expected)
    for name, numbers in expected.items():  # make compare prints 3 decimals
        assert [f"{v:.3f}" for v in shown[name]] == [f"{v:.3f}" for v in numbers], name
