"""Human validation measures the build's judge: it samples the judged variants, kept and rejected.

A region-set build on the invented lands (``tests/regions/invented.py``, two source questions
excluded so the rule judge rejects their items) writes ``judged.parquet``; the ``twohop`` target
reads it, the sample holds both of the judge's classes, and the report's precision and recall
equal scikit-learn's on planted human labels. A planted judge that keeps everything gets recall 1
and, as precision, the share of variants the people accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from omegaconf import OmegaConf
from sklearn.metrics import precision_score, recall_score

from cultureqa.core.io import SourceError, write_parquet
from cultureqa.human import agreement, commands
from cultureqa.human.datasets import Target, load_target
from cultureqa.regions.config import RegionSet
from cultureqa.regions.judges.checks import CheckConfig
from cultureqa.regions.pipeline import run_build
from tests.regions.test_judged import excluded_set

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _invented_params(monkeypatch: pytest.MonkeyPatch) -> None:
    """The invented set's mapping is not a ``conf/region_set`` composition: read params as is."""
    monkeypatch.setattr("cultureqa.human.datasets.load_params", OmegaConf.load)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root with params.yaml and the invented set's build (dataset and judged variants)."""
    root = tmp_path_factory.mktemp("invented")
    raw = excluded_set(root)
    result = run_build(RegionSet.from_params(raw, root), root, 13, CheckConfig())
    folder = root / "data" / "build" / "twohop" / "invented"
    write_parquet(folder / "dataset.parquet", result.dataset)
    params: dict[str, Any] = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["twohop"] = {**params["twohop"], "region_set": "invented", "seed": 13}
    params["twohop"]["paths"] = {**params["twohop"]["paths"], "build": "data/build/twohop"}
    params["region_sets"] = {"invented": raw}
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    return root


def _labels(picked: pd.DataFrame) -> pd.DataFrame:
    """Two annotators agreeing; every third sampled variant (by id) is Moderate, the rest OK."""
    rows = []
    for n, row in enumerate(picked.sort_values("item_id").to_dict("records")):
        quality = "Moderate" if n % 3 == 0 else "OK"
        for annotator in ("a1", "a2"):
            rows.append(
                {
                    "item_id": row["item_id"], "annotator": annotator, "quality": quality,
                    "naturalness": "Natural", "difficulty": "Moderate",
                    "answer_region": row["region"], "answer_option": "",
                }
            )  # fmt: skip
    return agreement.import_labels(pd.DataFrame(rows))


def _judged_target(built: Path) -> tuple[Any, Target]:
    """The invented set rebuilt with its judged variants written; the ``twohop`` target on it."""
    raw = yaml.safe_load((built / "params.yaml").read_text(encoding="utf-8"))["region_sets"]
    result = run_build(RegionSet.from_params(raw["invented"], built), built, 13, CheckConfig())
    folder = built / "data" / "build" / "twohop" / "invented"
    write_parquet(folder / "judged.parquet", result.judged)
    target = load_target(built, "twohop")
    return result, target


def test_a_missing_judged_file_names_it_and_its_stage(built: Path) -> None:
    judged = built / "data" / "build" / "twohop" / "invented" / "judged.parquet"
    judged.unlink(missing_ok=True)
    with pytest.raises(FileNotFoundError, match=r"judged.parquet not found.*twohop_build@invented"):
        load_target(built, "twohop")
    write_parquet(judged, pd.read_parquet(judged.with_name("dataset.parquet")))
    with pytest.raises(SourceError, match=r"judged.parquet: no 'judge_keep' column"):
        load_target(built, "twohop")


def test_the_judge_is_measured_on_kept_and_rejected_variants(built: Path) -> None:
    result, target = _judged_target(built)
    assert target.judge_keep is not None
    assert set(target.items["item_id"]) == set(result.judged["item_id"])
    picked = commands._sample(target, 50)
    verdicts = [target.judge_keep[i] for i in picked["item_id"]]
    assert 0 < sum(verdicts) < len(verdicts)  # both classes in the sample
    labels = _labels(picked)
    tables = commands.report(target, labels, track=False)
    human = agreement.human_acceptable(labels)
    ids = sorted(human.index)
    gold, pred = [bool(human[i]) for i in ids], [target.judge_keep[i] for i in ids]
    assert 0 < recall_score(gold, pred) < 1  # the planted labels disagree with the judge both ways
    overall = tables["judge_vs_human"].set_index("clue_type").loc["all"]
    assert (overall["precision"], overall["recall"]) == pytest.approx(
        (precision_score(gold, pred), recall_score(gold, pred))
    )
    assert overall["n"] == len(ids) and overall["n_rejected"] == len(ids) - sum(pred)
    metrics = yaml.safe_load(target.metrics_path.read_text(encoding="utf-8"))
    assert metrics["judge"]["all"]["recall"] == pytest.approx(recall_score(gold, pred))
    # plant: a judge that keeps everything
    target.judge_keep = dict.fromkeys(target.judge_keep, True)
    keeps_all = commands.report(target, labels, track=False)["judge_vs_human"]
    row = keeps_all.set_index("clue_type").loc["all"]
    assert row["recall"] == 1.0 and row["n_rejected"] == 0
    assert row["precision"] == pytest.approx(sum(gold) / len(gold))


def test_the_human_baseline_is_scored_on_published_items_only(built: Path) -> None:
    """Rejected variants are annotated for the judge's sake, never scored as the human baseline."""
    _, target = _judged_target(built)
    assert target.judge_keep is not None
    picked = commands._sample(target, 50)
    labels = _labels(picked).assign(answer_option="A")
    kept = sum(target.judge_keep[i] for i in picked["item_id"])
    assert 0 < kept < len(picked)
    tables = agreement.all_tables(labels, target.items, target.judge_keep, target.normalize)
    first = tables["human_baseline"].query("metric == 'first_hop_accuracy' and clue_type == 'all'")
    assert int(first["n"].iloc[0]) == 2 * kept  # two annotators per kept item, no rejected one
    everyone = agreement.all_tables(labels, target.items, None, target.normalize)
    first_all = everyone["human_baseline"].query(
        "metric == 'first_hop_accuracy' and clue_type == 'all'"
    )
    assert int(first_all["n"].iloc[0]) == 2 * len(picked)  # no judge: every item is published
