"""The independent leak check (bench/country_leaks.py) against the committed leak-term table.

One planted leak per kind, each in an item of the country it points at, and look-alikes that must
not count: another country's term, a term inside a longer word, a capitalised term in lower case.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "country_leaks", ROOT / "bench" / "country_leaks.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["country_leaks"] = module
    spec.loader.exec_module(module)
    return module


leaks = _load()

PLANTED = [  # (country, kind, text)
    ("GHA", "name", "She flew to Ghana for work."),
    ("NZL", "alias", "Signs across Aotearoa use two languages."),
    ("GHA", "demonym", "Her Ghanaian colleagues laughed."),
    ("GHA", "capital", "The office is in Accra."),
    ("GHA", "city", "A workshop in Kumasi ran late."),
    ("USA", "region", "He rented a car in Texas."),
    ("NGA", "people", "Yoruba men prostrate to greet elders."),
    ("ETH", "language", "The sign was in Amharic."),
    ("GHA", "currency", "She paid twenty cedis for the fruit."),
    ("IND", "landmark", "They visited the Golden Temple."),
    ("KEN", "institution", "Pay me on M-Pesa."),
    ("ETH", "practice", "Everyone ate injera from one tray."),
]
CLEAN = [  # (country, text): no term of the item's own country
    ("GHA", "She paid with M-Pesa in Nairobi, like every Kenyan colleague."),
    ("NGA", "The Akana river is not the Akan people; the ghanaian spelling is wrong."),
    ("JPN", "Yenisei is a river; a yenta is a gossip."),
]


@pytest.fixture(scope="module")
def terms() -> dict[str, list[tuple[str, str, str]]]:
    return leaks.load_terms()


def _frame(rows: list[tuple[str, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_id": [f"i{n}" for n in range(len(rows))],
            "region": [country for country, _ in rows],
            "narrative": ["A visitor arrives." for _ in rows],
            "question": [text for _, text in rows],
            "type_correct": ["Because of the local custom." for _ in rows],
        }
    )


def test_every_planted_kind_is_found_in_its_own_country(terms: dict) -> None:
    result = leaks.check(_frame([(c, t) for c, _, t in PLANTED]), terms)
    assert result["leaks"].all(), result.loc[~result["leaks"], "item"].tolist()
    for (_, kind, _), found in zip(PLANTED, result["kinds"], strict=True):
        assert kind in found, (kind, found)
    assert leaks.summary(result)["items_per_kind"] == {kind: 1 for _, kind, _ in PLANTED}


def test_other_countries_terms_and_look_alikes_do_not_count(terms: dict) -> None:
    result = leaks.check(_frame(CLEAN), terms)
    assert not result["leaks"].any(), result["terms"].tolist()


def test_option_columns_are_read_and_can_be_chosen(terms: dict) -> None:
    frame = _frame([("ETH", "Why does she eat this?")])
    frame["type_correct"] = ["It is gursha."]
    assert leaks.check(frame, terms)["terms"].tolist() == ["gursha (practice)"]
    assert not leaks.check(frame, terms, columns=["question"])["leaks"].any()


def test_names_in_other_languages_count_only_without_an_item_language(terms: dict) -> None:
    frame = _frame([("ESP", "Pain is what she felt."), ("DEU", "She left Deutschland.")])
    frame["language"] = ["en", "en"]
    assert leaks.check(frame, terms)["terms"].tolist() == ["", ""]  # Nauruan, German names
    assert leaks.check(frame, terms, language_column=None)["terms"].tolist() == [
        "Pain (name)",
        "Deutschland (name)",
    ]
    frame["language"] = ["en", "de"]
    assert leaks.check(frame, terms)["terms"].tolist() == ["", "Deutschland (name)"]


def test_the_clue_and_other_countries_names_are_no_leak(terms: dict) -> None:
    frame = _frame([("BRA", "Richer than El Salvador, she said."), ("DEU", "A fair in Germany.")])
    frame["clue"] = ["", "in the World Bank's 'Euro area' group"]
    frame["narrative"] = [
        "A visitor arrives.",
        "This scenario takes place in the country "
        "in the World Bank's 'Euro area' group. Prices are in euros.",
    ]
    found = leaks.check(frame, terms)["terms"].tolist()
    assert found == ["", "Germany (name); euro (currency)"]  # the euros, not the clue's Euro
    frame["narrative"] = ["A visitor arrives.", "It is in the World Bank's 'Euro area' group."]
    frame["question"] = ["A trip to Salvador.", "Why?"]
    assert leaks.check(frame, terms)["terms"].tolist() == ["Salvador (city)", ""]


def test_cli_holds_the_bar_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(c, t) for c, _, t in PLANTED[:1]] + [("GHA", "A quiet afternoon.")] * 19
    path = tmp_path / "dataset.parquet"
    _frame(rows).to_parquet(path)
    assert leaks.main([str(path)]) == 0  # 1 of 20 = 5 %: at the bar
    out = capsys.readouterr().out
    assert "i0\tGHA\tGhana (name)" in out and "1 of 20 items leak their country (5.0%" in out
    _frame([*rows[:1], *rows]).to_parquet(path)
    assert leaks.main([str(path)]) == 1  # 2 of 21: above it


def test_cli_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "dataset.parquet"
    pd.DataFrame({"country": ["GHA"], "question": ["x"]}).to_parquet(path)
    assert leaks.main([str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"error: {path}: no column 'region' in the dataset"
