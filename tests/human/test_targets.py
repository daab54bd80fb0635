"""The ``mocqa`` target reads the ID-MoCQA dataset the evaluation reads (``mocqa_eval.dataset``).

Indonesia's build through the engine is that dataset (docs/twohop-engine.md §8): human validation
samples the variants its judge ruled on (``judged.parquet`` beside the dataset: kept and rejected,
with ``judge_keep``), in the statement layout, with the set's seed; a missing file is one error
naming it and the stage that builds it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cultureqa.human.datasets import load_target
from tests.human.conftest import mocqa_frame

ROOT = Path(__file__).resolve().parents[2]


def test_the_mocqa_target_reads_the_evaluated_dataset(tmp_path: Path) -> None:
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    assert params["mocqa_eval"]["dataset"] == "data/build/twohop/indonesia/dataset.parquet"
    params["twohop"]["seed"] = 7
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    with pytest.raises(
        FileNotFoundError, match=r"judged.parquet not found.*twohop_build@indonesia"
    ):
        load_target(tmp_path, "mocqa")
    path = tmp_path / params["mocqa_eval"]["dataset"]
    path.parent.mkdir(parents=True)
    frame = mocqa_frame()
    frame.to_parquet(path)
    # the judged variants beside it: the published ones kept, every fifth rejected
    judged = frame.assign(judge_keep=[n % 5 != 0 for n in range(len(frame))])
    judged.to_parquet(path.with_name("judged.parquet"))
    target = load_target(tmp_path, "mocqa")
    assert list(target.items["item_id"]) == list(frame["item_id"])
    assert target.judge_keep == dict(zip(judged["item_id"], judged["judge_keep"], strict=True))
    assert target.seed == 7 and target.noun == "province"
    assert target.normalize("Jawa Barat") == "West Java"
