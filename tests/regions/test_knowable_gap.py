"""The knowable-gap rule (docs/twohop-engine.md §3): a comparison no reader could resolve goes.

A thin gap is planted in the invented rainfall table (Veloria 1% above Dravenna); no comparison
may rest on it, the refusals are counted in the card under the rule's name, and the rule judge
removes a stored item whose gap is below the rule it is checked against.
"""

from __future__ import annotations

import json
from pathlib import Path

from cultureqa.regions.config import RegionSet
from cultureqa.regions.generation.clues import GAP_REASON
from cultureqa.regions.generation.conditions import relative_gap
from cultureqa.regions.judges.checks import CheckConfig, SetRules, check_items, problems
from cultureqa.regions.pipeline import card_markdown, run_build
from tests.regions.invented import write_invented


def _thin(root: Path) -> None:
    path = root / "data/rain.csv"
    path.write_text(path.read_text(encoding="utf-8").replace("VEL,1200", "VEL,960"), "utf-8")


def test_a_thin_gap_comparison_is_refused_and_counted(tmp_path: Path) -> None:
    raw = write_invented(tmp_path)
    _thin(tmp_path)
    result = run_build(RegionSet.from_params(raw, tmp_path), tmp_path, 13, CheckConfig())
    rain = {"VEL": 960.0, "QUI": 800.0, "OST": 1500.0, "LUM": 400.0, "DRA": 950.0}
    for item in result.dataset[result.dataset["clue_type"] == "comparison"].to_dict("records"):
        for cond in json.loads(item["clue_evidence"])["conditions"]:
            if cond["kind"] == "between" and cond["indicator"] == "rain":
                v = rain[item["region"]]
                gap = min(relative_gap(v, rain[cond[s]]) for s in ("low_region", "high_region"))
                assert gap >= 0.05, item["item_id"]
    refused = result.metrics["by_clue_type"]["comparison"]["candidates_refused_by_reason"]
    assert refused.get(GAP_REASON, 0) >= 2  # Veloria and Dravenna, each against the other
    assert GAP_REASON in card_markdown(result.metrics)


def test_the_rule_judge_removes_a_stored_comparison_below_the_rule(tmp_path: Path) -> None:
    raw = write_invented(tmp_path)
    rs = RegionSet.from_params(raw, tmp_path)
    result = run_build(rs, tmp_path, 13, CheckConfig())
    comparisons = result.dataset[result.dataset["clue_type"] == "comparison"]
    item = comparisons.iloc[0].to_dict()
    gap = json.loads(item["clue_evidence"])["gap_share"]
    indicator = next(
        c["indicator"]
        for c in json.loads(item["clue_evidence"])["conditions"]
        if c["kind"] == "between"
    )
    complete: frozenset[str] = frozenset()
    held = problems(
        item, result.kb, complete, CheckConfig(), SetRules(margins={indicator: gap - 1e-6})
    )
    assert GAP_REASON not in [r for r, _ in held]
    stricter = SetRules(margins={indicator: gap + 0.01})
    reasons = [r for r, _ in problems(item, result.kb, complete, CheckConfig(), stricter)]
    assert GAP_REASON in reasons
    kept, removed = check_items(comparisons.head(1), result.kb, complete, CheckConfig(), stricter)
    assert len(kept) == 0 and GAP_REASON in set(removed["reason"])
