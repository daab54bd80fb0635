"""IndoCulture Table 2 / Figure 2 (cultureqa.benchmarks.describe) against hand counts.

The fixture is counted by hand; the configured sample is recounted independently from its CSV
(csv module and str.split), so the stage's loading path and the statistics are both checked.
"""

from __future__ import annotations

import ast
import csv
import runpy
import shutil
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.benchmarks.describe import (
    INSTANCE,
    group_statistics,
    instance_text,
    topic_distribution,
)

ROOT = Path(__file__).resolve().parents[2]

ITEMS = pd.DataFrame(
    {
        "item_id": ["a", "b", "c", "d", "e"],
        "question": ["satu dua tiga", "empat  lima", "enam", "tujuh delapan sembilan sepuluh", "é"],
        "province": ["Bali", "Bali", "Aceh", "Aceh", "Aceh"],
        "is_province_specific": [True, False, True, True, False],
        "topic": ["Art", "Art", "Death", "Art", "Wedding"],
    }
)


def test_group_statistics_by_hand() -> None:
    table = group_statistics(ITEMS, "province", "is_province_specific").set_index("province")
    # Aceh: c (1 word, 4 chars), d (4 words, 30 chars), e (1 word, 1 char); 2 of 3 specific
    assert table.loc["Aceh"].tolist() == pytest.approx([3, 200 / 3, 2.0, 35 / 3])
    # Bali: "satu dua tiga" 3 words 13 chars, "empat  lima" 2 words 11 chars; 1 of 2
    assert table.loc["Bali"].tolist() == pytest.approx([2, 50.0, 2.5, 12.0])
    assert table.loc["All"].tolist() == pytest.approx([5, 60.0, 11 / 5, (13 + 11 + 35) / 5])


def test_the_instance_is_the_premise_with_its_correct_continuation() -> None:
    items = ITEMS.assign(
        options=['["x y", "z"]', '["p", "q r s"]', '["m", "n"]', '["o", "u"]', '["v", "w"]'],
        answer=["A", "B", "B", "A", "B"],
    )
    got = instance_text(items)
    assert got[INSTANCE].tolist()[:2] == ["satu dua tiga x y", "empat  lima q r s"]
    table = group_statistics(got, "province", "is_province_specific", text=INSTANCE)
    # Bali: 3 + 2 words and 2 + 3 words; "satu dua tiga x y" 17 chars, "empat  lima q r s" 17
    assert table.set_index("province").loc["Bali", ["mean_words", "mean_chars"]].tolist() == (
        pytest.approx([5.0, 17.0])
    )
    with pytest.raises(ValueError, match=r"item c: gold letter 'D'"):
        instance_text(items.assign(answer=["A", "B", "D", "A", "B"]))


def test_topic_distribution_by_hand() -> None:
    table = topic_distribution(ITEMS, "topic", "is_province_specific")
    assert table["topic"].tolist() == ["Art", "Death", "Wedding"]
    assert table["is_province_specific"].tolist() == [2, 1, 0]
    assert table["not_is_province_specific"].tolist() == [1, 0, 1]
    assert table["pct_of_items"].tolist() == pytest.approx([60.0, 20.0, 20.0])


def test_bad_inputs_are_named() -> None:
    with pytest.raises(KeyError, match="region"):
        group_statistics(ITEMS, "region", "is_province_specific")
    with pytest.raises(ValueError, match="boolean"):
        topic_distribution(
            ITEMS.assign(is_province_specific="yes"), "topic", "is_province_specific"
        )
    with pytest.raises(ValueError, match="one language"):
        group_statistics(pd.concat([ITEMS, ITEMS]), "province", "is_province_specific")


def test_the_stage_describes_the_configured_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in ("data/sources/indoculture", "data/knowledge"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    main = runpy.run_path(str(ROOT / "stages" / "describe.py"), run_name="stage")["main"]
    args = ["--benchmark", "indoculture", "--group", "province", "--flag",
            "is_province_specific", "--topic", "topic", "--language", "id"]  # fmt: skip
    assert main(args) == 0
    out = tmp_path / "reports" / "datasets" / "indoculture"
    got = pd.read_csv(out / "by_province.csv").set_index("province")
    with open(ROOT / "data/sources/indoculture/sample.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    aceh = [r for r in rows if r["province"] == "Aceh"]
    assert got.loc["Aceh", "items"] == len(aceh)
    # the instance is the premise with its correct continuation ("A. tor-tor" → "tor-tor")
    gold = [ast.literal_eval(r["options"])["ABC".index(r["answer"])][3:] for r in aceh]
    pairs = list(zip(aceh, gold, strict=True))
    words = sum(len(r["context"].split()) + len(g.split()) for r, g in pairs) / len(aceh)
    chars = sum(len(r["context"]) + 1 + len(g) for r, g in pairs) / len(aceh)
    assert got.loc["Aceh", "mean_words"] == pytest.approx(words)
    assert got.loc["Aceh", "mean_chars"] == pytest.approx(chars)
    specific = sum(r["is_province_specific"] == "True" for r in rows) / len(rows)
    assert got.loc["All", "pct_is_province_specific"] == pytest.approx(100 * specific)
    assert (out / "topic_distribution.png").stat().st_size > 1000
    digest = (out / "tables.md").read_text(encoding="utf-8")
    assert "| Aceh |" in digest and "premise followed by its correct continuation" in digest
