"""DVC stage: ID-MoCQA hop-necessity diagnostic (statement only vs clue vs province named).

Runs on the items finalize will write (same seed), with the model at param path
``mocqa.hop.model``; finalize puts the table in the dataset card and track_build_mocqa logs it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.io import write_json
from cultureqa.mocqa_build.hop_stage import hop_config, run_hop
from cultureqa.mocqa_build.pipeline import MocqaSettings
from cultureqa.runlog import write_predictions
from cultureqa.spend import budget_from, build_guard, team_from


def main() -> int:
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    settings = MocqaSettings.from_params(params, root)
    # three conditions: the ledger sums them
    with build_guard(settings.out_dir("hop"), budget_from(params), team_from(params)):
        predictions, summary = run_hop(settings, select(params, hop_config(settings).model))
        # latencies and cache flags go to the run log: they differ between a fresh run and a rerun
        write_predictions(settings.out_dir("hop"), predictions)
        write_json(settings.metrics_dir / "hop.json", summary)
    accuracy = ", ".join(f"{k} {v:.3f}" for k, v in summary["accuracy"].items())
    print(f"mocqa hop: {summary['items']} items with {summary['model']}: {accuracy}")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
