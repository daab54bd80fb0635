"""One GX suite for every region set's dataset (``expectations/twohop_dataset.json``).

The suite is the same file for every set; what differs is data the set already declares: its
languages (every source × clue type pair in each) and its terms (regions table and leak table),
handed to the suite as run-time overrides, so no set needs a suite of its own.
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
    """The set's languages and every term of each region, as the suite's run-time kwargs."""
    regions = load_regions(rs.regions, root, {})
    terms = {r.id: [[t.text, t.kind, t.lang] for t in r.terms] for r in regions}
    return {
        "expect_items_to_not_name_their_region": {
            "terms": terms,
            "clue_may_name": list(rs.clue_may_name),
        },
        "expect_pairs_to_exist_in_every_language": {"languages": list(rs.languages)},
    }


def validate_dataset(
    dataset: pd.DataFrame, rs: RegionSet, root: Path, suite: Path = SUITE
) -> SuiteReport:
    """Run the shared suite over one set's finalized dataset."""
    import cultureqa.validation.twohop_expectations  # noqa: F401 - registers the leak check

    return run_suite(root / suite, dataset, suite_overrides(rs, root), root=root)
