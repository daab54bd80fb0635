"""DVC stage: twohop hop — none / clue / oracle diagnostic of the two-hop items.

``python stages/twohop_hop.py --set <name>`` (DVC: ``twohop_hop@<name>``): the model at param path
``twohop.hop.model`` answers every item of the set three ways; the table (paired differences with
bootstrap intervals, readings) goes to ``metrics/twohop/<name>/hop.json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)
import pandas as pd

from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.io import write_csv, write_json
from cultureqa.llm.store import store_location
from cultureqa.mocqa.hop import HopConfig
from cultureqa.regions.config import RegionSet, set_dirs
from cultureqa.regions.hop import region_names, run_hop
from cultureqa.runlog import write_predictions
from cultureqa.spend import budget_from, build_guard, team_from


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--set", required=True, help="a key of region_sets (twohop.sets)")
    args = parser.parse_args()
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    cfg = select(params, "twohop")
    build, metrics = set_dirs(cfg, args.set)
    hop = dict(cfg["hop"])
    language = str(hop.pop("language"))
    config = HopConfig(**hop)
    dataset_path = f"{build}/dataset.parquet"
    dataset = pd.read_parquet(root / dataset_path)
    region_set = RegionSet.selected(params, root, args.set)
    names = region_names(region_set, root)
    out = root / build / "hop"
    with build_guard(out, budget_from(params), team_from(params)):
        table, predictions, summary = run_hop(
            dataset, dataset_path, select(params, config.model), config, root,
            store_location(), names, language,
        )  # fmt: skip
        write_predictions(out, predictions)
        # the clue condition alone is the benchmark's score (`make compare` reads it)
        write_predictions(out / "clue", predictions[predictions["condition"] == "clue"])
        write_csv(out / "table.csv", table)
        write_json(root / metrics / "hop.json", summary)
    accuracy = ", ".join(f"{k} {v:.3f}" for k, v in summary["accuracy"].items())
    print(f"twohop hop: {summary['items']} items with {summary['model']}: {accuracy}")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
