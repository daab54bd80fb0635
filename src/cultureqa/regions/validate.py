"""One GX suite for every region set's dataset (``expectations/twohop_dataset.json``).

The suite is the same file for every set; what differs is data the set already declares: its
regions and languages (every source × clue type pair in each), its terms (regions table and
leak table), handed to the suite as run-time overrides, and its item format: an expectation
whose ``meta.format`` names ``case`` or ``statement`` reads that format's columns (six option
columns; an ``options`` list of three with the ID-MoCQA contract's columns) and runs for sets of
that format only, so no set needs a suite of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.regions.config import RegionSet
from cultureqa.regions.generation.tables import load_regions
from cultureqa.validation.suites import SuiteReport, run_suite

SUITE = Path("expectations") / "twohop_dataset.json"


def suite_overrides(rs: RegionSet, root: Path) -> dict[str, dict[str, Any]]:
    """The set's regions, languages and every term of each region, as the suite's kwargs."""
    regions = load_regions(rs.regions, root, {})
    terms = {r.id: [[t.text, t.kind, t.lang] for t in r.terms] for r in regions}
    return {
        "expect_items_to_not_name_their_region": {
            "terms": terms,
            "clue_may_name": list(rs.clue_may_name),
        },
        "expect_pairs_to_exist_in_every_language": {"languages": list(rs.languages)},
    }


def set_values(rs: RegionSet, root: Path) -> dict[str, list[str]]:
    """Column → the values the set allows: its region ids and its languages."""
    return {
        "region": sorted(r.id for r in load_regions(rs.regions, root, {})),
        "language": list(rs.languages),
    }


def applies(expectation: dict[str, Any], item_format: str) -> bool:
    """Whether an expectation of the shared suite reads ``item_format``'s datasets."""
    fmt = (expectation.get("meta") or {}).get("format")
    return fmt is None or fmt == item_format


def validate_dataset(
    dataset: pd.DataFrame, rs: RegionSet, root: Path, suite: Path = SUITE
) -> SuiteReport:
    """Run the shared suite (the parts of the set's item format) over its finalized dataset."""
    import cultureqa.validation.twohop_expectations  # noqa: F401 - registers the leak check

    allowed = set_values(rs, root)

    def keep(expectation: dict[str, Any]) -> bool:
        kwargs = expectation.get("kwargs", {})
        if expectation["type"] == "expect_column_values_to_be_in_set":
            column = kwargs.get("column")
            if column in allowed:
                kwargs["value_set"] = allowed[column]
        return applies(expectation, rs.item_format)

    return run_suite(root / suite, dataset, suite_overrides(rs, root), root=root, keep=keep)
