"""DVC stage: cases report — the figures (PNG) and a markdown digest under reports/cases/."""

from __future__ import annotations

import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.cases.report import read_analysis, write_report
from cultureqa.core.config import load_params, run_stage, select, setup_stage


def main(argv: list[str] | None = None) -> int:
    setup_stage()
    root = Path.cwd()
    cfg = select(load_params(root / "params.yaml"), "cases")
    result = read_analysis(root / cfg["paths"]["build"] / "analyze")
    plots = write_report(result, root / cfg["paths"]["reports"])
    print(f"cases report: {len(plots)} plots under {cfg['paths']['reports']}")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
