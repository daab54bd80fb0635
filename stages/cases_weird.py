"""DVC stage: cases weird — WEIRD levels of all 193 UN members from the publishers' files.

Reads the World Bank and UNDP files kept in ``data/sources/country-indicators``, the derived
Freedom House status table, the Huntington coding and the hand levels (``cases.weird``), and
writes the country table (levels, score, bin, basis and source of every level, hand marks), the
cut points and a summary. A member without a level is an error naming it, never a blank bin.
"""

from __future__ import annotations

import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.cases.country_levels import LevelSettings, build_levels
from cultureqa.core.config import load_params, run_stage, select, setup_stage
from cultureqa.core.io import write_csv, write_json


def main(argv: list[str] | None = None) -> int:
    setup_stage()
    root = Path.cwd()
    cfg = select(load_params(root / "params.yaml"), "cases")
    settings = LevelSettings.from_config(cfg["weird"], root)
    table, cuts, summary = build_levels(settings)
    out = root / cfg["paths"]["build"] / "weird"
    write_csv(out / "weird_levels.csv", table)
    write_json(out / "cuts.json", {**cuts.as_dict(), "method": summary["quantile_method"]})
    write_json(root / cfg["paths"]["metrics"] / "weird.json", summary)
    hand, proxy = (", ".join(summary[k]) or "none" for k in ("hand_annotated", "proxy"))
    print(
        f"cases weird: {summary['binned']} of {summary['members']} UN members binned "
        f"(hand-annotated: {hand}; I by HDR GNI proxy: {proxy})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
