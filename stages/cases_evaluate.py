"""DVC stage: cases evaluate — one roster entry on every seed's shuffled items."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.cases.evaluate import (
    CasesEvalOutcome,
    entry_metrics,
    evaluate_entry,
    load_prompt,
    robustness,
)
from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.evaluation.runner import status_counts
from cultureqa.io import write_json
from cultureqa.paths import project_root, state_dir
from cultureqa.provenance import file_md5, provenance
from cultureqa.runlog import write_run
from cultureqa.spend import evaluation_exit, guard


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="param path, e.g. model or baselines.random")
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    cfg, model_cfg = select(params, "cases"), select(params, args.model)
    ev = cfg["evaluate"]
    shuffle_dir = root / cfg["paths"]["build"] / "shuffle"
    paths = {int(s): shuffle_dir / f"items_seed{s}.parquet" for s in cfg["seeds"]}
    prompt = load_prompt(root, str(ev["language"]))
    out_dir = root / cfg["paths"]["eval"] / args.model
    with guard(out_dir) as lock:
        outcome = evaluate_entry(
            {seed: pd.read_parquet(path) for seed, path in paths.items()},
            model_cfg, prompt, state_dir() / "responses.sqlite", args.model,
            int(ev["max_tokens"]), bool(ev["progress"]),
        )  # fmt: skip
        outcome.api["lock_taken_over_from_pid"] = lock.took_over_from
        metrics = write_outputs(root, cfg, out_dir, args.model, model_cfg, paths, outcome)
    accuracies = ", ".join(f"seed {s}: {v['accuracy']:.3f}" for s, v in metrics["seeds"].items())
    empty = status_counts(outcome.predictions)["empty"]
    print(f"cases/{model_cfg['id']}: {accuracies}; {outcome.calls} model calls, {empty} empty")
    limit = float(ev["max_error_share"])
    return evaluation_exit(outcome.api, outcome.error_share, limit, out_dir / "predictions.parquet")


def write_outputs(
    root: Path,
    cfg: dict[str, Any],
    out_dir: Path,
    entry: str,
    model_cfg: dict[str, Any],
    paths: dict[int, Path],
    outcome: CasesEvalOutcome,
) -> dict[str, Any]:
    """Predictions, the run record (API counters through the run log) and DVC metrics."""
    threshold = float(cfg["evaluate"]["robustness_threshold_pp"])
    items = {
        str(s): {"path": str(p.relative_to(root)), "md5": file_md5(p)} for s, p in paths.items()
    }
    run_info = {
        "benchmark": "cases", "roster_entry": entry, "model": model_cfg,
        "template_sha256": outcome.template_sha256, "items": items,
        "model_calls": outcome.calls, "error_share": outcome.error_share, "api": outcome.api,
        "status_counts": status_counts(outcome.predictions),
        "robustness": robustness(outcome.predictions, threshold),
        "provenance": provenance(project_root(), {"name": "cases", "items": items}),
    }  # fmt: skip
    write_run(out_dir, outcome.predictions, run_info, project_root())
    metrics = entry_metrics(outcome.predictions, threshold)
    write_json(root / cfg["paths"]["metrics"] / "eval" / f"{entry}.json", metrics)
    return metrics


if __name__ == "__main__":
    sys.exit(run_stage(main))
