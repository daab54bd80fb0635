"""End to end through the stage scripts in a scratch workspace, with the baselines.

Runs validate → evaluate → analyze → track exactly as DVC would (cwd = workspace, DVC_ROOT set),
then checks outputs, MLflow runs, zero-call reruns, and a failing validation.
"""

from __future__ import annotations

import json
import runpy
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.core.config import run_stage
from cultureqa.core.runlog import read_run

ROOT = Path(__file__).resolve().parents[1]
ROSTER = ["baselines.random", "baselines.first_option"]


def _stage(name: str) -> Callable[[list[str]], int]:
    return runpy.run_path(str(ROOT / "stages" / f"{name}.py"), run_name="stage")["main"]  # type: ignore[no-any-return]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for folder in ("prompts", "expectations", "data/sources", "data/knowledge"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")  # validate checks sources are deps
    params = OmegaConf.load(ROOT / "params.yaml")
    params.evaluate.roster = ROSTER
    params.evaluate.progress = False
    OmegaConf.save(params, tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / ".cultureqa"))
    return tmp_path


def test_pipeline_end_to_end_with_baselines(workspace: Path) -> None:
    assert _stage("validate")(["--benchmark", "indoculture"]) == 0
    for entry in ROSTER:
        assert _stage("evaluate")(["--benchmark", "indoculture", "--model", entry]) == 0
    assert _stage("analyze")(["--benchmark", "indoculture"]) == 0
    for entry in ROSTER:
        assert _stage("track")(["--only", f"indoculture/{entry}"]) == 0

    preds = pd.read_parquet(
        workspace / "data/eval/indoculture/baselines.first_option/predictions.parquet"
    )
    settings = OmegaConf.load(workspace / "params.yaml").benchmarks.indoculture.settings
    assert sorted(preds["setting"].unique()) == sorted(settings)
    # Fixed-position accuracy equals the share of gold "A": a check that scoring is right.
    for _, part in preds.groupby("setting"):
        assert part["correct"].mean() == pytest.approx((part["gold"] == "A").mean())

    summary = json.loads((workspace / "metrics/indoculture/summary.json").read_text())
    assert set(summary) == {"random", "first-option"}
    assert (workspace / "reports/indoculture/accuracy_by_setting.png").stat().st_size > 1000
    run = json.loads((workspace / "data/eval/indoculture/baselines.random/run.json").read_text())
    assert run["provenance"]["dataset"]["md5"] and "packages" in run["provenance"]

    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    all_runs = mlflow.search_runs(experiment_names=["cultureqa/indoculture"])
    parent = all_runs[all_runs["tags.cultureqa.group"].notna()]
    runs = all_runs[all_runs["tags.mlflow.parentRunId"].notna()]
    assert len(parent) == 1 and set(runs["tags.mlflow.parentRunId"]) == set(parent["run_id"])
    assert len(runs) == len(ROSTER) * len(settings)
    assert {"metrics.accuracy", "params.prompt.template_sha256", "tags.git.commit"} <= set(runs)
    assert any(c.startswith("metrics.slice.acc.province_x_is_province_specific.") for c in runs)
    figures = mlflow.artifacts.list_artifacts(
        run_id=parent["run_id"].iloc[0], artifact_path="figures"
    )
    assert "figures/accuracy_by_setting.png" in {f.path for f in figures}

    # DVC metrics and plot data are keyed by roster slot, never by model id.
    headline = json.loads((workspace / "metrics/indoculture/headline.json").read_text())
    assert list(headline["accuracy"]) == sorted(ROSTER)
    plot = pd.read_csv(workspace / "metrics/indoculture/accuracy_by_setting.csv")
    assert set(plot["panel"]) == set(ROSTER) and len(plot) == len(ROSTER) * len(settings)
    assert set(plot["model"]) == {"random", "first-option"}

    # A rerun answers everything from the response store.
    assert _stage("evaluate")(["--benchmark", "indoculture", "--model", ROSTER[0]]) == 0
    _, rerun = read_run(workspace / "data/eval/indoculture/baselines.random")
    assert rerun["model_calls"] == 0


