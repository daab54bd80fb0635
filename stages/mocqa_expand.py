"""DVC stage: ID-MoCQA expand.

Every province-specific item × 6 clue types × 2 languages (template or LLM generator).
"""

from __future__ import annotations

import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.config import load_params, run_stage, setup_stage
from cultureqa.mocqa_build.pipeline import MocqaSettings, summary_line, write_stage
from cultureqa.mocqa_build.runners import run_expand
from cultureqa.spend import budget_from, build_guard, team_from


def main() -> int:
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    settings = MocqaSettings.from_params(params, root)
    # spend once; API counters to the run log
    with build_guard(settings.out_dir("expand"), budget_from(params), team_from(params)):
        result = run_expand(settings)
        write_stage(settings, "expand", result)
    print(summary_line(result))
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
