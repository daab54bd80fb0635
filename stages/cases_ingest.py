"""DVC stage: cases ingest — load and validate the case export (row-precise errors)."""

from __future__ import annotations

import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.cases.ingest import load_cases
from cultureqa.core.config import load_params, run_stage, select, setup_stage
from cultureqa.core.io import write_json, write_parquet
from cultureqa.core.provenance import file_md5


def main(argv: list[str] | None = None) -> int:
    setup_stage()
    root = Path.cwd()
    cfg = select(load_params(root / "params.yaml"), "cases")
    source = root / cfg["sources"]["cases"]
    cases = load_cases(source)
    write_parquet(root / cfg["paths"]["build"] / "ingest" / "cases.parquet", cases)
    metrics = {
        "source": cfg["sources"]["cases"],
        "md5": file_md5(source),
        "cases": len(cases),
        "countries": int(cases["country"].nunique()),
        "by_domain": cases["domain"].value_counts().sort_index().to_dict(),
        "continent_labels_as_typed": cases["continent"].value_counts().sort_index().to_dict(),
    }
    write_json(root / cfg["paths"]["metrics"] / "ingest.json", metrics)
    print(f"cases ingest: {len(cases)} cases from {metrics['countries']} countries")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
