"""DVC stage: check a benchmark's config and source before any model call; stop on a violation.

Config checks (slices, templates per language, the source inside the project) and loading errors
exit with code 2 and one ``error:`` line; a dataset invariant that breaks (on the whole source or
on the evaluated sample) exits with code 1, unless the benchmark declares it ``report``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.config import load_params, run_stage, setup_stage
from cultureqa.core.io import write_json
from cultureqa.validation.benchmark import validate_benchmark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--benchmark", required=True)
    args = parser.parse_args(argv)
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    spec = BenchmarkSpec.from_params(params, args.benchmark)
    found = validate_benchmark(spec, root, str(params.prompt.style))
    if not spec.source.path:
        print(
            f"warning: hub source {found.loaded.origin} is not a DVC dependency (a new upload "
            "would not rerun stages); save it under data/sources and set source.path to track it",
            file=sys.stderr,
        )
    write_json(root / "metrics" / "validate" / f"{args.benchmark}.json", found.summary(root))
    lines = found.lines()
    if not found.ok:
        print(f"error: {found.loaded.origin} breaks dataset invariants", file=sys.stderr)
        print("\n".join(lines), file=sys.stderr)
        return 1
    print("\n".join(lines))
    checks = sum(r.evaluated for r in found.reports.values())
    print(f"ok: {checks} expectation checks pass ({len(found.reported)} reported, not failing)")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
