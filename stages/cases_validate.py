"""DVC stage: cases validate — GX suites over the annotated cases and every seed's items.

Writes ``metrics/cases/validate.json`` and stops the pipeline (exit 1) with a readable message
when an invariant breaks or an expectation crashes.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)
import pandas as pd

from cultureqa.core.config import load_params, run_stage, select, setup_stage
from cultureqa.core.io import write_json


def main(argv: list[str] | None = None) -> int:
    setup_stage()
    root = Path.cwd()
    cfg = select(load_params(root / "params.yaml"), "cases")
    build = root / cfg["paths"]["build"]
    import cultureqa.validation.cases_expectations  # noqa: F401 - registers custom types
    from cultureqa.validation import run_suite

    frames = {"annotated": pd.read_parquet(build / "annotate" / "cases.parquet")}
    for seed in cfg["seeds"]:
        frames[f"items_seed{seed}"] = pd.read_parquet(
            build / "shuffle" / f"items_seed{seed}.parquet"
        )
    reports = {}
    for name, frame in frames.items():
        suite = cfg["expectations"]["annotated" if name == "annotated" else "items"]
        reports[name] = run_suite(root / suite, frame, root=root)
    summary = {name: {"rows": len(frames[name]), **asdict(r)} for name, r in reports.items()}
    write_json(root / cfg["paths"]["metrics"] / "validate.json", summary)
    broken = [r for r in reports.values() if not r.success or r.crashes]
    if broken:
        message = "\n".join(r.message() for r in broken)
        print(
            f"error: the cross-cultural dataset breaks its invariants\n{message}", file=sys.stderr
        )
        return 1
    checks = sum(r.evaluated for r in reports.values())
    print(f"cases validate: {len(reports)} tables pass {checks} expectations")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
