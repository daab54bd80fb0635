"""DVC stage: cases evaluate — one roster entry on every seed's shuffled items."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.cases.evaluate import CasesFamily
from cultureqa.core.config import load_params, run_stage, select, setup_stage
from cultureqa.core.spend import budget_from, team_from
from cultureqa.evaluation.engine import RunSpec, run_and_write
from cultureqa.llm.store import store_location


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="param path, e.g. model or baselines.random")
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    cfg = select(params, "cases")
    ev = cfg["evaluate"]
    run = RunSpec(
        args.model,
        select(params, args.model),
        store_location(),
        float(ev["max_error_share"]),
        progress=bool(ev["progress"]),
        budget_usd=budget_from(params),
        budget_team=team_from(params),
    )
    family = CasesFamily.from_params(params, root)
    out_dir = root / cfg["paths"]["eval"] / args.model
    metrics = root / cfg["paths"]["metrics"] / "eval" / f"{args.model}.json"
    return run_and_write(family, run, out_dir, metrics)


if __name__ == "__main__":
    sys.exit(run_stage(main))
