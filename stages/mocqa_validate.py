"""DVC stage: ID-MoCQA validate — the GX suite over the final dataset; fails on any break."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.config import load_params, run_stage, setup_stage
from cultureqa.io import write_json
from cultureqa.mocqa_build.pipeline import MocqaSettings
from cultureqa.mocqa_build.runners import validate_frame


def main() -> int:
    setup_stage()
    root = Path.cwd()
    settings = MocqaSettings.from_params(load_params(root / "params.yaml"), root)
    frame = validate_frame(settings)
    import cultureqa.validation.mocqa_expectations  # noqa: F401 - registers custom types
    from cultureqa.validation import run_suite

    report = run_suite(settings.expectations, frame, root=root)
    write_json(settings.metrics_dir / "validate.json", {"rows": len(frame), **asdict(report)})
    if not report.success or report.crashes:
        print(
            f"error: the ID-MoCQA dataset breaks its invariants\n{report.message()}",
            file=sys.stderr,
        )
        return 1
    print(f"mocqa validate: {len(frame)} rows pass {report.evaluated} expectations")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
