"""A published-style file with defects, through validate → evaluate → track as DVC runs them.

``kuis_budaya`` (data/sources/kuis_budaya/) keeps its test split, drops a row with a repeated option
and one with a missing gold, and reports its gold imbalance: the drops and the imbalance reach
``metrics/validate/kuis_budaya.json``, the evaluate run record and MLflow.
"""

from __future__ import annotations

import json
import runpy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from cultureqa.core.config import run_stage
from cultureqa.core.params_digest import register as register_digest
from cultureqa.core.runlog import read_run

ROOT = Path(__file__).resolve().parents[2]
NAME = "kuis_budaya"


def _stage(name: str) -> Callable[[list[str]], int]:
    main = runpy.run_path(str(ROOT / "stages" / f"{name}.py"), run_name="stage")["main"]
    return lambda argv: run_stage(lambda: main(argv))  # type: ignore[no-any-return]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for folder in ("prompts", "expectations", f"data/sources/{NAME}", "data/knowledge"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    _params(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / ".cultureqa"))
    return tmp_path


def _params(root: Path, **over: Any) -> None:
    register_digest()  # the stages resolve the config's ${cultureqa_digest:}, as `make params` does
    params = OmegaConf.load(ROOT / "params.yaml")
    bench = OmegaConf.load(ROOT / f"conf/benchmark/{NAME}.yaml")
    params.benchmarks[NAME] = OmegaConf.merge(bench, over)
    params.evaluate.benchmarks = [NAME]
    params.evaluate.progress = False
    OmegaConf.save(params, root / "params.yaml")


def test_a_dirty_file_is_validated_evaluated_and_tracked(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _stage("validate")(["--benchmark", NAME]) == 0
    out = capsys.readouterr().out
    assert (
        "24 rows read, 3 skipped by rows.keep, 0 blank rows skipped, 2 dropped "
        "(duplicate_option 1, missing_gold 1)" in out
    )
    assert "dropped data/sources/kuis_budaya/kuis_budaya.csv, row 14 (13), column " in out
    assert "REPORTED [source] expect_gold_positions_to_be_balanced: gold answers: A 16 of 19" in out
    summary = json.loads((workspace / f"metrics/validate/{NAME}.json").read_text())
    assert summary["load"]["dropped_by_reason"] == {"duplicate_option": 1, "missing_gold": 1}
    assert summary["load"]["multi_gold_items"] == 2 and summary["load"]["rows_skipped"] == 3
    assert summary["success"] and summary["reported"][0]["on"] == "source"
    assert summary["dataset"]["files"] == {
        f"data/sources/{NAME}/{NAME}.csv": summary["dataset"]["md5"]
    }

    for entry in ("baselines.random", "baselines.first_option"):
        assert _stage("evaluate")(["--benchmark", NAME, "--model", entry]) == 0
    predictions, run = read_run(workspace / f"data/eval/{NAME}/baselines.first_option")
    assert len(predictions) == 19 and set(predictions["gold"]) == {"A", "B", "C", "D", "A,C"}
    assert predictions["correct"].sum() == 16  # first option: right where A is a gold
    details = run["details"]
    assert details["rows"]["rows_dropped"] == 2 and details["rows"]["option_counts"] == {
        "4": 15,
        "5": 4,
    }
    assert (
        details["validation"]["reported"][0]["expectation"]
        == "expect_gold_positions_to_be_balanced"
    )
    # 14 single-gold 4-option items, 3 single-gold 5-option items, "A, C" of 4 and of 5 options
    assert details["chance_accuracy"] == pytest.approx(
        (14 / 4 + 3 / 5 + 2 / 4 + 2 / 5) / 19, abs=1e-4
    )

    assert _stage("track")(["--only", f"{NAME}/baselines.first_option"]) == 0
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=[f"cultureqa/{NAME}"])
    [found] = runs[runs["tags.mlflow.parentRunId"].notna()].to_dict("records")  # the one result
    assert found["metrics.rows.dropped"] == 2 and found["metrics.rows.skipped"] == 3
    assert found["metrics.rows.blank"] == 0 and found["metrics.items.language.id"] == 19
    assert (
        found["metrics.rows.dropped.missing_gold"] == 1 and found["metrics.items.multi_gold"] == 2
    )
    assert (
        found["metrics.gold_balance.source.passes"] == 0
        and found["metrics.validation.reported"] == 1
    )


def test_imbalance_fails_unless_declared_report(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _params(workspace, severity={"expect_gold_positions_to_be_balanced": "fail"})
    assert _stage("validate")(["--benchmark", NAME]) == 1
    err = capsys.readouterr().err
    assert "FAIL [source] expect_gold_positions_to_be_balanced: gold answers: A 16 of 19" in err
    assert "> tolerance 0.10: fails" in err


def test_a_defect_outside_the_sample_is_still_reported(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = workspace / f"data/sources/{NAME}/{NAME}.csv"
    text = source.read_text(encoding="utf-8")
    old = (
        "21,Provinsi mana yang terletak di Pulau Jawa?,"
        + 'Jawa Tengah,Maluku,Jawa Timur,Bali,Papua,"A, C"'
    )
    new = "21,Tari Saman berasal dari provinsi mana?,Aceh,Bali,Papua,Jawa Barat,,A"  # = row 1
    assert old in text
    source.write_text(text.replace(old, new), "utf-8")
    _params(workspace, limit=5)
    assert _stage("validate")(["--benchmark", NAME]) == 1
    err = capsys.readouterr().err
    assert "FAIL [source] expect_questions_to_be_unique: 1 items repeat an earlier item" in err
    assert "[sample] expect_questions_to_be_unique" not in err


def test_evaluate_run_by_hand_refuses_a_source_outside_the_project(
    workspace: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere") / f"{NAME}.csv"
    shutil.copy(workspace / f"data/sources/{NAME}/{NAME}.csv", elsewhere)
    _params(workspace, source={"kind": "file", "path": str(elsewhere)})
    for stage in ("validate", "evaluate"):
        args = ["--benchmark", NAME] + (
            ["--model", "baselines.random"] if stage == "evaluate" else []
        )
        assert _stage(stage)(args) == 2
        err = capsys.readouterr().err
        assert (
            err.startswith("error: ")
            and "is not a DVC dependency of ['validate@kuis_budaya'," in err
        )
        assert "move it under data/sources/kuis_budaya/" in err
    assert not (workspace / f"data/eval/{NAME}").exists()
