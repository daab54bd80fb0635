"""DVC stage: evaluate one roster entry on one benchmark (all of the benchmark's settings)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.core.config import read_params, run_stage, select, setup_stage, typed
from cultureqa.core.spend import budget_from, team_from
from cultureqa.evaluation.engine import RunSpec, run_and_write
from cultureqa.evaluation.task import McqFamily
from cultureqa.llm.store import store_location


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--benchmark", required=True)
    parser.add_argument("--model", required=True, help="param path, e.g. model or baselines.random")
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = read_params(root / "params.yaml")
    family = McqFamily.from_params(params, root, args.benchmark)
    run = RunSpec(
        args.model,
        select(params, args.model),
        store_location(),
        typed(params, "evaluate.max_error_share", float),
        family.style,
        typed(params, "evaluate.progress", bool),
        budget_from(params),
        team_from(params),
    )
    out_dir = root / "data" / "eval" / args.benchmark / args.model
    metrics = root / "metrics" / "eval" / args.benchmark / f"{args.model}.json"
    return run_and_write(family, run, out_dir, metrics)


if __name__ == "__main__":
    sys.exit(run_stage(main))
