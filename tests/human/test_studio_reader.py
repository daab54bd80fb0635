"""Label Studio's exported tasks → the labels table, offline: every merge and drop counted."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.core.io import SourceError
from cultureqa.human import agreement, commands, interface
from cultureqa.human import items as human_items
from cultureqa.human.datasets import Target
from cultureqa.human.studio import Studio, StudioError, labels_from_tasks
from cultureqa.knowledge.gazetteer import normalize_province


def _choice(name: str, value: str) -> dict[str, Any]:
    return {
        "from_name": name,
        "to_name": "text_1",
        "type": "choices",
        "value": {"choices": [value]},
    }


def _task(task_id: int, first: str, second: str, annotations: list[dict[str, Any]]) -> dict:
    data = {"item_1": first, "item_2": second, "text_1": "…", "text_2": "…"}
    return {"id": task_id, "data": data, "annotations": annotations}


def _annotation(user: int, natural_1: str, natural_2: str, cancelled: bool = False) -> dict:
    result = [
        _choice(interface.QUALITY, "OK"),
        _choice(interface.DIFFICULTY, "Easy"),
        _choice(interface.OPTION, "A"),
        {
            "from_name": interface.REGION,
            "to_name": "text_1",
            "type": "textarea",
            "value": {"text": [" Bali "]},
        },
        _choice(interface.naturalness_name(1), natural_1),
        _choice(interface.naturalness_name(2), natural_2),
    ]
    return {"completed_by": user, "result": result, "was_cancelled": cancelled}


def test_slots_become_rows_and_double_ratings_are_counted() -> None:
    # x.en and x.id were both sampled: each task shows the other as its second version
    exported = [
        _task(
            1,
            "x.en",
            "x.id",
            [
                _annotation(7, "Natural", "Unnatural"),
                _annotation(8, "Acceptable", "Acceptable", cancelled=True),
            ],
        ),
        _task(2, "x.id", "x.en", [_annotation(7, "Acceptable", "Unnatural")]),
    ]
    pulled = labels_from_tasks(exported, {7: "ann@example.org"})
    labels = pulled.labels.set_index("item_id")
    assert list(labels["annotator"]) == ["ann@example.org"] * 2
    # each item keeps the naturalness given where it was answered (slot 1)
    assert labels.loc["x.en", "naturalness"] == "Natural"
    assert labels.loc["x.id", "naturalness"] == "Acceptable"
    assert labels.loc["x.en", "answer_region"] == "Bali" and labels.loc["x.en", "quality"] == "OK"
    assert pulled.counts == Counter(
        {
            "annotations read": 2,
            "skipped by the annotator (cancelled annotation)": 1,
            "second rating of an item by one annotator (kept the one given with its answer)": 2,
        }
    )
    assert agreement.import_labels(pulled.labels).shape[0] == 2  # every label on its scale


def test_unknown_user_is_named_by_id_not_dropped() -> None:
    pulled = labels_from_tasks([_task(1, "y.en", "", [_annotation(9, "Natural", "Natural")])], {})
    assert list(pulled.labels["annotator"]) == ["user-9"] and len(pulled.labels) == 1


def test_no_token_and_no_server_are_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    with pytest.raises(StudioError, match="set LABEL_STUDIO_API_KEY"):
        Studio.from_env()
    with pytest.raises(StudioError, match="unreachable"):
        Studio("http://127.0.0.1:9", "0" * 40, timeout=2).tasks(1)


def test_csv_path_writes_the_same_numbers(items: pd.DataFrame, tmp_path: Path) -> None:
    from tests.human.test_agreement import independent, simulated_labels

    target = Target("mocqa", items, None, normalize_province, "province", 1, 3, 2, 100, tmp_path)
    sheet = tmp_path / "sheet.csv"
    assert commands.export_sheet(target, sheet) == 36
    picked = pd.read_csv(sheet)
    assert list(picked["item_id"]) == list(human_items.sample_items(items, 3, 1)["item_id"])
    labels = simulated_labels(items, picked)
    tables = commands.report(target, agreement.import_labels(labels), track=False)
    kappa = tables["kappa_quality"].set_index("clue_type")["kappa"]
    judge = dict.fromkeys(picked["item_id"], True)
    assert kappa.to_dict() == pytest.approx(independent(labels, items, judge)["kappa"])
    numbers = json.loads(target.metrics_path.read_text(encoding="utf-8"))
    assert numbers["items_labelled"] == 36 and numbers["annotators"] == 2
    assert {c: v["a1 | a2"] for c, v in numbers["kappa_quality"].items()} == pytest.approx(
        kappa.to_dict()
    )
    assert set(numbers["icc_2_1"]) == {"quality", "naturalness", "difficulty"}
    document = json.loads((target.folder / "report.json").read_text(encoding="utf-8"))
    assert document["dataset"] == "mocqa" and len(document["kappa_quality"]) == 6


def test_report_logs_one_mlflow_run_and_pull_tracks_labels_in_dvc(
    items: pd.DataFrame, tmp_path: Path
) -> None:
    import subprocess
    import sys

    import mlflow

    from tests.human.test_agreement import simulated_labels

    root = Path(__file__).resolve().parents[2]
    (tmp_path / "params.yaml").write_text((root / "params.yaml").read_text(encoding="utf-8"))
    target = Target("mocqa", items, None, normalize_province, "province", 1, 2, 2, 100, tmp_path)
    labels = simulated_labels(items, human_items.sample_items(items, 2, 1))
    commands.report(target, agreement.import_labels(labels), Counter({"tasks read": 24}))
    runs = mlflow.search_runs(experiment_names=["cultureqa/mocqa-human"], output_format="list")
    assert len(runs) == 1 and runs[0].data.metrics["counts.tasks read"] == 24
    assert any(k.startswith("kappa_quality.") for k in runs[0].data.metrics)
    path = target.folder / "labels.csv"
    path.parent.mkdir(parents=True, exist_ok=True)  # report.json is already there
    labels.to_csv(path, index=False)
    with pytest.raises(FileNotFoundError, match="not a DVC repository"):
        commands._dvc_add(tmp_path, path)
    subprocess.run(
        [sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], cwd=tmp_path, check=True
    )
    commands._dvc_add(tmp_path, path)
    assert (path.parent / "labels.csv.dvc").exists()


def test_region_set_items_and_their_region_answers() -> None:
    from cultureqa.human.datasets import _region_matcher
    from cultureqa.human.items import two_hop_items

    frame = pd.DataFrame(
        {
            "item_id": ["c1.entity.en", "c2.entity.en"],
            "source_id": ["c1", "c2"],
            "region": ["ARE", "FRA"],
            "language": ["en", "en"],
            "clue_type": ["entity", "entity"],
            "narrative": ["A clue. A story.", "Another clue. Another story."],
            "question": ["What would they do?", "What would they do?"],
            "type_a": ["act a", "act a"],
            "type_b": ["act b", "act b"],
        }
    )
    items = two_hop_items(frame)
    assert list(items["options"]) == [["act a", "act b"]] * 2 and set(items["answer"]) == {""}
    table = pd.DataFrame(
        {
            "iso3": ["ARE", "FRA"],
            "name": ["United Arab Emirates", "France"],
            "aliases": ["the UAE;Emirates", ""],
        }
    )
    match = _region_matcher(table, "iso3", ["name"], "aliases")
    assert (match(" the  uae "), match("France"), match("Paris")) == ("ARE", "FRA", None)
    labels = pd.DataFrame(
        {
            "item_id": ["c1.entity.en", "c2.entity.en"],
            "annotator": ["a", "a"],
            "quality": ["OK", "OK"],
            "naturalness": ["", ""],
            "difficulty": ["", ""],
            "answer_region": ["Emirates", "Germany"],
            "answer_option": ["A", "B"],
        }
    )
    baseline = agreement.human_baseline(labels, items, match)
    overall = baseline[baseline["clue_type"] == "all"].set_index("metric")["accuracy"]
    assert overall.to_dict() == {"first_hop_accuracy": 0.5}  # no gold letter: no multi-hop row
    with pytest.raises(SourceError, match="not a two-hop dataset"):
        two_hop_items(frame.drop(columns=["narrative"]))
