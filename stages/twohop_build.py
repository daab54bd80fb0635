"""DVC stage: twohop build — two-hop items of a region set from its tables and source questions.

``python stages/twohop_build.py --set <name>`` (DVC: ``twohop_build@<name>``, one stage per set of
``twohop.sets``) reads ``twohop``, ``region_sets.<name>`` and the generator and judge it names;
writes the dataset, every removal with its reason, the refused candidate clues, the judgements
(rule judge, and the panel when configured), every variant the judge ruled on with its text and
verdict (``judged.parquet``, what human validation samples) and the card under
``data/build/twohop/<name>/``, and ``metrics/twohop/<name>/build.json``. With the LLM generator
or the panel the build runs under the spend guard (budget, API counters).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.core.config import load_params, run_stage, select, setup_stage
from cultureqa.core.io import write_json, write_parquet, write_text
from cultureqa.core.spend import budget_from, build_guard, team_from
from cultureqa.regions.config import RegionSet, set_dirs
from cultureqa.regions.judges.checks import CheckConfig
from cultureqa.regions.models import ModelSteps
from cultureqa.regions.pipeline import card_markdown, run_build


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--set", required=True, help="a key of region_sets (twohop.sets)")
    args = parser.parse_args()
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    cfg = select(params, "twohop")
    region_set = RegionSet.selected(params, root, args.set)
    models = ModelSteps.from_params(params, root)
    build, metrics = set_dirs(cfg, args.set)
    out = root / build
    with build_guard(out, budget_from(params), team_from(params)):
        result = run_build(region_set, root, int(cfg["seed"]), CheckConfig(**cfg["checks"]), models)
    write_parquet(out / "dataset.parquet", result.dataset)
    write_parquet(out / "removed.parquet", result.removed)
    write_parquet(out / "refused.parquet", result.refused)
    write_parquet(out / "judgements.parquet", result.judgements)
    write_parquet(out / "judged.parquet", result.judged)
    write_text(out / "card.md", card_markdown(result.metrics))
    write_json(root / metrics / "build.json", result.metrics)
    kept = ", ".join(f"{k} {v['kept']}" for k, v in result.metrics["by_clue_type"].items())
    print(f"twohop build ({region_set.name}): {result.metrics['items']} items ({kept})")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
