"""DVC stage: twohop validate — the shared GX suite over a region set's dataset; fails on breaks.

``python stages/twohop_validate.py --set <name>`` (DVC: ``twohop_validate@<name>``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)
import pandas as pd

from cultureqa.core.config import load_params, run_stage, select, setup_stage
from cultureqa.core.io import write_json
from cultureqa.regions.config import RegionSet, set_dirs
from cultureqa.regions.validate import validate_dataset


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--set", required=True, help="a key of region_sets (twohop.sets)")
    args = parser.parse_args()
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    cfg = select(params, "twohop")
    region_set = RegionSet.selected(params, root, args.set)
    build, metrics = set_dirs(cfg, args.set)
    dataset = pd.read_parquet(root / build / "dataset.parquet")
    report = validate_dataset(dataset, region_set, root)
    write_json(root / metrics / "validate.json", {"rows": len(dataset), **asdict(report)})
    if not report.success or report.crashes:
        print(
            f"error: the two-hop dataset breaks its invariants\n{report.message()}", file=sys.stderr
        )
        return 1
    name, rows = region_set.name, len(dataset)
    print(f"twohop validate ({name}): {rows} rows pass {report.evaluated} expectations")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
