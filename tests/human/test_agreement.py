"""Human-validation numbers on synthetic labels, each checked against an independent computation.

κ against scikit-learn's ``cohen_kappa_score``, precision/recall against scikit-learn's
``precision_score``/``recall_score``, ICC(2,1) against the mean squares of a statsmodels two-way
ANOVA (``ols`` + ``anova_lm``): libraries the project's own code does not use for these numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from sklearn.metrics import cohen_kappa_score, precision_score, recall_score
from statsmodels.stats.anova import anova_lm

from cultureqa.core.io import SourceError
from cultureqa.human import agreement
from cultureqa.human import items as human_items
from cultureqa.human.items import SCALES
from cultureqa.knowledge.gazetteer import normalize_province


def simulated_labels(items: pd.DataFrame, picked: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Two annotators: a1 is the 'truth', a2 agrees 80% of the time; both answer questions."""
    rng = np.random.default_rng(seed)
    gold = items.set_index("item_id")
    rows = []
    for item in picked["item_id"]:
        base = rng.choice(["OK", "Minor", "Moderate", "Significant"], p=[0.5, 0.2, 0.2, 0.1])
        for annotator in ("a1", "a2"):
            keep = annotator == "a1" or rng.random() < 0.8
            quality = base if keep else rng.choice(human_items.LABELS["quality"])
            correct = rng.random() < (0.9 if annotator == "a1" else 0.7)
            answer = gold.loc[item, "answer"]
            option = answer if correct else "ABC".replace(answer, "")[0]
            true_region = gold.loc[item, "region"]
            region = true_region if correct else ("Papua" if true_region != "Papua" else "Bali")
            rows.append(
                {
                    "item_id": item,
                    "annotator": annotator,
                    "quality": quality,
                    "naturalness": rng.choice(["Natural", "Acceptable", "Unnatural"]),
                    "difficulty": rng.choice(["Easy", "Moderate", "Hard"]),
                    "answer_region": {"Aceh": "Nanggroe Aceh Darussalam"}.get(region, region),
                    "answer_option": option,
                }
            )
    return pd.DataFrame(rows)


def anova_icc_2_1(long: pd.DataFrame) -> float:
    """ICC(2,1) from statsmodels' two-way ANOVA table (Shrout & Fleiss 1979, case 2)."""
    fit = smf.ols("code ~ C(item_id) + C(annotator)", data=long).fit()
    table = anova_lm(fit)
    n, k = long["item_id"].nunique(), long["annotator"].nunique()
    bms = table.loc["C(item_id)", "mean_sq"]
    jms = table.loc["C(annotator)", "mean_sq"]
    ems = table.loc["Residual", "mean_sq"]
    return float((bms - ems) / (bms + (k - 1) * ems + k * (jms - ems) / n))


def independent(labels: pd.DataFrame, items: pd.DataFrame, judge: dict[str, bool]) -> dict:
    """κ per clue type, overall precision/recall and ICC(2,1) per clue type, from scratch."""
    merged = labels.merge(items[["item_id", "clue_type"]], on="item_id")
    wide = merged.pivot(index="item_id", columns="annotator", values="quality")
    clue = items.set_index("item_id")["clue_type"]
    a, b = sorted(wide.columns)
    kappa = {
        c: cohen_kappa_score(part[a], part[b]) for c, part in wide.groupby(clue.reindex(wide.index))
    }
    acceptable = wide.isin(["OK", "Minor"]).sum(axis=1) > 1  # majority of two = both
    ids = sorted(acceptable.index)
    pred = [judge[i] for i in ids]
    gold = [bool(acceptable[i]) for i in ids]
    coded = merged.assign(code=merged["quality"].map(SCALES["quality"]))
    icc = {c: anova_icc_2_1(part) for c, part in coded.groupby("clue_type")}
    return {
        "kappa": kappa,
        "precision": precision_score(gold, pred),
        "recall": recall_score(gold, pred),
        "icc": icc,
    }


def test_numbers_equal_an_independent_computation(items: pd.DataFrame) -> None:
    picked = human_items.sample_items(items, per_stratum=4, seed=1)
    labels = agreement.import_labels(simulated_labels(items, picked))
    judge = {i: bool(n % 3) for n, i in enumerate(sorted(picked["item_id"]))}
    tables = agreement.all_tables(labels, items, judge, normalize_province)
    expected = independent(labels, items, judge)
    kappa = tables["kappa_quality"].set_index("clue_type")["kappa"]
    assert kappa.to_dict() == pytest.approx(expected["kappa"])
    assert len(set(np.round(kappa, 6))) > 2  # the clue types really differ: not a constant
    overall = tables["judge_vs_human"].set_index("clue_type").loc["all"]
    assert (overall["precision"], overall["recall"]) == pytest.approx(
        (expected["precision"], expected["recall"])
    )
    icc = tables["icc_quality"].set_index("clue_type")["icc_2_1"]
    assert icc.to_dict() == pytest.approx(expected["icc"])


