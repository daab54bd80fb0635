"""DVC stage: ID-MoCQA ingest — IndoCulture-format rows → province-specific source items."""

from __future__ import annotations

import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.io import SourceError
from cultureqa.mocqa_build.pipeline import MocqaSettings, summary_line, write_stage
from cultureqa.mocqa_build.runners import run_ingest


def main() -> int:
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    settings = MocqaSettings.from_params(params, root)
    try:
        result = run_ingest(settings, select(params, f"benchmarks.{settings.benchmark}"))
    except SourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write_stage(settings, "ingest", result)
    print(summary_line(result))
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
