"""`make compare` reads the two-hop family: the clue condition of the hop model's predictions."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cultureqa.compare import Experiment, compare, prediction_files

PARAMS = {
    "model": {"id": "m1"},
    "prompt": {"style": "zero_shot"},
    "evaluate": {"benchmarks": []},
    "twohop": {"hop": {"model": "model"}, "paths": {"build": "data/build/twohop"}},
}


def test_the_twohop_family_is_compared_on_its_clue_predictions(tmp_path: Path) -> None:
    assert list(prediction_files(PARAMS, "baselines.random")) == []
    (path,) = [p for b, p in prediction_files(PARAMS, "model") if b == "twohop"]
    assert path == "data/build/twohop/hop/clue/predictions.parquet"
    target = tmp_path / path
    target.parent.mkdir(parents=True)
    pd.DataFrame(
        {"case_id": ["a", "b", "c", "d"], "correct": [True, False, True, True]}
    ).to_parquet(target)
    result = compare(tmp_path, [Experiment("workspace", None, PARAMS)], baseline="workspace")
    assert result.rows[0]["twohop"].value == pytest.approx(0.75)
