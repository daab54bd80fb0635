"""Issue 37 item 4: a region set by configuration alone builds through the same code."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.regions.config import RegionSet, RegionSetError
from cultureqa.regions.judges.checks import CheckConfig, problems
from cultureqa.regions.pipeline import card_markdown, run_build
from tests.regions.invented import NAMES, write_invented

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def invented(tmp_path: Path) -> tuple[RegionSet, dict[str, Any], Path]:
    raw = write_invented(tmp_path)
    return RegionSet.from_params(raw, tmp_path), raw, tmp_path


def _independent_values(root: Path) -> dict[str, dict[str, float]]:
    """The invented tables read by plain pandas, not by cultureqa.regions.generation.tables."""
    rain = pd.read_csv(root / "data/rain.csv").set_index("code")["rain_mm"].astype(float)
    tea = pd.read_csv(root / "data/tea.csv", skiprows=1).set_index("code")["2020"].astype(float)
    return {"rain": rain.to_dict(), "tea": tea.to_dict()}


def _holds(cond: dict[str, Any], rid: str, root: Path) -> bool:
    values = _independent_values(root)
    zones = pd.read_csv(root / "data/zones.csv").set_index("code")
    if cond["kind"] == "category":
        return bool(zones.loc[rid, cond["category"]] == cond["value"])
    v = values[cond["indicator"]][rid]
    if cond["kind"] == "range":
        return (cond["low"] is None or v > cond["low"]) and (
            cond["high"] is None or v < cond["high"]
        )
    table = values[cond["indicator"]]
    return table[cond["low_region"]] < v < table[cond["high_region"]]


def test_invented_set_builds_in_both_languages_with_every_attempt_accounted(invented) -> None:
    rs, _, root = invented
    result = run_build(rs, root, 13, CheckConfig())
    data = result.dataset
    assert len(data) > 0
    assert set(data["language"]) == {"en", "id"}
    assert set(data["clue_type"]) == {"comparison", "intersection", "geographical"}
    # ten questions × three clue types: each attempt is an item or a removal with a reason
    removed = result.removed.drop_duplicates("item_id")
    assert len(data) + len(removed) == 10 * 3
    assert set(removed["reason"]) <= {
        "no verified comparison clue", "no verified intersection clue",
        "no verified geographical clue",
    }  # fmt: skip
    by_type = result.metrics["by_clue_type"]
    for clue_type, counts in by_type.items():
        assert counts["kept"] + counts["removed"] == counts["attempted"] == 10, clue_type
    card = card_markdown(result.metrics)
    assert "entity: no table of cultural items" in card
    # the Indonesian clue words are the set's own
    assert any(t.startswith("Skenario ini terjadi di negeri") for t in data["narrative"])


def test_every_clue_holds_for_exactly_its_region_by_an_independent_reading(invented) -> None:
    rs, _, root = invented
    data = run_build(rs, root, 13, CheckConfig()).dataset
    for item in data.to_dict("records"):
        conditions = json.loads(item["clue_evidence"])["conditions"]
        holders = [r for r in NAMES if all(_holds(c, r, root) for c in conditions)]
        assert holders == [item["region"]], (item["item_id"], item["clue"])


def test_no_item_names_its_own_region(invented) -> None:
    rs, _, root = invented
    data = run_build(rs, root, 13, CheckConfig()).dataset
    for item in data.to_dict("records"):
        text = " ".join(
            str(item[c]) for c in ("narrative", "question", *[f"option_{x}" for x in "ABCDEF"])
        )
        for word in (
            *NAMES[item["region"]],
            "Kuintar" if item["region"] == "QUI" else NAMES[item["region"]][0],
        ):
            assert not re.search(rf"\b{re.escape(word)}", text), (item["item_id"], word)


def test_planted_violations_are_caught(invented) -> None:
    rs, raw, root = invented
    result = run_build(rs, root, 13, CheckConfig())
    item = result.dataset.iloc[0].to_dict()
    evidence = json.loads(item["clue_evidence"])
    # widen the clue to its group alone: two or more regions now hold
    evidence["conditions"] = [c for c in evidence["conditions"] if c["kind"] == "category"][:1]
    widened = {**item, "clue_evidence": json.dumps(evidence)}
    complete: frozenset[str] = frozenset()
    reasons = [r for r, _ in problems(widened, result.kb, complete, CheckConfig())]
    assert "clue not unique on re-check" in reasons
    # the capital put back in an option
    leaked = {**item, "option_A": f"Because {NAMES[item['region']][2]} is cold"}
    reasons = [r for r, _ in problems(leaked, result.kb, complete, CheckConfig())]
    assert "own-region leak" in reasons
    # a set whose capitals have no replacement: every question naming the capital is removed
    raw["replacements"] = {
        k: {n: w for n, w in v.items() if n != "capital"} for k, v in raw["replacements"].items()
    }
    unrepaired = run_build(RegionSet.from_params(raw, root), root, 13, CheckConfig())
    assert len(unrepaired.dataset) == 0
    assert "own-region leak" in set(unrepaired.removed["reason"])


def test_a_clue_type_that_cannot_be_proved_must_be_declared_not_generated(invented) -> None:
    _, raw, root = invented
    with pytest.raises(RegionSetError, match=r"entity.*not_generated"):
        RegionSet.from_params({**raw, "clue_types": ["comparison", "entity"]}, root)


def _code_strings(path: Path) -> list[str]:
    """String constants and identifiers of a module, docstrings left out (they give examples)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            out.append(node.value)
        elif isinstance(node, ast.Name):
            out.append(node.id)
    return out


def test_the_generic_code_names_no_region() -> None:
    """No string or name in cultureqa.regions mentions a region of either shipped set."""
    members = pd.read_csv(ROOT / "data/knowledge/regions/un_members.csv", keep_default_na=False)
    words = set(members["name"]) | {"Indonesia", "Java", "Sumatra", "Bali", "Papua"}
    code = "\n".join(
        s for p in (ROOT / "src/cultureqa/regions").rglob("*.py") for s in _code_strings(p)
    )
    found = sorted(w for w in words if re.search(rf"\b{re.escape(w)}\b", code, re.I))
    assert found == []


def test_the_region_name_check_sees_a_planted_name(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('"""Peru in a docstring is fine."""\nSCOPE = "Peru"\n', encoding="utf-8")
    assert _code_strings(planted) == ["SCOPE", "Peru"] or "Peru" in _code_strings(planted)
    assert "Peru in a docstring is fine." not in _code_strings(planted)


def test_the_card_names_each_region_without_an_item_and_measures_the_coverage_bar(
    invented,
) -> None:
    _, raw, root = invented
    raw = {**raw, "clue_types": ["comparison"], "coverage": {"min_items": 100, "min_regions": 2}}
    result = run_build(RegionSet.from_params(raw, root), root, 13, CheckConfig())
    missing = result.metrics["regions_without_items"]
    assert "LUM" in missing  # alone in its zone: no neighbours to compare with
    assert missing["LUM"] == "no verified comparison clue: 2"  # one question, two languages
    assert set(missing).isdisjoint(result.dataset["region"])
    cov = result.metrics["coverage"]
    assert cov["met"] == {"items": False, "regions": True, "clue_type_shares": True}
    card = card_markdown(result.metrics)
    assert "NOT met: items" in card and "- LUM: no verified comparison clue" in card
