"""Outputs written through the run log hash the same on a fresh run and on a store rerun."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cultureqa.provenance import file_md5
from cultureqa.runlog import runlog_dir, write_predictions


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
