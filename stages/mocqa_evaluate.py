"""DVC stage: evaluate one roster entry with one prompt style on ID-MoCQA (both languages)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)
from omegaconf import OmegaConf

from cultureqa.core.config import load_params, run_stage, select, setup_stage
from cultureqa.core.spend import budget_from, team_from
from cultureqa.evaluation.engine import RunSpec, run_and_write
from cultureqa.llm.store import store_location
from cultureqa.mocqa.answers import PROMPT_STYLES
from cultureqa.mocqa.evaluate import MocqaFamily


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="param path, e.g. model or baselines.random")
    parser.add_argument("--prompt", required=True, choices=PROMPT_STYLES)
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    family = MocqaFamily.from_params(params, root, args.prompt)
    run = RunSpec(
        args.model,
        select(params, args.model),
        store_location(),
        float(select(params, "mocqa_eval").get("max_error_share", 0.1)),
        args.prompt,
        bool(OmegaConf.select(params, "evaluate.progress", default=True)),
        budget_from(params),
        team_from(params),
    )
    out_dir = root / "data" / "eval" / "mocqa" / args.model / args.prompt
    metrics = root / "metrics" / "mocqa" / "eval" / args.model / f"{args.prompt}.json"
    return run_and_write(family, run, out_dir, metrics)


if __name__ == "__main__":
    sys.exit(run_stage(main))
