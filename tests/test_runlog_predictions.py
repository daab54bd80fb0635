"""Outputs written through the run log hash the same on a fresh run and on a store rerun."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cultureqa.core.provenance import file_md5
from cultureqa.core.runlog import runlog_dir, write_predictions


def test_latency_and_cache_flags_leave_the_hashed_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    answers = pd.DataFrame({"item_id": ["a", "b"], "correct": [True, False]})
    fresh = answers.assign(latency_s=[0.4, 0.5], cached=[False, False])
    rerun = answers.assign(latency_s=[0.0, 0.0], cached=[True, True])
    write_predictions(tmp_path / "fresh", fresh)
    write_predictions(tmp_path / "rerun", rerun)
    assert file_md5(tmp_path / "fresh/predictions.parquet") == file_md5(
        tmp_path / "rerun/predictions.parquet"
    )
    side = pd.read_parquet(runlog_dir(tmp_path / "rerun") / "calls.parquet")
    assert side["cached"].tolist() == [True, True]


def test_outputs_restored_by_dvc_are_said_once_at_info(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A sweep restores many outputs from the DVC cache: one INFO line, not a WARNING per stage."""
    import logging
    import shutil

    from cultureqa.core import runlog

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runlog, "_said", set())
    answers = pd.DataFrame({"item_id": ["a"], "correct": [True], "latency_s": [0.1]})
    for name in ("one", "two"):
        runlog.write_run(tmp_path / name, answers, {"model": "m"}, tmp_path)
    shutil.rmtree(tmp_path / runlog.RUNLOG)
    with caplog.at_level(logging.INFO, logger="cultureqa.core.runlog"):
        records = [runlog.read_run(tmp_path / name)[1] for name in ("one", "two")]
    said = [r for r in caplog.records if "run log" in r.getMessage()]
    assert [r.levelname for r in said] == ["INFO"]
    assert len(said[0].getMessage()) - len(str(tmp_path / "one")) < 100
    assert all("no run log" in r["runlog"] for r in records)  # still in each run record
