"""DVC stage: twohop hop — none / clue / oracle diagnostic of the two-hop items.

``python stages/twohop_hop.py --set <name>`` (DVC: ``twohop_hop@<name>``): the model at param path
``twohop.hop.model`` answers every item of the set three ways; the table (paired differences with
bootstrap intervals, readings) goes to ``metrics/twohop/<name>/hop.json``. A ``case`` set goes
through :mod:`cultureqa.regions.hop` (the case-bank prompts, ``twohop.hop.language``); a
``statement`` set (Indonesia, ID-MoCQA) through :mod:`cultureqa.mocqa.hop` (its prompts per
condition, every language of the set); both share the table and its readings.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)
import pandas as pd

from cultureqa.core.config import load_params, run_stage, select, setup_stage
from cultureqa.core.io import write_csv, write_json
from cultureqa.core.runlog import write_predictions
from cultureqa.core.spend import budget_from, build_guard, team_from
from cultureqa.knowledge.provinces import load_knowledge_base
from cultureqa.llm.store import store_location
from cultureqa.mocqa import hop as statement_hop
from cultureqa.mocqa.hop import HopConfig
from cultureqa.regions.config import RegionSet, set_dirs
from cultureqa.regions.hop import region_names, run_hop


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
    out = root / build / "hop"
    model_cfg = select(params, config.model)
    with build_guard(out, budget_from(params), team_from(params)):
        if region_set.item_format == "statement":  # ID-MoCQA's items: both languages, its prompts
            table, predictions, summary = statement_hop.run_hop(
                dataset, model_cfg, config, root,
                store_location(), load_knowledge_base(),
            )  # fmt: skip
        else:
            table, predictions, summary = run_hop(
                dataset, dataset_path, model_cfg, config, root, store_location(),
                region_names(region_set, root), language,
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
