"""Benchmark: the cross-cultural analysis on a synthetic prediction set of paper size.

9,342 cases × 6 models × 2 seeds (112,104 prediction rows) go through ``analyze`` (every table:
Wilson CIs, macro accuracy, across-model mean/SD with sensitivity, error-type shares, CA trends
with BH-FDR pooled, per model, per domain, per topic and per dimension, 350 logistic regressions
per model and pooled) and the whole report stage (every plot, the per-section CSVs and
tables.md). Prints seconds per phase; the target is under 30 s on 2 cores.

    .venv/bin/python bench/cases_analysis.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cultureqa.cases.construct import TYPES
from cultureqa.cases.geography import CONTINENTS
from cultureqa.cases.ingest import DOMAINS
from cultureqa.cases.weird import weird_score_sixths

N_CASES = 9_342
MODELS = ("gpt-5", "claude-3-7-sonnet", "deepseek-v3", "gemini-3-flash", "kimi-k2", "qwen3.5-flash")
SEEDS = (60, 40)
TOPICS = tuple(f"topic {i:02d}" for i in range(16))


def synthetic_cases(rng: np.random.Generator) -> pd.DataFrame:
    """Cases with domain, continent, country, WEIRD levels (score and bin exact) and topics."""
    dims = np.column_stack(
        [rng.integers(0, k, N_CASES) for k in (2, 3, 4, 4, 3)]  # W, E, I, R, D levels
    )
    sixths = np.array([weird_score_sixths(*row) for row in dims])
    topics = [
        json.dumps(sorted(rng.choice(TOPICS, size=rng.integers(1, 3), replace=False).tolist()))
        for _ in range(N_CASES)
    ]
    return pd.DataFrame(
        {
            "case_id": [f"CASE-{i:05d}" for i in range(N_CASES)],
            "domain": rng.choice(DOMAINS, N_CASES),
            "continent": rng.choice(CONTINENTS, N_CASES),
            "country": rng.choice([f"Country {i}" for i in range(151)], N_CASES),
            **{d: dims[:, i] for i, d in enumerate("WEIRD")},
            "weird_score": sixths / 6,
            "weird_bin": sixths // 6,
            "topic_categories": topics,
        }
    )


def synthetic_predictions(cases: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Each model is better on WEIRD countries; errors lean to stereotype (C) at low bins."""
    frames = []
    for m, model in enumerate(MODELS):
        for seed in SEEDS:
            p_correct = 0.45 + 0.04 * m + 0.05 * cases["weird_bin"].to_numpy()
            correct = rng.random(N_CASES) < np.clip(p_correct, 0, 0.95)
            weights = np.ones((N_CASES, 5))
            weights[:, 2] += (5 - cases["weird_bin"].to_numpy()) * 0.3
            weights /= weights.sum(axis=1, keepdims=True)
            wrong = np.array([rng.choice(5, p=w) for w in weights])
            kinds = np.where(correct, "F", np.array(TYPES[:5])[wrong])
            status = np.where(rng.random(N_CASES) < 0.01, "parse_error", "ok")
            kinds = np.where(status == "ok", kinds, "")
            frames.append(
                cases.assign(
                    model=model,
                    kind="model",
                    seed=seed,
                    correct=kinds == "F",
                    pred_type=kinds,
                    status=status,
                )
            )
    return pd.concat(frames, ignore_index=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None, help="keep the plots here")
    args = parser.parse_args()
    started = time.perf_counter()
    from cultureqa.cases.analysis import AnalysisOptions, analyze
    from cultureqa.cases.report import write_report

    imported = time.perf_counter()
    rng = np.random.default_rng(7)
    predictions = synthetic_predictions(synthetic_cases(rng), rng)
    built = time.perf_counter()
    options = AnalysisOptions(primary_seed=SEEDS[0], sensitivity_without=MODELS[0])
    result = analyze(predictions, options)
    analyzed = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        plots = write_report(result, args.out or Path(tmp))
    done = time.perf_counter()
    logits = result.tables["dimension_logits"]
    print(f"rows: {len(predictions):,} ({N_CASES:,} cases × {len(MODELS)} models × {len(SEEDS)})")
    print(f"tables: {len(result.tables)}, logistic fits: {len(logits)}, plots: {len(plots)}")
    print(f"import {imported - started:.1f} s, synthetic data {built - imported:.1f} s")
    print(
        f"analyze {analyzed - built:.1f} s, report (plots, CSVs, tables.md) {done - analyzed:.1f} s"
    )
    print(f"analysis + report: {done - built:.1f} s (target < 30 s on 2 cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
