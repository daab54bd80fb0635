"""Result identity: a sweep entry sharing the baseline's display id stays its own row."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from cultureqa.analysis.roster import key_by_roster
from cultureqa.analysis.tables import overall_table
from cultureqa.evaluation.report import collect_predictions


def _preds(n: int, correct: bool) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "benchmark": "indoculture",
            "model": "random",
            "setting": "mcq_en",
            "item_id": [f"i{i}" for i in range(n)],
            "correct": correct,
            "status": "ok",
        }
    )


def test_model_random_beside_the_baseline_is_two_rows(tmp_path: Path) -> None:
    # `dvc exp run -S model=random`: both folders hold display id "random"
    for entry, correct in (("baselines.random", True), ("model", False)):
        folder = tmp_path / entry
        folder.mkdir()
        _preds(88, correct).to_parquet(folder / "predictions.parquet")
    pooled = overall_table(collect_predictions(tmp_path))
    assert pooled["n"].tolist() == [176]  # what grouping by display id alone did
    table = overall_table(key_by_roster(collect_predictions(tmp_path)))
    assert table.set_index("model")["n"].to_dict() == {
        "random [baselines.random]": 88,
        "random [model]": 88,
    }
    assert table.set_index("model")["accuracy"].to_dict() == {
        "random [baselines.random]": 1.0,
        "random [model]": 0.0,
    }


def test_unique_ids_and_humans_keep_their_names() -> None:
    preds = pd.concat(
        [
            _preds(2, True).assign(roster_entry="baselines.random"),
            _preds(2, True).assign(model="gemma", roster_entry="model"),
            _preds(2, True).assign(model="human:Jakarta"),  # no roster entry
        ],
        ignore_index=True,
    )
    assert key_by_roster(preds)["model"].tolist() == preds["model"].tolist()
    twin = pd.concat([preds, _preds(2, True).assign(roster_entry="model")], ignore_index=True)
    assert set(key_by_roster(twin)["model"]) == {
        "random [baselines.random]",
        "random [model]",
        "gemma",
        "human:Jakarta",
    }
