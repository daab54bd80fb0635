"""DVC stage: check a benchmark's config and source before any model call; stop on a violation.

Config checks (slices, templates per language, DVC tracking of the sources) and loading errors exit
with code 2 and one ``error:`` line; a broken dataset invariant of the GX suite exits with code 1.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from cultureqa.benchmarks.checks import load_checked, preflight
from cultureqa.benchmarks.sources import sample_record
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.config import load_params, run_stage, select, setup_stage
from cultureqa.io import write_json
from cultureqa.validation import run_suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--benchmark", required=True)
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    spec = BenchmarkSpec.from_config(select(params, f"benchmarks.{args.benchmark}"))
    if not spec.expectations:
        print(f"error: benchmark '{spec.name}' declares no expectations suite", file=sys.stderr)
        return 2
    templates = preflight(spec, root, str(params.prompt.style))
    loaded = load_checked(spec, root)
    hub = spec.source.kind == "hf" and not spec.source.path
    if hub:
        print(
            f"warning: hub source {loaded.origin} is not a DVC dependency (a new upload would not "
            "rerun stages); save it under data/sources and set source.path to track it",
            file=sys.stderr,
        )
    report = run_suite(root / spec.expectations, loaded.frame, root)
    summary = {
        "source": loaded.origin,
        "rows": len(loaded.frame),
        **sample_record(spec, loaded.source),
        "load": asdict(loaded.counts),
        "templates": {name: str(t.path.relative_to(root)) for name, t in templates.items()},
        "source_tracked_by_dvc": not hub,
        **asdict(report),
    }
    write_json(root / "metrics" / "validate" / f"{args.benchmark}.json", summary)
    if not report.success or report.crashes:
        print(
            f"error: {loaded.origin} breaks dataset invariants\n{report.message()}", file=sys.stderr
        )
        return 1
    stripped = loaded.counts.labels_stripped
    print(
        f"{loaded.origin}: {len(loaded.frame)} item rows pass {report.evaluated} expectations"
        f" (option labels stripped on {stripped} items, {loaded.counts.filtered_out} rows filtered)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
