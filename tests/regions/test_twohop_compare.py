"""`make compare` reads the two-hop family: the clue condition of the hop model's predictions."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cultureqa.runs.compare import Experiment, cells, compare

PARAMS = {
    "model": {"id": "m1"},
    "prompt": {"style": "zero_shot"},
    "evaluate": {"benchmarks": []},
    "twohop": {
        "hop": {"model": "model"},
        "paths": {"build": "data/build/twohop"},
        "region_set": "lands",
    },
}


def test_the_twohop_family_is_compared_on_its_clue_predictions(tmp_path: Path) -> None:
    assert [c for c in cells(PARAMS, "baselines.random") if c.family == "twohop"] == []
    (cell,) = [c for c in cells(PARAMS, "model") if c.family == "twohop"]
    (path,) = cell.paths
    assert path == "data/build/twohop/lands/hop/clue/predictions.parquet"
    assert cell.keys == ("case_id",) and cell.stage == "twohop_hop"
    target = tmp_path / path
    target.parent.mkdir(parents=True)
    pd.DataFrame(
        {"case_id": ["a", "b", "c", "d"], "correct": [True, False, True, True]}
    ).to_parquet(target)
    result = compare(tmp_path, [Experiment("workspace", None, PARAMS)], baseline="workspace")
    (row,) = [r for r in result.rows if r["column"] == "twohop"]
    assert row["accuracy"].value == pytest.approx(0.75) and row["accuracy"].n == 4
