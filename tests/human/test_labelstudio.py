"""``push`` and ``pull`` against a real Label Studio server (the ``labelstudio`` suite).

Two annotator accounts submit labels through the API with a known pattern of agreement; ``pull``
must read back exactly those labels and get κ, ICC(2,1) and the judge's precision/recall equal
to scikit-learn and a statsmodels ANOVA on the same labels. Run with ``make labelstudio`` done:
``python -m pytest -m labelstudio tests/human``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.human import agreement, commands, interface
from cultureqa.human.datasets import Target
from cultureqa.human.studio import Studio, StudioError
from cultureqa.knowledge.gazetteer import normalize_province
from tests.human.conftest import RunningStudio
from tests.human.test_agreement import independent, simulated_labels

pytestmark = [pytest.mark.labelstudio, pytest.mark.timeout(900)]  # the server starts in the first


def make_target(root: Path, items: pd.DataFrame, judge: dict[str, bool] | None) -> Target:
    (root / "params.yaml").write_text(
        "tracking:\n  enabled: true\n  experiment_prefix: cultureqa-test\n", encoding="utf-8"
    )
    (root / ".dvc").mkdir(exist_ok=True)
    return Target(
        "mocqa",
        items,
        judge,
        normalize_province,
        "province",
        seed=1,
        per_stratum=2,
        per_item=2,
        overlap_percent=100,
        root=root,
    )


def choice(name: str, value: str, to: str = "text_1") -> dict[str, Any]:
    return {"from_name": name, "to_name": to, "type": "choices", "value": {"choices": [value]}}


def result_for(task: dict[str, Any], labels: pd.DataFrame, annotator: str) -> list[dict[str, Any]]:
    """The annotation a person would submit, from the simulated labels of each shown version."""
    own = labels[labels["annotator"] == annotator].set_index("item_id")
    row = own.loc[task["data"]["item_1"]]
    result = [
        choice(interface.QUALITY, row["quality"]),
        choice(interface.DIFFICULTY, row["difficulty"]),
        choice(interface.OPTION, row["answer_option"]),
        {
            "from_name": interface.REGION,
            "to_name": "text_1",
            "type": "textarea",
            "value": {"text": [row["answer_region"]]},
        },
    ]
    slot = 1
    while f"item_{slot}" in task["data"]:
        item = task["data"][f"item_{slot}"]
        if item in own.index:
            value = own.loc[item, "naturalness"]
            result.append(choice(interface.naturalness_name(slot), value, f"text_{slot}"))
        slot += 1
    return result


def test_push_annotate_pull_equals_independent_numbers(
    label_studio: RunningStudio, items: pd.DataFrame, tmp_path: Path
) -> None:
    picked = commands.items.sample_items(items, per_stratum=2, seed=1)
    judge = {i: bool(n % 3) for n, i in enumerate(sorted(picked["item_id"]))}
    target = make_target(tmp_path, items, judge)
    emails = list(label_studio.tokens)
    owner = Studio(label_studio.url, label_studio.tokens[emails[0]])
    made = commands.push(target, owner)
    assert made["tasks"] == len(picked) == 24 and made["per_item"] == 2
    simulated = simulated_labels(items, picked).replace({"a1": emails[0], "a2": emails[1]})
    # naturalness of every version shown: an item sampled in one language is rated in both
    tasks = owner.tasks(made["project"])
    assert len(tasks) == 24 and {t["data"]["item_1"] for t in tasks} == set(picked["item_id"])
    for email in emails:
        studio = Studio(label_studio.url, label_studio.tokens[email])
        for task in tasks:
            studio.annotate(task["id"], result_for(task, simulated, email))
    tables, counts = commands.pull(target, owner, track=False)
    assert counts["annotations read"] == 48 and counts["tasks read"] == 24
    pulled = agreement.import_labels(target.folder / "labels.csv")
    answered = pulled[pulled["quality"] != ""].sort_values(["item_id", "annotator"])
    expected_rows = simulated.sort_values(["item_id", "annotator"])
    for column in agreement.LABEL_COLUMNS:
        assert list(answered[column]) == list(expected_rows[column]), column
    expected = independent(answered, items, judge)
    kappa = tables["kappa_quality"].set_index("clue_type")["kappa"]
    assert kappa.to_dict() == pytest.approx(expected["kappa"])
    overall = tables["judge_vs_human"].set_index("clue_type").loc["all"]
    assert (overall["precision"], overall["recall"]) == pytest.approx(
        (expected["precision"], expected["recall"])
    )
    icc = tables["icc_quality"].set_index("clue_type")["icc_2_1"]
    assert icc.to_dict() == pytest.approx(expected["icc"])
    assert target.metrics_path.exists()

    # the split items go back as an adjudication project, one annotator each
    split = tables["needs_adjudication"]
    assert len(split) > 0
    again = commands.push(target, owner, adjudicate=True)
    assert again["kind"] == "adjudication" and again["tasks"] == len(split)
    third = owner.tasks(again["project"])
    assert {t["data"]["item_1"] for t in third} == set(split["item_id"])


def test_a_refused_token_is_one_clear_error(label_studio: RunningStudio) -> None:
    with pytest.raises(StudioError, match="answered 401"):
        Studio(label_studio.url, "0" * 40).tasks(1)
