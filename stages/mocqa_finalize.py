"""DVC stage: ID-MoCQA finalize — stable ids, balanced gold positions, dataset card."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.config import load_params, run_stage, setup_stage
from cultureqa.io import write_json, write_text
from cultureqa.mocqa_build.card import STAGE_ORDER
from cultureqa.mocqa_build.pipeline import MocqaSettings, summary_line, write_stage
from cultureqa.mocqa_build.runners import run_finalize


def main() -> int:
    setup_stage()
    root = Path.cwd()
    settings = MocqaSettings.from_params(load_params(root / "params.yaml"), root)
    stages = {
        step: json.loads(path.read_text(encoding="utf-8"))
        for step in STAGE_ORDER[:-1]
        if (path := settings.metrics_dir / f"{step}.json").exists()
    }
    source = str(stages.get("ingest", {}).get("origin", ""))
    hop_path = settings.metrics_dir / "hop.json"
    hop = json.loads(hop_path.read_text(encoding="utf-8")) if hop_path.exists() else None
    result, card, markdown = run_finalize(settings, stages, source, hop)
    write_stage(settings, "finalize", result)
    write_json(settings.out_dir("finalize") / "card.json", card)
    write_text(settings.out_dir("finalize") / "card.md", markdown)
    print(summary_line(result))
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