def test_sample_is_stratified_and_sheet_hides_gold(items: pd.DataFrame) -> None:
    picked = human_items.sample_items(items, per_stratum=3, seed=5)
    assert (picked.groupby(["clue_type", "language"]).size() == 3).all() and len(picked) == 36
    sheet = human_items.annotation_sheet(picked)
    assert "answer" not in sheet.columns and "region" not in sheet.columns
    assert {"option_A", "option_B", "option_C", *human_items.ANNOTATION_COLUMNS} <= set(sheet)
    assert picked.equals(human_items.sample_items(items, per_stratum=3, seed=5))
    assert not picked.equals(human_items.sample_items(items, per_stratum=3, seed=6))


def test_import_validates_labels_with_row_and_column(items: pd.DataFrame, tmp_path: Path) -> None:
    labels = simulated_labels(items, human_items.sample_items(items, 2, 0))
    path = tmp_path / "labels.csv"
    labels.rename(columns={"answer_region": "answer_province"}).to_csv(path, index=False)
    assert len(agreement.import_labels(path)) == len(labels)  # the older sheet's column name
    labels.loc[4, "naturalness"] = "Weird"
    labels.to_csv(path, index=False)
    with pytest.raises(SourceError, match=r"labels.csv, row 5, column 'naturalness': 'Weird'"):
        agreement.import_labels(path)
    with pytest.raises(SourceError, match="missing column"):
        agreement.import_labels(labels.drop(columns=["difficulty"]))


def test_perfect_agreement_and_perfect_judge(items: pd.DataFrame) -> None:
    picked = human_items.sample_items(items, per_stratum=4, seed=1)
    labels = agreement.import_labels(simulated_labels(items, picked))
    agree = labels.copy()
    agree.loc[agree["annotator"] == "a2", "quality"] = list(
        agree.loc[agree["annotator"] == "a1", "quality"]
    )
    assert (agreement.kappa_by_clue_type(agree, items)["kappa"].dropna() == 1.0).all()
    assert np.allclose(agreement.icc_by_class(agree, items, "quality")["icc_2_1"], 1.0)
    assert agreement.needs_adjudication(agree).empty
    truth = agreement.human_acceptable(labels)
    perfect = agreement.judge_vs_human(labels, truth.to_dict(), items)
    assert tuple(perfect.set_index("clue_type").loc["all", ["precision", "recall"]]) == (1.0, 1.0)


def test_split_items_go_to_adjudication(items: pd.DataFrame) -> None:
    picked = human_items.sample_items(items, per_stratum=4, seed=1)
    labels = agreement.import_labels(simulated_labels(items, picked))
    split = agreement.needs_adjudication(labels)
    wide = labels.pivot(index="item_id", columns="annotator", values="quality").isin(
        ["OK", "Minor"]
    )
    assert set(split["item_id"]) == set(wide.index[wide["a1"] != wide["a2"]]) and len(split) > 0
    third = labels[labels["item_id"].isin(split["item_id"])].query("annotator == 'a1'")
    settled = pd.concat([labels, third.assign(annotator="a3")])
    assert agreement.needs_adjudication(settled).empty  # a third rating gives a majority


def test_human_baseline_reads_regions_through_the_gazetteer(items: pd.DataFrame) -> None:
    picked = human_items.sample_items(items, per_stratum=4, seed=1)
    labels = agreement.import_labels(simulated_labels(items, picked))
    baseline = agreement.human_baseline(labels, items, normalize_province)
    overall = baseline[(baseline["clue_type"] == "all")].set_index("metric")
    answered = labels.merge(items, on="item_id")
    expected = (answered["answer_option"] == answered["answer"]).mean()
    assert overall.loc["multi_hop_accuracy", "accuracy"] == pytest.approx(expected)
    # "Nanggroe Aceh Darussalam" counts as Aceh, so first-hop equals multi-hop here
    assert overall.loc["first_hop_accuracy", "accuracy"] == pytest.approx(expected)
    assert (baseline["model"] == "human").all() and {"ci_low", "ci_high"} <= set(baseline.columns)
