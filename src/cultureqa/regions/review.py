r"""Reviewer sample: N two-hop items with every clue fact, its source and year, and the terms lost.

A reviewer of a benchmark paper reads items, not counts. This draws a sample stratified by clue
type (as even as the types allow, then by region so no country fills it) with a recorded seed,
and writes, per item, what the model reads and what a reader needs to check it: each fact behind
the clue (value, file and row, source and version, year), the neighbours a comparison names, and
every term the scrub took out (kind, language, source, replacement).

    python -m cultureqa.regions.review data/build/twohop/un_members/dataset.parquet \
        --n 20 --seed 41 --out reports/twohop-review
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.core.config import run_stage
from cultureqa.core.io import SourceError, read_table, write_csv, write_text

OPTIONS = tuple(f"option_{x}" for x in "ABCDEF")
SAMPLE_COLUMNS = (
    "item_id", "clue_type", "region", "language", "clue", "narrative", "question", *OPTIONS,
    "answer", "facts", "terms_scrubbed",
)  # fmt: skip


def stratified(dataset: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """``n`` items: clue types in turn, within a type regions in turn, each order seeded."""
    shuffled = dataset.sample(frac=1.0, random_state=seed)
    region_rank = shuffled.groupby(["clue_type", "region"]).cumcount()
    within = (
        shuffled.assign(_r=region_rank)
        .sort_values("_r", kind="stable")
        .groupby("clue_type", sort=False)
        .cumcount()
    )
    ordered = shuffled.assign(_k=within.reindex(shuffled.index)).sort_values(
        ["_k", "clue_type"], kind="stable"
    )
    return ordered.head(n).drop(columns="_k").reset_index(drop=True)


def _fact(cell: dict[str, Any]) -> str:
    """One evidence cell as a reader checks it."""
    if "category" in cell:
        t = cell["target"]
        cited = f"; {t['source']}" if t.get("source") else ""
        year = f"; year {t['year']}" if t.get("year") else ""
        return f"{cell['category']} = {t['value']} ({t['file']} row {t['row']}{cited}{year})"
    parts = []
    for role in ("target", "low", "high"):
        c = cell.get(role)
        if isinstance(c, dict):  # a named neighbour's figure (comparison) or the target's
            parts.append(f"{role} {c['id']} = {c['value']} ({c['file']} row {c['row']})")
        elif c is not None:  # a range bound (intersection)
            parts.append(f"{role} bound {c}")
    return f"{cell['indicator']} {cell.get('year', '')} [{cell.get('unit', '')}]: " + "; ".join(
        parts
    )


def _terms(replaced: str) -> str:
    lost = json.loads(replaced)
    return "; ".join(
        f"{t['matched']} → {t['replacement']} ({t['kind']}, {t['lang']}, {t['source']})"
        for t in lost
    )


def sample_rows(dataset: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """The sample with its facts and scrubbed terms spelled out (:data:`SAMPLE_COLUMNS`)."""
    picked = stratified(dataset, n, seed)
    rows = []
    for item in picked.to_dict("records"):
        evidence = json.loads(str(item["clue_evidence"]))
        rows.append(
            {
                **{c: item.get(c, "") for c in SAMPLE_COLUMNS[:7]},
                **{c: item[c] for c in OPTIONS},
                "answer": item["answer"],
                "facts": "\n".join(_fact(c) for c in evidence.get("cells", [])),
                "terms_scrubbed": _terms(str(item.get("replaced") or "[]")),
            }
        )
    return pd.DataFrame(rows, columns=list(SAMPLE_COLUMNS))


def markdown(sample: pd.DataFrame, source: str, seed: int, total: int) -> str:
    """The sample as a page to read and mark (good / acceptable / weak / bad)."""
    counts = sample["clue_type"].value_counts().sort_index()
    lines = [
        "# Two-hop reviewer sample",
        "",
        f"{len(sample)} of {total} items of `{source}`, stratified by clue type "
        f"({', '.join(f'{k} {v}' for k, v in counts.items())}), seed {seed}.",
        "",
    ]
    for item in sample.to_dict("records"):
        lines += [
            f"## {item['item_id']} ({item['clue_type']}, {item['region']})",
            "",
            f"**Background:** {item['narrative']}",
            "",
            f"**Question:** {item['question']}",
            "",
            *[f"- {c[-1]}. {item[c]}" for c in OPTIONS],
            "",
            f"**Answer:** {item['answer']}",
            "",
            "**Clue facts:**",
            "",
            *[f"- {f}" for f in str(item["facts"]).splitlines()],
            "",
            f"**Terms scrubbed:** {item['terms_scrubbed'] or 'none'}",
            "",
            "**Reading:** good / acceptable / weak / bad —",
            "",
        ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Export the sample as ``<out>.csv`` and ``<out>.md``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "dataset", help="a two-hop dataset (data/build/twohop/un_members/dataset.parquet)"
    )
    parser.add_argument("--n", type=int, default=20, help="items in the sample")
    parser.add_argument("--seed", type=int, required=True, help="the draw's seed (record it)")
    parser.add_argument("--out", required=True, help="output path without suffix")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be at least 1")
    dataset = read_table(args.dataset)
    need = ["clue_evidence", "replaced", "answer", *SAMPLE_COLUMNS[:7], *OPTIONS]
    if missing := [c for c in need if c not in dataset.columns]:
        raise SourceError(args.dataset, f"not a two-hop dataset: no column '{missing[0]}'")
    sample = sample_rows(dataset, args.n, args.seed)
    out = Path(args.out)
    write_csv(out.with_suffix(".csv"), sample)
    write_text(out.with_suffix(".md"), markdown(sample, args.dataset, args.seed, len(dataset)))
    short = f" (the dataset has {len(dataset)})" if len(sample) < args.n else ""
    print(f"twohop review: {len(sample)} items{short} → {out}.csv, {out}.md")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
