"""Case-export ingest and pre-constructed items: schema checks with row-precise errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.cases.construct import TYPES
from cultureqa.cases.geography import continent_of
from cultureqa.cases.ingest import CASE_COLUMNS, DOMAINS, load_cases, load_sample_items
from cultureqa.core.io import SourceError

ROOT = Path(__file__).resolve().parents[2]
BANK = ROOT / "data" / "sources" / "cases" / "case_bank.csv"
ITEMS = ROOT / "data" / "sources" / "cases" / "items_sample.jsonl"
CONTINENTS = {"Africa", "Asia", "Europe", "North America", "Latin America", "Oceania"}


def _case(case_id: str = "c1", **overrides: str) -> dict[str, str]:
    row = {
        "case_id": case_id,
        "narrative": "A visitor meets a practice.",
        "commentary": "The local logic is explained.",
        "differences": "Here: X. China: Y.",
        "domain": "customs",
        "continent": "Asia",
        "country": "Japan",
        "topic_tags": "etiquette; food",
        "source": "test",
    }
    return {**row, **overrides}


def _write_csv(tmp_path: Path, rows: list[dict[str, str]]) -> Path:
    path = tmp_path / "cases.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _item(case_id: str, **options: str) -> dict[str, object]:
    base = {t: f"Option of type {t} with enough words to pass the checks." for t in TYPES}
    return {"case_id": case_id, "question": "Why?", "options": {**base, **options}}


# --- the shipped sample --------------------------------------------------------------------


def test_shipped_case_bank_meets_the_sample_contract() -> None:
    cases = load_cases(BANK)
    assert list(cases.columns[: len(CASE_COLUMNS)]) == list(CASE_COLUMNS)
    assert len(cases) >= 66
    assert cases["case_id"].is_unique
    counts = cases["domain"].value_counts()
    assert set(counts.index) == set(DOMAINS)
    assert counts.min() >= 5
    true_continent = cases["country"].map(continent_of)
    assert set(true_continent) == CONTINENTS
    assert true_continent.value_counts().min() >= 6


def test_shipped_case_bank_plants_continent_errors_for_annotation() -> None:
    cases = load_cases(BANK)
    true_continent = cases["country"].map(continent_of)
    old_label = cases["continent"].isin(["America", "Americas"])
    wrong = (cases["continent"] != true_continent) & ~old_label
    assert 0.07 <= wrong.mean() <= 0.15  # about 10% wrong on purpose
    assert old_label.sum() >= 3
    assert {"Mexico", "Egypt", "Australia"} <= set(cases.loc[wrong, "country"])


def test_shipped_narratives_are_short_scenarios() -> None:
    words = load_cases(BANK)["narrative"].str.split().str.len()
    assert words.between(60, 150).all()


def test_domain_labels_are_normalized() -> None:
    raw = pd.read_csv(BANK, dtype=str)
    assert (raw["domain"] != raw["domain"].str.strip().str.lower()).any()  # messy on purpose
    assert set(load_cases(BANK)["domain"]) <= set(DOMAINS)


def test_shipped_sample_items_cover_every_case_and_validate() -> None:
    cases = load_cases(BANK)
    items = load_sample_items(ITEMS, cases["case_id"])
    assert list(items["case_id"]) == list(cases["case_id"])
    for t in TYPES:
        assert items[f"type_{t}"].str.len().gt(20).all()
    assert (items["origin"] == "sample").all()


def test_sample_answers_are_not_the_longest_option_by_habit() -> None:
    items = load_sample_items(ITEMS)
    words = pd.DataFrame({t: items[f"type_{t}"].str.split().str.len() for t in TYPES})
    longest_is_f = (words["F"] > words[list("ABCDE")].max(axis=1)).mean()
    assert longest_is_f < 0.25  # chance is 1/6; a length cue would give the answer away


# --- errors --------------------------------------------------------------------------------


def test_missing_column_names_it(tmp_path: Path) -> None:
    rows = [{k: v for k, v in _case().items() if k != "topic_tags"}]
    with pytest.raises(SourceError, match=r"missing column.*topic_tags"):
        load_cases(_write_csv(tmp_path, rows))


def test_unknown_domain_names_row_and_column(tmp_path: Path) -> None:
    path = _write_csv(tmp_path, [_case("c1"), _case("c2", domain="food")])
    with pytest.raises(SourceError) as err:
        load_cases(path)
    assert err.value.row == 2 and err.value.column == "domain"
    assert "unknown domain 'food'" in str(err.value) and str(path) in str(err.value)


def test_empty_required_value_names_row_and_column(tmp_path: Path) -> None:
    path = _write_csv(tmp_path, [_case("c1"), _case("c2"), _case("c3", narrative="  ")])
    with pytest.raises(SourceError) as err:
        load_cases(path)
    assert (err.value.row, err.value.column) == (3, "narrative")


def test_duplicate_case_id_points_at_both_rows(tmp_path: Path) -> None:
    path = _write_csv(tmp_path, [_case("c1"), _case("c2"), _case("c1")])
    with pytest.raises(SourceError, match=r"row 3.*duplicate case_id 'c1' \(first seen in row 1\)"):
        load_cases(path)


def test_jsonl_export_with_nulls_loads_as_text(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    rows = [_case("c1", topic_tags=None), _case("c2", domain="Daily Life")]  # type: ignore[arg-type]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    cases = load_cases(path)
    assert list(cases["topic_tags"]) == ["", "etiquette; food"]
    assert list(cases["domain"]) == ["customs", "daily life"]
    assert pd.api.types.is_string_dtype(cases["case_id"])


def _write_jsonl(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_sample_item_with_missing_type_names_the_line(tmp_path: Path) -> None:
    broken = _item("c2")
    del broken["options"]["E"]  # type: ignore[attr-defined]
    path = _write_jsonl(tmp_path, [json.dumps(_item("c1")), json.dumps(broken)])
    with pytest.raises(SourceError, match=r"row 2.*missing type\(s\) \['E'\]"):
        load_sample_items(path)


def test_sample_item_with_duplicated_type_key_is_rejected(tmp_path: Path) -> None:
    line = json.dumps(_item("c1"))
    duplicated = line.replace('"A":', '"B": "another B option text here", "A":', 1)
    with pytest.raises(SourceError, match=r"row 1.*duplicated type\(s\) \['B'\]"):
        load_sample_items(_write_jsonl(tmp_path, [duplicated]))


def test_sample_items_bad_json_and_missing_cases(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"row 2.*invalid JSON"):
        load_sample_items(_write_jsonl(tmp_path, [json.dumps(_item("c1")), "{oops"]))
    path = _write_jsonl(tmp_path, [json.dumps(_item("c1"))])
    with pytest.raises(SourceError, match=r"no pre-constructed item for case\(s\) \['c9'\]"):
        load_sample_items(path, ["c1", "c9"])
    with pytest.raises(SourceError, match=r"row 2.*duplicate case_id 'c1'"):
        load_sample_items(_write_jsonl(tmp_path, [json.dumps(_item("c1"))] * 2))


def test_sample_item_with_vague_answer_is_rejected(tmp_path: Path) -> None:
    vague = _item("c1", F="It happens because of cultural differences between the two countries.")
    with pytest.raises(SourceError, match="vague metalanguage"):
        load_sample_items(_write_jsonl(tmp_path, [json.dumps(vague)]))
