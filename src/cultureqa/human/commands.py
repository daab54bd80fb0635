"""``cultureqa human push|pull|export|report``: Label Studio projects out, the seed's numbers in.

``push`` samples the dataset (clue type × language), creates a Label Studio project with the
guideline's interface and imports one task per item; ``push --adjudicate`` sends the items the
last ``pull`` found split to a third annotator. ``pull`` reads every pushed project's annotations,
writes the labels table (DVC-tracked), computes κ, judge precision/recall, ICC(2,1) and the human
baseline into ``metrics/human/<name>.json`` and an MLflow run, and lists the items that need a
third annotator. ``export`` and ``report`` are the same sample and the same numbers through a CSV
sheet, for people without a server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.core.io import write_csv, write_json
from cultureqa.human import agreement, interface, items
from cultureqa.human.datasets import Target
from cultureqa.human.studio import Studio, labels_from_tasks


def _sample(target: Target, per_stratum: int | None) -> pd.DataFrame:
    return items.sample_items(target.items, per_stratum or target.per_stratum, target.seed)


def _projects_path(target: Target) -> Path:
    return target.folder / "projects.json"


def _projects(target: Target) -> dict[str, Any]:
    path = _projects_path(target)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"projects": []}


def push(
    target: Target,
    studio: Studio,
    per_stratum: int | None = None,
    per_item: int | None = None,
    overlap_percent: int | None = None,
    adjudicate: bool = False,
) -> dict[str, Any]:
    """Create the project (or the adjudication project) and import its tasks; what was made."""
    picked = _sample(target, per_stratum)
    kind = "annotation"
    if adjudicate:
        labels_path = target.folder / "labels.csv"
        if not labels_path.exists():
            raise FileNotFoundError(f"{labels_path} not found: run `cultureqa human pull` first")
        split = agreement.needs_adjudication(agreement.import_labels(labels_path))
        picked = picked[picked["item_id"].isin(set(split["item_id"]))]
        if picked.empty:
            return {
                "kind": "adjudication",
                "project": None,
                "tasks": 0,
                "note": "no item needs a third annotator",
            }
        kind, per_item, overlap_percent = "adjudication", 1, 100
    versions = items.siblings(target.items, picked)
    n_versions = max(len(v) for v in versions.values())
    n_options = max(len(o) for o in picked["options"])
    guideline = interface.GUIDELINE.format(noun=target.noun)
    title = f"cultureqa {target.name} {kind} ({len(picked)} items)"
    project = studio.create_project(
        title,
        interface.label_config(n_versions, n_options, target.noun),
        guideline,
        per_item or target.per_item,
        target.overlap_percent if overlap_percent is None else overlap_percent,
    )
    made = studio.import_tasks(project, interface.tasks(picked, versions, n_versions, guideline))
    record = {
        "kind": kind,
        "project": project,
        "url": studio.url,
        "tasks": made,
        "per_item": per_item or target.per_item,
        "overlap_percent": target.overlap_percent if overlap_percent is None else overlap_percent,
    }
    state = _projects(target)
    state["projects"].append(record)
    write_json(_projects_path(target), state)
    return record


def pull(
    target: Target, studio: Studio, projects: list[int] | None = None, track: bool = True
) -> tuple[dict[str, pd.DataFrame], Counter[str]]:
    """Read the projects' annotations, write labels and metrics; the tables and the counts."""
    chosen = projects or [int(p["project"]) for p in _projects(target)["projects"] if p["project"]]
    if not chosen:
        raise FileNotFoundError(
            f"no pushed project recorded in {_projects_path(target)}: run `cultureqa human push` "
            "or name the project with --project"
        )
    users = studio.users()
    exported = [task for project in chosen for task in studio.tasks(project)]
    pulled = labels_from_tasks(exported, users)
    counts = pulled.counts
    counts["tasks read"] = len(exported)
    labels_path = target.folder / "labels.csv"
    write_csv(labels_path, pulled.labels)
    if track:
        _dvc_add(target.root, labels_path)
    tables = report(target, agreement.import_labels(labels_path), counts, track)
    return tables, counts


