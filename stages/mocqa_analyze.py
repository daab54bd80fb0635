"""DVC stage: ID-MoCQA tables, metrics and figures across every roster entry and prompt style."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)
import pandas as pd

from cultureqa.analysis.headline import mocqa_headline
from cultureqa.analysis.plotdata import slot_accuracy
from cultureqa.analysis.roster import roster_slots
from cultureqa.core.config import load_params, run_stage, select, setup_stage
from cultureqa.core.io import write_csv, write_json
from cultureqa.core.spend import budget_from, build_guard, team_from
from cultureqa.mocqa.answers import read_answer_sheets, score_human_sheets
from cultureqa.mocqa.evaluate import load_dataset
from cultureqa.mocqa.question_analysis import analyze_questions
from cultureqa.mocqa.report import ReportPaths, collect_predictions, write_report
from cultureqa.mocqa_shared.schema import CLUE_TYPES


def human_sheets(root: Path, setting: str | None) -> list[Path]:
    """The configured answer sheets: one CSV, or every CSV in a folder; none when unset."""
    if not setting:
        return []
    path = root / setting
    if not path.exists():
        raise FileNotFoundError(f"mocqa_eval.human_answers: {path} not found")
    return sorted(path.glob("*.csv")) if path.is_dir() else [path]


def clue_plot_data(preds: pd.DataFrame) -> pd.DataFrame:
    """Multi-hop accuracy per (slot · prompt) panel and ``<clue type> · <language>`` cell."""
    cells = [f"{c} · {lang}" for c in CLUE_TYPES for lang in sorted(preds["language"].unique())]
    cell = preds["clue_type"].astype(str) + " · " + preds["language"].astype(str)
    frame = preds.assign(cell=pd.Categorical(cell, categories=cells, ordered=True))
    return slot_accuracy(frame, ["cell"], panel_by=["prompt"])


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__).parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    cfg = select(params, "mocqa_eval")
    preds = collect_predictions(root / "data" / "eval" / "mocqa")
    # Outputs of roster entries or styles dropped from the config may linger in the workspace.
    preds = preds[preds["roster_entry"].isin(cfg["roster"]) & preds["prompt"].isin(cfg["prompts"])]
    if preds.empty:
        raise FileNotFoundError("no ID-MoCQA predictions for the configured roster and prompts")
    sheets = human_sheets(root, cfg.get("human_answers"))
    dataset = load_dataset(root / str(cfg["dataset"]))
    human = score_human_sheets(read_answer_sheets(sheets), dataset) if sheets else None
    paths = ReportPaths(
        metrics=root / "metrics" / "mocqa" / "analysis", reports=root / "reports" / "mocqa"
    )
    # the semantic question analysis may call a model
    with build_guard(paths.reports, budget_from(params), team_from(params)):
        questions = analyze_questions(dataset, dict(cfg.get("question_analysis") or {}), root)
        shared = dict(cfg.get("shared_errors") or {})
        boot = (int(cfg["bootstrap"]["resamples"]), int(cfg["bootstrap"]["seed"]))
        margin = float(cfg["margin"])
        summary = write_report(preds, paths, human, questions, boot, margin, **shared)
    # The POS taggers behind Table 6: name, held-out agreement and corpus repairs, as a run record.
    write_json(paths.metrics / "question_taggers.json", questions.tagger_records)
    headline = mocqa_headline(summary, roster_slots(preds))
    write_json(root / "metrics" / "mocqa" / "headline.json", headline)
    write_csv(paths.metrics / "multi_hop_by_clue.csv", clue_plot_data(preds))
    for model, prompts in summary.items():
        cells = ", ".join(
            f"{p}: multi-hop {v['all']['multi_hop']:.3f}, first-hop {v['all']['first_hop']:.3f}"
            for p, v in prompts.items()
        )
        print(f"mocqa {model}: {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
