"""Issue 37 items 2, 3 and 5: the 193 UN members, checked against the publishers' files directly.

The build reads the files through ``cultureqa.regions.generation.tables``; these tests read them
again with plain ``csv`` / ``openpyxl`` and their own row arithmetic, so a bug in the readers
cannot hide.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from cultureqa.core.config import load_params, select
from cultureqa.mocqa.hop import HopConfig
from cultureqa.regions.config import RegionSet
from cultureqa.regions.hop import region_names, run_hop
from cultureqa.regions.judges.checks import CheckConfig
from cultureqa.regions.pipeline import BuildResult, run_build

ROOT = Path(__file__).resolve().parents[2]
IND = ROOT / "data/sources/country-indicators"
WDI = IND / "worldbank-gdppc-ppp/API_NY.GDP.PCAP.PP.KD_DS2_en_csv_v2_20423.csv"
HDR = IND / "undp-hdr/HDR23-24_composite_indices_mys_gnipc.csv"
CLASS = IND / "worldbank-income-class/CLASS.xlsx"
OPTIONS = [f"option_{x}" for x in "ABCDEF"]
KNOWABLE_GAP = 0.25  # the rule conf/region_set/un_members.yaml declares (docs/twohop-engine.md §3)


def built_set() -> RegionSet:
    params = load_params(ROOT / "params.yaml")
    cfg = select(params, "twohop")
    return RegionSet.from_params(select(params, f"region_sets.{cfg['region_set']}"), ROOT)


@pytest.fixture(scope="module")
def built() -> BuildResult:
    cfg = select(load_params(ROOT / "params.yaml"), "twohop")
    return run_build(built_set(), ROOT, int(cfg["seed"]), CheckConfig(**cfg["checks"]))


@cache
def members() -> dict[str, dict[str, str]]:
    with (ROOT / "data/knowledge/regions/un_members.csv").open(encoding="utf-8") as f:
        return {r["iso3"]: r for r in csv.DictReader(f)}


@cache
def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8-sig").splitlines()


@cache
def numeric(indicator: str) -> dict[str, float]:
    """iso3 → 2022 figure, read with csv from the raw lines (no pandas, no cultureqa reader)."""
    if indicator == "gdppc_ppp":
        rows = list(csv.reader(lines(WDI)[4:]))
        header, body = rows[0], rows[1:]
        col, key = header.index("2022"), header.index("Country Code")
    else:
        rows = list(csv.reader(lines(HDR)))
        header, body = rows[0], rows[1:]
        col = header.index("gnipc_2022" if indicator == "gnipc" else "mys_2022")
        key = header.index("iso3")
    return {r[key]: float(r[col]) for r in body if len(r) > col and r[col].strip()}


@cache
def categorical() -> dict[str, dict[str, set[str]]]:
    """category → iso3 → values, from CLASS.xlsx (openpyxl), civilizations and Freedom House."""
    book = openpyxl.load_workbook(CLASS, read_only=True)
    out: dict[str, dict[str, set[str]]] = {}
    sheet = list(book["List of economies"].iter_rows(values_only=True))
    head = list(sheet[0])
    for name, column in (
        ("wb_region", "Region"),
        ("income_group", "Income group"),
        ("lending", "Lending category"),
    ):
        i, k = head.index(column), head.index("Code")
        out[name] = {str(r[k]): {str(r[i])} for r in sheet[1:] if r[i]}
    comp = list(book["compositions"].iter_rows(values_only=True))
    g, c = comp[0].index("WB_Group_Name"), comp[0].index("WB_Country_Code")
    out["wb_geo_group"] = {}
    for r in comp[1:]:
        out["wb_geo_group"].setdefault(str(r[c]), set()).add(str(r[g]))
    with (ROOT / "data/knowledge/countries/freedom_house_status.csv").open(encoding="utf-8") as f:
        out["freedom"] = {
            r["iso3"]: {r["status"]} for r in csv.DictReader(f) if r["edition"] == "2024"
        }
    with (ROOT / "data/knowledge/countries/facts.csv").open(encoding="utf-8") as f:
        for r in csv.DictReader(f):  # each named fact kind is a category of its own
            out.setdefault(r["fact"], {}).setdefault(r["iso3"], set()).add(r["value"])
    return out


def holds(cond: dict[str, Any], iso3: str) -> bool | None:
    if cond["kind"] == "category":
        return cond["value"] in categorical()[cond["category"]].get(iso3, set())
    table = numeric(cond["indicator"])
    if iso3 not in table:
        return None
    v = table[iso3]
    if cond["kind"] == "range":
        return (cond["low"] is None or v > cond["low"]) and (
            cond["high"] is None or v < cond["high"]
        )
    return table[cond["low_region"]] < v < table[cond["high_region"]]


def test_the_universe_is_the_193_members() -> None:
    assert len(members()) == 193


def test_no_item_whose_clue_holds_for_two_countries(built: BuildResult) -> None:
    # the knowable-gap rule leaves few statistic clues; named facts (facts.csv) bring coverage back
    assert len(built.dataset) >= 15
    for item in built.dataset.to_dict("records"):
        evidence = json.loads(item["clue_evidence"])
        results = {m: [holds(c, m) for c in evidence["conditions"]] for m in members()}
        holders = sorted(m for m, r in results.items() if all(x is True for x in r))
        undecided = sorted(
            m for m, r in results.items() if not any(x is False for x in r) and None in r
        )
        assert holders == [item["region"]], (item["item_id"], item["clue"], holders)
        assert undecided == sorted(evidence.get("no_figure", [])), item["item_id"]
        if undecided:
            assert item["clue"].endswith("(of the countries with a figure in that source)")


def test_evidence_names_the_file_row_that_holds_the_value(built: BuildResult) -> None:
    checked = 0
    for item in built.dataset.to_dict("records"):
        for cell in json.loads(item["clue_evidence"])["cells"]:
            if cell["kind"] == "category":
                continue
            for role in ("target", "low", "high") if cell["kind"] == "between" else ("target",):
                record = cell[role]
                line = lines(ROOT / record["file"])[record["row"] - 1]
                assert f'"{record["id"]}"' in line or line.startswith(f"{record['id']},"), record
                fields = next(csv.reader([line]))
                assert record["value"] in {float(x) for x in fields if _is_number(x)}, record
                checked += 1
    assert checked > 15


def test_margins_hold(built: BuildResult) -> None:
    for item in built.dataset.to_dict("records"):
        evidence = json.loads(item["clue_evidence"])
        if item["clue_type"] == "comparison":
            assert evidence["gap_share"] >= evidence["min_gap_share"] == KNOWABLE_GAP
        for cond in evidence["conditions"]:
            if cond["kind"] != "range":
                continue
            v = numeric(cond["indicator"])[item["region"]]
            for bound in (cond["low"], cond["high"]):
                if bound is not None:
                    gap = abs(v - bound) / max(abs(v), abs(bound))
                    assert gap >= KNOWABLE_GAP, item["item_id"]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _pattern(term: str) -> re.Pattern[str]:
    flags = 0 if term != term.lower() else re.IGNORECASE
    return re.compile(rf"(?<![\w-]){re.escape(term)}s?(?![\w-])", flags)


def _bench() -> Any:
    """``bench/country_leaks.py``, the check written outside the engine."""
    spec = importlib.util.spec_from_file_location("country_leaks", ROOT / "bench/country_leaks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_item_names_its_own_country(built: BuildResult) -> None:
    for item in built.dataset.to_dict("records"):
        row = members()[item["region"]]
        terms = [row["name"]]
        for column in ("aliases", "demonyms", "capital"):
            terms += [t.split("=")[0].strip() for t in row[column].split(";") if t.strip()]
        text = "\n".join(str(item[c]) for c in ("narrative", "question", *OPTIONS))
        found = [t for t in terms if _pattern(t).search(text)]
        assert found == [], (item["item_id"], found)


def test_the_independent_leak_list_finds_at_most_five_percent(built: BuildResult) -> None:
    bench = _bench()
    result = bench.check(built.dataset, bench.load_terms())
    stats = bench.summary(result)
    assert stats["share"] <= 0.05, stats
    # what it still finds is the declared frame term (the case bank's Chinese protagonists)
    left = {t for terms in result.loc[result["leaks"], "terms"] for t in terms.split("; ")}
    assert left <= {"Chinese (language)"}, left
    kept = built.dataset[built.dataset["frame_terms"] != "[]"]
    assert set(kept["region"]) <= {"SGP"} and len(kept) == stats["leaking_items"]
    assert built.metrics["items_keeping_a_frame_term"] == {"Chinese": len(kept)}


def test_coverage_items_and_type_shares_and_every_case_country_accounted_for(
    built: BuildResult,
) -> None:
    # every part of the bar holds (200 items, 50 countries, 10 % per clue type); every case-bank
    # country has an item or is named with its reasons in the card
    assert built.metrics["items"] >= 200, built.metrics["coverage"]
    shares = built.dataset["clue_type"].value_counts(normalize=True)
    assert set(shares.index) == set(built.metrics["by_clue_type"])
    assert shares.min() >= 0.10, shares.to_dict()
    with (ROOT / "data/sources/cases/case_bank.csv").open(encoding="utf-8") as f:
        countries = {r["country"] for r in csv.DictReader(f)}
    by_name = {r["name"]: iso3 for iso3, r in members().items()}
    case_iso3 = {by_name[c] for c in countries}
    assert len(case_iso3) == 57
    assert built.metrics["coverage"]["all_met"], built.metrics["coverage"]
    without = built.metrics["regions_without_items"]
    assert case_iso3 == set(built.dataset["region"]) | set(without)
    assert all(reasons for reasons in without.values())


def test_counts_per_clue_type_add_up_with_reasons(built: BuildResult) -> None:
    by_type = built.metrics["by_clue_type"]
    assert set(by_type) == {"comparison", "intersection", "geographical", "entity", "temporal"}
    for counts in by_type.values():
        assert counts["kept"] + counts["removed"] == counts["attempted"] == 79
        assert sum(counts["removed_by_reason"].values()) >= counts["removed"]
    assert set(built.metrics["not_generated"]) == {"commonsense"}


def test_hop_diagnostic_runs_three_conditions_on_the_engine(
    built: BuildResult, tmp_path: Path
) -> None:
    params = load_params(ROOT / "params.yaml")
    config = HopConfig(
        model="baselines.random", prompt="zero_shot", limit=6, bootstrap=200, seed=13
    )
    path = tmp_path / "dataset.parquet"
    built.dataset.to_parquet(path)
    table, predictions, summary = run_hop(
        built.dataset, str(path), select(params, "baselines.random"), config, ROOT,
        tmp_path / "responses.sqlite", region_names(built_set(), ROOT),
    )  # fmt: skip
    assert set(predictions["condition"]) == {"none", "clue", "oracle"}
    assert summary["paired_items"] == summary["items"] == 6
    assert set(table["reading"]) == {"chance model"}
    assert "first_hop" not in table.columns  # letters by log-likelihood: the first hop not asked
    assert str(summary["first_hop"]).startswith("not asked")
    assert summary["chance"] == round(1 / 6, 4)  # six options each, not 1/3


def test_the_independent_checks_catch_planted_violations(built: BuildResult) -> None:
    item = built.dataset.iloc[0].to_dict()
    evidence = json.loads(item["clue_evidence"])
    group_only = [c for c in evidence["conditions"] if c["kind"] == "category"][:1]
    assert len([m for m in members() if all(holds(c, m) for c in group_only)]) > 1
    name = members()[item["region"]]["name"]
    assert _pattern(name).search(f"{item['question']} In {name}, people agree.")
    assert not _pattern("US").search("let us go")  # capitals-only terms never match a pronoun