def test_validation_stops_on_a_doctored_source(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = workspace / "data/sources/indoculture/sample.csv"
    frame = pd.read_csv(sample, dtype=str, keep_default_na=False)
    frame["answer"] = "A"  # every gold answer in position A
    frame.to_csv(sample, index=False)
    assert _stage("validate")(["--benchmark", "indoculture"]) == 1
    err = capsys.readouterr().err
    assert "breaks dataset invariants" in err and "expect_gold_positions_to_be_balanced" in err
    assert "gold answers: A 176 of 176 (100%), B 0 of 176 (0%)" in err  # 88 items x 2 languages


@pytest.mark.parametrize(
    ("doctor", "message"),
    [
        (lambda p: p.write_text(""), "file is empty"),
        (lambda p: p.write_text("id,context\nx,y\n"), "missing column(s)"),
        (
            lambda p: p.write_bytes(p.read_bytes().replace(b",Bali,", b",Atlantis,", 1)),
            "unknown region 'Atlantis'",
        ),
        (
            lambda p: p.write_bytes(p.read_bytes().replace(b"Sasak", b"Sas\xe9k", 1) + b"\xff"),
            "not valid UTF-8",
        ),
    ],
    ids=["empty", "wrong-columns", "unknown-province", "non-utf8"],
)
def test_bad_source_fails_cleanly_and_keeps_earlier_outputs(
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    doctor: Callable[[Path], None],
    message: str,
) -> None:
    entry = ["--benchmark", "indoculture", "--model", "baselines.random"]
    assert _stage("evaluate")(entry) == 0
    output = workspace / "data/eval/indoculture/baselines.random/predictions.parquet"
    before = output.read_bytes()
    doctor(workspace / "data/sources/indoculture/sample.csv")
    main = _stage("evaluate")
    assert run_stage(lambda: main(entry)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "sample.csv" in err
    assert output.read_bytes() == before


def test_wrong_type_in_config_names_the_key(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    params = OmegaConf.load(workspace / "params.yaml")
    params.evaluate.max_error_share = "a few"
    OmegaConf.save(params, workspace / "params.yaml")
    main = _stage("evaluate")
    assert (
        run_stage(lambda: main(["--benchmark", "indoculture", "--model", "baselines.random"])) == 2
    )
    assert "'evaluate.max_error_share' must be float, got 'a few'" in capsys.readouterr().err


def test_build_counts_are_logged_to_mlflow(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = {"ingest": {"input": 88, "kept": 71}, "construct": {"input": 852, "kept": 850}}
    steps |= {name: {"kept": 1} for name in ("annotate", "shuffle", "validate")}
    for name, doc in steps.items():
        (workspace / f"metrics/cases/{name}.json").parent.mkdir(parents=True, exist_ok=True)
        (workspace / f"metrics/cases/{name}.json").write_text(json.dumps(doc))
    import pandas as pd  # the cases as constructed: the build run's items, logged as traces

    items = workspace / "data/build/cases/construct/items.parquet"
    items.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {
            "case_id": ["c1", "c2"],
            "question": ["Where?", "Which?"],
            "type_A": ["x", "y"],
            "type_B": ["z", "w"],
            "answer": ["A", "B"],
        }
    ).to_parquet(items)
    assert _stage("track")(["--only", "build/cases"]) == 0
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["cultureqa/cases-build"])
    assert len(runs) == 1
    assert runs["metrics.construct.kept"][0] == 850
    assert runs["params.cases.construct.max_attempts"][0] == "3"
    traces = mlflow.search_traces(locations=[runs["experiment_id"][0]])
    assert len(traces) == 2  # one per constructed case
    assert _stage("track")(["--only", "build/cases"]) == 0  # unchanged: skipped, and says so
    assert "skipped 1 of 1 part(s)" in capsys.readouterr().out
    assert _stage("track")(["--only", "build/cases", "--force"]) == 0  # re-tracked: no new run
    assert mlflow.search_runs(experiment_names=["cultureqa/cases-build"])["run_id"].tolist() == [
        runs["run_id"][0]
    ]
