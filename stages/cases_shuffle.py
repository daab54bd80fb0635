"""DVC stage: cases shuffle — positions A–F per item for every seed, with the case metadata."""

from __future__ import annotations

import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)
import pandas as pd

from cultureqa.cases.shuffle import answer_position_counts, shuffle_items
from cultureqa.core.config import load_params, run_stage, select, setup_stage
from cultureqa.core.io import write_json, write_parquet


def main(argv: list[str] | None = None) -> int:
    setup_stage()
    root = Path.cwd()
    cfg = select(load_params(root / "params.yaml"), "cases")
    build = root / cfg["paths"]["build"]
    items = pd.read_parquet(build / "construct" / "items.parquet")
    cases = pd.read_parquet(build / "annotate" / "cases.parquet")
    typed = items.merge(cases, on="case_id", how="inner", validate="one_to_one")
    positions = {}
    for seed in cfg["seeds"]:
        shuffled = shuffle_items(typed, int(seed))
        write_parquet(build / "shuffle" / f"items_seed{seed}.parquet", shuffled)
        positions[str(seed)] = answer_position_counts(shuffled)
    metrics = {"items": len(typed), "seeds": list(cfg["seeds"]), "answer_positions": positions}
    write_json(root / cfg["paths"]["metrics"] / "shuffle.json", metrics)
    print(f"cases shuffle: {len(typed)} items × seeds {list(cfg['seeds'])}")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
