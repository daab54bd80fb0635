"""DVC stage: evaluate one roster entry with one prompt style on ID-MoCQA (both languages)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.evaluation.parsing import EMPTY
from cultureqa.evaluation.runner import status_counts
from cultureqa.io import write_json
from cultureqa.knowledge.provinces import load_knowledge_base
from cultureqa.mocqa.answers import PROMPT_STYLES
from cultureqa.mocqa.evaluate import EvalConfig, MocqaOutcome, evaluate_mocqa, load_dataset
from cultureqa.paths import project_root, state_dir
from cultureqa.provenance import file_md5, provenance
from cultureqa.runlog import write_run
from cultureqa.spend import evaluation_exit, guard


def language_metrics(outcome: MocqaOutcome) -> dict[str, dict[str, float]]:
    """Plain per-language means for DVC metrics (CIs are the analyze stage's job)."""
    out = {}
    for language, part in outcome.predictions.groupby("language", sort=True):
        out[str(language)] = {
            "n": len(part),
            "multi_hop": round(float(part["correct"].mean()), 6),
            "first_hop": round(float(part["province_correct"].mean()), 6),
            "parse_error_rate": round(float((part["status"] == "parse_error").mean()), 6),
            "empty_rate": round(float((part["status"] == EMPTY).mean()), 6),
            "error_rate": round(float((part["status"] == "error").mean()), 6),
        }
    return out


def write_outputs(
    root: Path,
    out_dir: Path,
    entry: str,
    prompt: str,
    outcome: MocqaOutcome,
    model_cfg: dict[str, Any],
    dataset_path: str,
) -> None:
    """Predictions and the run record (provenance for MLflow) under out_dir; DVC metrics."""
    dataset = {"name": "mocqa", "path": dataset_path, "md5": file_md5(root / dataset_path)}
    run = {
        "benchmark": "mocqa",
        "roster_entry": entry,
        "model": model_cfg,
        "prompt": prompt,
        "templates": outcome.templates,
        "model_calls": outcome.calls,
        "error_share": outcome.error_share,
        "status_counts": status_counts(outcome.predictions),
        "api": outcome.api,
        "provenance": provenance(project_root(), dataset),
    }
    write_run(out_dir, outcome.predictions, run, project_root())
    metrics_path = root / "metrics" / "mocqa" / "eval" / entry / f"{prompt}.json"
    write_json(metrics_path, language_metrics(outcome))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="param path, e.g. model or baselines.random")
    parser.add_argument("--prompt", required=True, choices=PROMPT_STYLES)
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    cfg, model_cfg = select(params, "mocqa_eval"), select(params, args.model)
    dataset_path = root / str(cfg["dataset"])
    settings = EvalConfig(
        style=args.prompt,
        languages=tuple(cfg.get("languages") or ("en", "id")),
        min_max_tokens=int((cfg.get("min_max_tokens") or {}).get(args.prompt, 64)),
        limit=cfg.get("limit"),
    )
    dataset = load_dataset(dataset_path)
    if absent := [x for x in settings.languages if not dataset["language"].eq(x).any()]:
        print(f"error: {dataset_path}: no items in language(s) {absent}", file=sys.stderr)
        return 2
    kb = load_knowledge_base(root / "data" / "knowledge" / "provinces")
    out_dir = root / "data" / "eval" / "mocqa" / args.model / args.prompt
    with guard(out_dir) as lock:
        outcome = evaluate_mocqa(
            dataset,
            model_cfg,
            settings,
            root,
            store_path=state_dir() / "responses.sqlite",
            roster_entry=args.model,
            kb=kb,
            progress=bool(OmegaConf.select(params, "evaluate.progress", default=True)),
        )
        outcome.api["lock_taken_over_from_pid"] = lock.took_over_from
        dataset_name = str(cfg["dataset"])
        write_outputs(root, out_dir, args.model, args.prompt, outcome, model_cfg, dataset_name)
    limit = float(cfg.get("max_error_share", 0.1))
    print(
        f"mocqa/{model_cfg['id']}/{args.prompt}: {len(outcome.predictions)} items, "
        f"{outcome.calls} model calls, error share {outcome.error_share:.3f}, "
        f"{status_counts(outcome.predictions)['empty']} empty replies (scored wrong)"
    )
    predictions = out_dir / "predictions.parquet"
    return evaluation_exit(outcome.api, outcome.error_share, limit, predictions)


if __name__ == "__main__":
    sys.exit(run_stage(main))