def report(
    target: Target, labels: pd.DataFrame, counts: Counter[str] | None = None, track: bool = True
) -> dict[str, pd.DataFrame]:
    """The seed's tables from a labels table (both paths): metrics, report and an MLflow run.

    ``metrics/human/<name>.json`` holds the numbers (DVC metrics: nested, numeric leaves);
    ``data/human/<name>/report.json`` every table row by row, with the items to adjudicate.
    """
    unknown = sorted(set(labels["item_id"]) - set(target.items["item_id"]))
    counts = counts if counts is not None else Counter()
    if unknown:
        counts[f"labels of items not in the {target.name} dataset (left out)"] = len(unknown)
        labels = labels[~labels["item_id"].isin(unknown)]
    tables = agreement.all_tables(labels, target.items, target.judge_keep, target.normalize)
    document = {
        "dataset": target.name,
        "annotators": sorted(set(labels["annotator"])),
        "counts": dict(sorted(counts.items())),
        **agreement.summarize(tables),
    }
    numbers = headline(tables, labels, counts)
    write_json(target.folder / "report.json", document)
    write_json(target.metrics_path, numbers)
    if track:
        _log_mlflow(target, numbers, document)
    return tables


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def headline(
    tables: dict[str, pd.DataFrame], labels: pd.DataFrame, counts: Counter[str]
) -> dict[str, Any]:
    """The numbers as nested dicts with numeric leaves (DVC metrics and MLflow metric names)."""
    out: dict[str, Any] = {
        "items_labelled": int(labels["item_id"].nunique()),
        "annotators": int(labels["annotator"].nunique()),
        "needs_adjudication": len(tables["needs_adjudication"]),
        "counts": {reason: int(n) for reason, n in sorted(counts.items())},
        "kappa_quality": {},
        "icc_2_1": {},
    }
    for row in tables["kappa_quality"].to_dict("records"):
        pair = f"{row['annotator_a']} | {row['annotator_b']}"
        out["kappa_quality"].setdefault(str(row["clue_type"]), {})[pair] = _number(row["kappa"])
    for name in ("icc_quality", "icc_naturalness", "icc_difficulty"):
        for row in tables[name].to_dict("records"):
            scale = out["icc_2_1"].setdefault(str(row["rating"]), {})
            scale[str(row["clue_type"])] = _number(row["icc_2_1"])
    if "judge_vs_human" in tables:
        out["judge"] = {
            str(row["clue_type"]): {
                k: _number(row[k]) for k in ("precision", "recall", "n", "n_rejected")
            }
            for row in tables["judge_vs_human"].to_dict("records")
        }
    baseline: dict[str, dict[str, float | None]] = {}
    for row in tables["human_baseline"].to_dict("records"):
        cell = "all" if row["clue_type"] == "all" else f"{row['clue_type']}.{row['language']}"
        baseline.setdefault(str(row["metric"]), {})[cell] = _number(row["accuracy"])
    out["human_accuracy"] = baseline
    return out


def _dvc_add(root: Path, path: Path) -> None:
    """Put the labels table under DVC (``dvc add``); a repository without DVC says so."""
    if not (root / ".dvc").is_dir():
        raise FileNotFoundError(f"{root} is not a DVC repository: the labels stay untracked")
    done = subprocess.run(
        [sys.executable, "-m", "dvc", "add", "--quiet", str(path.relative_to(root))],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"dvc add {path}: {done.stderr.strip()[-300:]}")


def _log_mlflow(target: Target, numbers: dict[str, Any], document: dict[str, Any]) -> str:
    """One MLflow run per pull or report in ``<prefix>/<name>-human``: the numbers as metrics."""
    from cultureqa.core.config import load_params, select
    from cultureqa.runs.tracking import configure, numeric_leaves, tracking_uri

    tracking = select(load_params(target.root / "params.yaml"), "tracking")
    if not tracking.get("enabled", True):
        return ""
    import mlflow

    experiment = f"{tracking['experiment_prefix']}/{target.name}-human"
    experiment_id = configure(target.root, experiment, tracking_uri(tracking))
    with mlflow.start_run(experiment_id=experiment_id, run_name=f"human · {target.name}") as run:
        mlflow.set_tags({"pipeline": "human", "dataset": target.name})
        mlflow.log_metrics(numeric_leaves("", numbers, {}))
        mlflow.log_dict(document, "human_validation.json")
        return str(run.info.run_id)


def export_sheet(target: Target, out: Path, per_stratum: int | None = None) -> int:
    """The CSV path: the same sample as ``push``, as a sheet with blank label columns."""
    sheet = items.annotation_sheet(_sample(target, per_stratum))
    write_csv(out, sheet)
    return len(sheet)
