"""DVC stage: cases analyze — every statistic of DESIGN.md §6 over the roster (and humans)."""

from __future__ import annotations

import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)
import pandas as pd

from cultureqa.analysis.headline import cases_headline
from cultureqa.analysis.plotdata import slot_accuracy
from cultureqa.analysis.roster import key_by_roster, roster_slots
from cultureqa.cases.analysis import AnalysisOptions, analyze, prepare
from cultureqa.cases.report import human_predictions, summary, write_analysis
from cultureqa.core.config import load_params, run_stage, select, setup_stage
from cultureqa.core.io import write_csv, write_json


def main(argv: list[str] | None = None) -> int:
    setup_stage()
    root = Path.cwd()
    cfg = select(load_params(root / "params.yaml"), "cases")
    a = dict(cfg["analysis"])
    eval_dir = root / cfg["paths"]["eval"]
    files = [eval_dir / entry / "predictions.parquet" for entry in cfg["roster"]]
    if missing := [str(f) for f in files if not f.exists()]:
        raise FileNotFoundError(f"{missing} not found: run stages/cases_evaluate.py first")
    frames = [pd.read_parquet(f) for f in files]
    if a.get("human_sheets"):
        shown = root / cfg["paths"]["build"] / "shuffle" / f"items_seed{a['human_seed']}.parquet"
        sheets = [root / p for p in a["human_sheets"]]
        frames.append(human_predictions(sheets, pd.read_parquet(shown)))
    options = AnalysisOptions.from_config(a, float(cfg["evaluate"]["robustness_threshold_pp"]))
    raw = pd.concat(frames, ignore_index=True)
    result = analyze(key_by_roster(raw), options)
    write_analysis(result, root / cfg["paths"]["build"] / "analyze")
    metrics_dir = root / cfg["paths"]["metrics"]
    details = summary(result)
    write_json(metrics_dir / "summary.json", details)
    write_json(metrics_dir / "headline.json", cases_headline(details, roster_slots(raw)))
    write_csv(
        metrics_dir / "accuracy.csv",
        slot_accuracy(raw.assign(seed=raw["seed"].astype(str)), ["seed"]),
    )
    primary = prepare(raw)
    primary = primary[(primary["seed"] == options.primary_seed) & primary["weird_bin"].notna()]
    write_csv(metrics_dir / "weird_bins.csv", slot_accuracy(primary, ["weird_bin"]))
    overall = result.tables["overall"]
    for r in overall.to_dict("records"):
        ci = f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
        print(f"cases {r['model']} seed {r['seed']}: accuracy {r['accuracy']:.3f} {ci}, "
              f"macro {r['macro_accuracy']:.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
