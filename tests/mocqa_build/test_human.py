"""Human validation tools on synthetic annotator labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cultureqa.io import SourceError
from cultureqa.knowledge.gazetteer import normalize_province
from cultureqa.mocqa_build import human


@pytest.fixture(scope="module")
def dataset(template_build) -> pd.DataFrame:
    return template_build[1]["finalize"].frame


def _labels(dataset: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Two annotators: a1 is the 'truth', a2 agrees 80% of the time; both answer questions."""
    rng = np.random.default_rng(seed)
    sample = human.export_annotation_sample(dataset, per_stratum=6, seed=1)
    rows = []
    gold = dataset.set_index("item_id")
    for item in sample["item_id"]:
        base = rng.choice(["OK", "Minor", "Moderate", "Significant"], p=[0.5, 0.2, 0.2, 0.1])
        for annotator in ("a1", "a2"):
            quality = (
                base if annotator == "a1" or rng.random() < 0.8 else rng.choice(human.CATEGORIES)
            )
            correct = rng.random() < (0.9 if annotator == "a1" else 0.7)
            answer = (
                gold.loc[item, "answer"]
                if correct
                else "ABC".replace(gold.loc[item, "answer"], "")[0]
            )
            true_province = gold.loc[item, "province"]
            province = (
                true_province if correct else ("Papua" if true_province != "Papua" else "Bali")
            )
            rows.append(
                {
                    "item_id": item,
                    "annotator": annotator,
                    "quality": quality,
                    "naturalness": rng.choice(["Natural", "Acceptable", "Unnatural"]),
                    "difficulty": rng.choice(["Easy", "Moderate", "Hard"]),
                    "answer_province": {"Aceh": "Nanggroe Aceh Darussalam"}.get(province, province),
                    "answer_option": answer,
                }
            )
    return pd.DataFrame(rows)


def test_export_is_stratified_and_hides_gold(dataset: pd.DataFrame, tmp_path: Path) -> None:
    sample = human.export_annotation_sample(dataset, per_stratum=3, seed=5)
    assert (sample.groupby(["clue_type", "language"]).size() == 3).all() and len(sample) == 36
    assert "answer" not in sample.columns and "province" not in sample.columns
    assert {"option_A", "option_B", "option_C", *human.ANNOTATION_COLUMNS} <= set(sample.columns)
    assert sample.equals(human.export_annotation_sample(dataset, per_stratum=3, seed=5))


def test_import_validates_labels_with_row_and_column(dataset: pd.DataFrame, tmp_path: Path) -> None:
    labels = _labels(dataset)
    path = tmp_path / "labels.csv"
    labels.to_csv(path, index=False)
    assert len(human.import_labels(path)) == len(labels)
    labels.loc[4, "naturalness"] = "Weird"
    labels.to_csv(path, index=False)
    with pytest.raises(SourceError, match=r"labels.csv, row 5, column 'naturalness': 'Weird'"):
        human.import_labels(path)
    with pytest.raises(SourceError, match="missing column"):
        human.import_labels(labels.drop(columns=["difficulty"]))


def test_kappa_per_clue_type(dataset: pd.DataFrame) -> None:
    labels = human.import_labels(_labels(dataset))
    table = human.kappa_by_clue_type(labels, dataset)
    assert set(table["clue_type"]) == set(dataset["clue_type"])
    assert (table["n"] == 12).all() and table["kappa"].between(-1, 1).all()
    identical = labels.copy()
    identical.loc[identical["annotator"] == "a2", "quality"] = list(
        identical.loc[identical["annotator"] == "a1", "quality"]
    )
    assert (human.kappa_by_clue_type(identical, dataset)["kappa"].dropna() == 1.0).all()


def test_judge_precision_recall_against_human_acceptable(dataset: pd.DataFrame) -> None:
    labels = human.import_labels(_labels(dataset))
    truth = human.human_acceptable(labels)
    perfect = human.judge_vs_human(labels, truth.to_dict(), dataset)
    overall = perfect.set_index("clue_type").loc["all"]
    assert overall["precision"] == 1.0 and overall["recall"] == 1.0
    keep_all = human.judge_vs_human(labels, dict.fromkeys(truth.index, True), dataset)
    overall = keep_all.set_index("clue_type").loc["all"]
    assert overall["recall"] == 1.0 and overall["precision"] == pytest.approx(truth.mean())


def test_icc_per_class_and_human_baseline(dataset: pd.DataFrame) -> None:
    labels = human.import_labels(_labels(dataset))
    icc = human.icc_by_class(labels, dataset, "quality")
    assert len(icc) == 6 and (icc["n_raters"] == 2).all() and icc["icc_2_1"].between(-1, 1).all()
    agree = labels.copy()
    agree.loc[agree["annotator"] == "a2", "quality"] = list(
        agree.loc[agree["annotator"] == "a1", "quality"]
    )
    assert np.allclose(human.icc_by_class(agree, dataset, "quality")["icc_2_1"], 1.0)
    baseline = human.human_baseline(labels, dataset, normalize_province)
    overall = baseline[(baseline["clue_type"] == "all")].set_index("metric")
    assert set(overall.index) == {"multi_hop_accuracy", "first_hop_accuracy"}
    assert 0.7 < overall.loc["multi_hop_accuracy", "accuracy"] < 0.9  # (0.9 + 0.7) / 2 expected
    # first-hop answers pass through the gazetteer ("Nanggroe Aceh Darussalam" counts as Aceh)
    assert overall.loc["first_hop_accuracy", "accuracy"] == pytest.approx(
        overall.loc["multi_hop_accuracy", "accuracy"]
    )
    assert (baseline["model"] == "human").all() and {"ci_low", "ci_high"} <= set(baseline.columns)
    assert human.summarize({"icc": icc})["icc"][0]["rating"] == "quality"
