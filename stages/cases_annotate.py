"""DVC stage: cases annotate — continent from the country, topic categories, WEIRD levels.

Joins each case to its country's row of the ``cases_weird`` country table (levels, score, bin
and the tertile/quartile cut points) and copies that table and the cuts beside the annotated
cases. Cases whose country has no row (a non-member such as Taiwan or Kosovo) follow
``cases.annotate.missing_indicators``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)
import pandas as pd

from cultureqa.cases.country_levels import read_levels
from cultureqa.cases.ingest import annotate_cases, split_unannotated
from cultureqa.cases.topics import analysis_categories, category_counts, load_topic_rules
from cultureqa.core.config import ConfigTypeError, load_params, run_stage, select, setup_stage
from cultureqa.core.io import write_json, write_parquet

POLICIES = ("exclude", "keep", "error")


def main(argv: list[str] | None = None) -> int:
    setup_stage()
    root = Path.cwd()
    cfg = select(load_params(root / "params.yaml"), "cases")
    policy = str(cfg["annotate"]["missing_indicators"])
    if policy not in POLICIES:
        raise ConfigTypeError(f"cases.annotate.missing_indicators must be one of {POLICIES}")
    build, metrics_dir = root / cfg["paths"]["build"], root / cfg["paths"]["metrics"]
    cases = pd.read_parquet(build / "ingest" / "cases.parquet")
    rules = load_topic_rules(root / cfg["topic_rules"])
    weird = build / "weird"
    countries = read_levels(weird / "weird_levels.csv")
    thresholds = json.loads((weird / "cuts.json").read_text(encoding="utf-8"))
    annotated = annotate_cases(cases, rules, countries, path=cfg["sources"]["cases"])
    kept, excluded = split_unannotated(annotated)
    if policy == "keep":
        kept = annotated
    elif policy == "error" and len(excluded):
        missing = sorted(excluded["country"].unique())
        print(f"error: no complete WEIRD indicators for {missing}", file=sys.stderr)
        return 1
    out = build / "annotate"
    write_parquet(out / "cases.parquet", kept)
    write_parquet(out / "excluded.parquet", excluded)
    write_parquet(out / "countries.parquet", countries)
    write_json(out / "thresholds.json", thresholds)
    corrected = annotated[annotated["continent"] != annotated["continent_raw"]]
    metrics = {
        "cases": len(kept),
        "excluded_without_indicators": excluded[["case_id", "country"]].to_dict("records"),
        "continent_corrections": corrected[
            ["case_id", "country", "continent_raw", "continent"]
        ].to_dict("records"),
        "by_continent": kept["continent"].value_counts().sort_index().to_dict(),
        "by_weird_bin": {
            str(k): v for k, v in kept["weird_bin"].value_counts().sort_index().items()
        },
        "topic_categories": category_counts(kept),
        "topic_categories_in_analysis": analysis_categories(kept, rules.min_category_n),
        "unmatched_topic_fragments": sum(len(json.loads(v)) for v in kept["topic_unmatched"]),
        "thresholds": thresholds,
    }
    write_json(metrics_dir / "annotate.json", metrics)
    print(
        f"cases annotate: {len(kept)} cases, {len(corrected)} continents corrected, "
        f"{len(excluded)} without indicators ({policy})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
