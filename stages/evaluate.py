"""DVC stage: evaluate one roster entry on one benchmark (all of the benchmark's settings)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from cultureqa.benchmarks.sources import source_provenance
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.config import load_params, run_stage, select, setup_stage, typed
from cultureqa.evaluation.runner import status_counts
from cultureqa.evaluation.task import EvalOutcome, evaluate_benchmark, setting_metrics
from cultureqa.io import write_json
from cultureqa.paths import project_root, state_dir
from cultureqa.provenance import provenance
from cultureqa.runlog import write_run
from cultureqa.spend import evaluation_exit, guard


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--benchmark", required=True)
    parser.add_argument("--model", required=True, help="param path, e.g. model or baselines.random")
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    spec = BenchmarkSpec.from_config(select(params, f"benchmarks.{args.benchmark}"))
    model_cfg = select(params, args.model)
    limit = typed(params, "evaluate.max_error_share", float)
    out_dir = root / "data" / "eval" / args.benchmark / args.model
    with guard(out_dir) as lock:
        outcome = evaluate_benchmark(
            spec,
            model_cfg,
            str(params.prompt.style),
            root,
            store_path=state_dir() / "responses.sqlite",
            progress=typed(params, "evaluate.progress", bool),
            min_max_tokens=typed(params, "prompt.min_max_tokens", int),
        )
        outcome.api["lock_taken_over_from_pid"] = lock.took_over_from
        write_outputs(root, out_dir, args, spec, model_cfg, params, outcome)
    client = outcome.api.get("client") or {}
    print(
        f"{spec.name}/{model_cfg['id']}: {outcome.calls} model calls"
        + (f" ({client['retries']} retries, {client['not_sent']} not sent)" if client else "")
        + f", error share {outcome.error_share:.3f}"
        + f", {status_counts(outcome.predictions)['empty']} empty replies (scored wrong)"
        + f", skipped {sorted(outcome.skipped)}"
    )
    return evaluation_exit(outcome.api, outcome.error_share, limit, out_dir / "predictions.parquet")


def write_outputs(
    root: Path,
    out_dir: Path,
    args: argparse.Namespace,
    spec: BenchmarkSpec,
    model_cfg: dict[str, Any],
    params: DictConfig,
    outcome: EvalOutcome,
) -> None:
    """Predictions, run record (with every retry, skip and wait counted) and metrics."""
    dataset = source_provenance(spec, root)  # files, MD5s, limit and sample
    summary = {
        "benchmark": spec.name,
        "roster_entry": args.model,
        "model": model_cfg,
        "prompt": select(params, "prompt"),
        "templates": outcome.templates,
        "skipped_settings": outcome.skipped,
        "model_calls": outcome.calls,
        "error_share": outcome.error_share,
        "status_counts": status_counts(outcome.predictions),
        "api": outcome.api,
        "provenance": provenance(project_root(), dataset),
    }
    write_run(out_dir, outcome.predictions, summary, project_root())
    metrics = setting_metrics(outcome.predictions) if not outcome.predictions.empty else {}
    write_json(root / "metrics" / "eval" / args.benchmark / f"{args.model}.json", metrics)


if __name__ == "__main__":
    sys.exit(run_stage(main))
