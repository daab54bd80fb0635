"""The build writes every variant the judge ruled on, kept and rejected, with its text and verdict.

``judged.parquet`` is what human validation samples to measure the judge's precision and recall
(docs/human-validation.md), so a rejected variant must carry the text the judge read (a planted
leak stays visible in it), a kept variant its published row, and the counts reach the card metrics.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.regions.config import RegionSet
from cultureqa.regions.judges.checks import EXCLUDED_REASON, CheckConfig
from cultureqa.regions.pipeline import JUDGED_COLUMNS, run_build
from tests.regions.invented import NAMES, write_invented

EXCLUDED = {"Q01": "planted: judged out", "Q04": "planted: judged out"}


def excluded_set(root: Path) -> dict[str, Any]:
    """The invented set with two source questions excluded: the rule judge rejects their items."""
    raw = write_invented(root)
    raw["source"] = {**raw["source"], "exclude": dict(EXCLUDED)}
    return raw


def test_kept_and_rejected_variants_with_the_text_the_judge_read(tmp_path: Path) -> None:
    raw = excluded_set(tmp_path)
    result = run_build(RegionSet.from_params(raw, tmp_path), tmp_path, 13, CheckConfig())
    judged, dataset = result.judged, result.dataset
    assert list(judged.columns) == [*dataset.columns, *JUDGED_COLUMNS]
    rejected = judged[~judged["judge_keep"]]
    assert set(rejected["source_id"]) == set(EXCLUDED) and set(rejected["language"]) == {"en", "id"}
    assert (rejected["judge"] == "rules").all()
    assert (rejected["judge_reason"] == EXCLUDED_REASON).all()
    assert (
        rejected["narrative"].str.len().gt(0).all() and rejected["question"].str.len().gt(0).all()
    )
    # every published item is a kept variant, row for row as published
    kept = judged[judged["judge_keep"]].drop(columns=list(JUDGED_COLUMNS)).set_index("item_id")
    assert len(dataset) > 0 and set(dataset["item_id"]) == set(kept.index)
    pd.testing.assert_frame_equal(kept.loc[dataset["item_id"]], dataset.set_index("item_id"))
    # the rule judge's verdicts and the judged rows agree, variant by variant
    verdicts = result.judgements.set_index("variant_id")["acceptable"]
    assert judged.set_index("item_id")["judge_keep"].to_dict() == verdicts.to_dict()
    assert result.metrics["judged"] == {
        "variants": len(judged), "kept": len(dataset), "rejected": len(rejected),
        "published_without_verdict": 0,
    }  # fmt: skip


def test_a_planted_leak_is_judged_out_with_its_text_and_kept_sides_stay(tmp_path: Path) -> None:
    raw = write_invented(tmp_path)
    raw["replacements"]["id"] = {
        k: v for k, v in raw["replacements"]["id"].items() if k != "capital"
    }
    result = run_build(RegionSet.from_params(raw, tmp_path), tmp_path, 13, CheckConfig())
    judged = result.judged
    rejected = judged[~judged["judge_keep"]]
    assert set(rejected["language"]) == {"id"} and len(rejected) > 0
    assert (rejected["judge_reason"] == "own-region leak").all()
    for row in rejected.itertuples():  # the capital the judge saw is in the text
        assert NAMES[str(row.region)][2] in str(row.narrative)
    # the English sides were kept by the judge, then dropped for their missing Indonesian side
    kept = judged[judged["judge_keep"]]
    assert set(kept["language"]) == {"en"} and len(result.dataset) == 0
    assert set(kept["item_id"]) <= set(
        result.removed[result.removed["stage"] == "rebalance"]["item_id"]
    )
    assert kept["option_A"].str.len().gt(0).all()  # finalized in the set's format like the dataset


def test_the_statement_format_writes_judged_rows_too(tmp_path: Path) -> None:
    from tests.regions.test_statement_format import statement_set

    rs = statement_set(tmp_path)
    assert rs.item_format == "statement"
    rs = dataclasses.replace(rs, source={**rs.source, "exclude": {"st-01": "planted"}})
    result = run_build(rs, tmp_path, 13, CheckConfig())
    judged, dataset = result.judged, result.dataset
    assert list(judged.columns) == [*dataset.columns, *JUDGED_COLUMNS]
    assert judged["judge_keep"].sum() == len(dataset) > 0
    rejected = judged[~judged["judge_keep"]]
    assert set(rejected["source_id"]) == {"st-01"} and set(rejected["language"]) == {"en", "id"}
    # finalized like the published rows: the gold letter follows the options' order
    for row in rejected.itertuples():
        assert len(row.options) == len(row.option_order) and row.answer in "ABC"
        assert row.province == row.region and row.question.startswith(("Think", "Bayangkan"))
