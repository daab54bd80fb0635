"""The engine's ``statement`` format from a benchmark source (docs/twohop-engine.md §1).

The invented lands (``invented.py``) get IndoCulture-shaped statements through the one benchmark
loader (``tests/fixtures/twohop_statement``): bilingual pairs, balanced assigned gold positions
with one permutation per pair, the ID-MoCQA dataset contract; planted bad rows are refused with
file, row and column, or dropped with their reason counted.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from cultureqa.core.io import SourceError, write_parquet
from cultureqa.mocqa.evaluate import balanced_subset, load_dataset
from cultureqa.mocqa_shared.schema import DATASET_COLUMNS
from cultureqa.regions.config import RegionSet, RegionSetError
from cultureqa.regions.judges.checks import CheckConfig
from cultureqa.regions.pipeline import BuildResult, card_markdown, run_build
from cultureqa.regions.translate import OFFLINE_REASON, rebalance
from tests.regions.invented import write_invented

FIXTURE = Path(__file__).parents[1] / "fixtures" / "twohop_statement"
NAME = "invented_statements"
TEMPLATES = {
    "en": {
        "frame": "Think of {clue}.",
        "statement": [
            'In this {noun}, which option correctly completes the following statement? "{stem} …"',
            'Which option correctly completes this statement about that {noun}: "{stem} …"?',
        ],
    },
    "id": {
        "frame": "Bayangkan {clue}.",
        "statement": [
            'Di {noun} tersebut, pilihan mana yang tepat melengkapi pernyataan berikut? "{stem} …"',
        ],
    },
}


def statement_set(root: Path, rows: str | None = None, **policy: Any) -> RegionSet:
    """The invented set reading the fixture benchmark (``rows``: a CSV text replacing it)."""
    raw = write_invented(root)
    csv = root / "items.csv"
    if rows is None:
        shutil.copy(FIXTURE / "items.csv", csv)
    else:
        csv.write_text(rows, encoding="utf-8")
    config = yaml.safe_load((FIXTURE / "benchmark.yaml").read_text(encoding="utf-8"))
    config["source"]["path"] = "items.csv"
    if policy:
        config["rows"] = policy
    raw["source"] = {"benchmark": NAME, "specific_column": "is_land_specific"}
    for lang, words in TEMPLATES.items():
        raw["templates"][lang] = {**raw["templates"][lang], **words}
    return RegionSet.from_params(raw, root, {NAME: config})


def build(root: Path, rows: str | None = None, **policy: Any) -> BuildResult:
    return run_build(statement_set(root, rows, **policy), root, 13, CheckConfig())


def test_statement_items_are_bilingual_pairs_with_balanced_assigned_gold(tmp_path: Path) -> None:
    result = build(tmp_path)
    data = result.dataset
    assert result.metrics["item_format"] == "statement"
    assert len(data) >= 12  # every land but one gets a clue of some type
    assert set(DATASET_COLUMNS) <= set(data.columns)
    assert set(data["language"]) == {"en", "id"}
    # every pair in both languages, with one permutation and one gold letter
    for _, pair in data.groupby("pair_id"):
        assert sorted(pair["language"]) == ["en", "id"]
        assert pair["option_order"].nunique() == 1
        assert pair["answer"].nunique() == 1
    # gold positions: per language each letter within one of the others
    for _, part in data.groupby("language"):
        counts = Counter(part["answer"])
        assert set(counts) == {"A", "B", "C"}
        assert max(counts.values()) - min(counts.values()) <= 1
    # the gold option is the source's gold, moved (honey cake: B in the source)
    honey = data[(data["source_id"] == "st-01") & (data["language"] == "en")]
    assert len(honey)
    for row in honey.itertuples():
        assert row.options[ord(row.answer) - ord("A")] == "honey"
        assert row.option_order[ord(row.answer) - ord("A")] == "B"
    # the clue sentence opens the question, the frame then quotes the scrubbed stem
    for row in data.itertuples():
        assert row.question.startswith(row.narrative)
        assert row.clue in row.narrative
        assert "Veloria" not in row.question.replace(row.clue, "")
    feast = data[(data["source_id"] == "st-01") & (data["language"] == "en")]
    assert len(feast) and feast["question"].str.contains("in this land").all()
    # the row not specific to one land is dropped and counted; nothing else is
    assert result.metrics["source_rows_dropped_by_reason"] == {"not specific to one region": 1}
    assert "not specific to one region: 1" in card_markdown(result.metrics)
    assert data["clue_source"].str.len().gt(0).all()


def test_the_idmocqa_evaluation_reads_the_statement_dataset(tmp_path: Path) -> None:
    data = build(tmp_path).dataset
    path = tmp_path / "dataset.parquet"
    write_parquet(path, data)
    read = load_dataset(path)
    assert len(read) == len(data)
    subset = balanced_subset(read, 4)
    assert set(subset.groupby("pair_id")["language"].nunique()) == {2}


def test_a_pair_missing_a_language_is_removed_with_its_reason(tmp_path: Path) -> None:
    rs = statement_set(tmp_path)
    result = run_build(rs, tmp_path, 13, CheckConfig())
    items = result.dataset
    pair = items["pair_id"].iloc[0]
    gone = items[(items["pair_id"] == pair) & (items["language"] == "id")].index
    earlier = result.removed.iloc[0:0]
    out = rebalance(items.drop(index=gone), earlier, rs, {}, None, lambda f, lang: (f, f))
    assert pair not in set(out.items["pair_id"])
    assert list(out.removed["reason"]) == [OFFLINE_REASON]
    assert list(out.removed["detail"]) == ["the source has no id version"]
    assert out.counts == {"incomplete_pairs": 1, "translated": 0, "dropped_items": 1}


PLANTED_REGION = (FIXTURE / "items.csv").read_text(encoding="utf-8") + (
    "st-12,Atlantis,Food,True,\"Roti dibuat dengan\",\"['A. a', 'B. b', 'C. c']\",A,"
    "\"Bread is made with\",\"['A. a', 'B. b', 'C. c']\"\n"
)
PLANTED_EMPTY = (FIXTURE / "items.csv").read_text(encoding="utf-8") + (
    "st-12,Quintar,Food,True,\"Roti dibuat dengan\",\"['A. gandum', 'B. ', 'C. jagung']\",A,"
    "\"Bread is made with\",\"['A. wheat', 'B. barley', 'C. maize']\"\n"
)


def test_an_unknown_region_is_refused_with_file_row_and_column(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as caught:
        build(tmp_path, PLANTED_REGION)
    message = str(caught.value)
    assert "items.csv" in message and "row 12" in message and "column 'land'" in message
    assert "'Atlantis' is not a region of the set" in message


def test_an_empty_option_is_refused_or_dropped_by_the_row_policy(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as caught:
        build(tmp_path, PLANTED_EMPTY)
    message = str(caught.value)
    assert "items.csv" in message and "row 12" in message and "'options'" in message
    result = build(tmp_path, PLANTED_EMPTY, invalid="drop", max_invalid_share=0.5)
    assert "st-12" not in " ".join(result.dataset["source_id"])
    dropped = result.metrics["source_rows_dropped_by_reason"]
    assert dropped.pop("not specific to one region") == 1
    assert len(dropped) == 1 and next(iter(dropped.values())) == 1
    assert list(dropped) == ["label_only_option"]  # the loader's reason, as it counts it


def test_a_statement_set_without_its_frame_or_benchmark_fails_by_key(tmp_path: Path) -> None:
    raw = write_invented(tmp_path)
    raw["source"] = {"benchmark": NAME}
    with pytest.raises(RegionSetError, match=r"source\.benchmark: no benchmark"):
        RegionSet.from_params(raw, tmp_path, {})
    config = yaml.safe_load((FIXTURE / "benchmark.yaml").read_text(encoding="utf-8"))
    with pytest.raises(RegionSetError, match=r"templates\.en: no 'statement'"):
        RegionSet.from_params(raw, tmp_path, {NAME: config})
    raw["source"] = {"benchmark": NAME, "format": "essay"}
    with pytest.raises(RegionSetError, match="format: 'essay'"):
        RegionSet.from_params(raw, tmp_path, {NAME: config})


def test_an_option_the_clue_names_is_refused_by_the_rule_judge(tmp_path: Path) -> None:
    """A clue naming a short option gives the answer away (copy_ngram alone misses one word)."""
    from cultureqa.regions.judges.checks import SetRules, problems

    result = build(tmp_path)
    item = result.dataset[result.dataset["language"] == "en"].iloc[0].to_dict()
    rules, config = SetRules(item_format="statement"), CheckConfig()
    before = problems(item, result.kb, frozenset(), config, rules)
    assert "option copied into the question" not in {reason for reason, _ in before}
    word = str(item["clue"]).split()[-1].strip(".,")
    planted = {**item, "options": [word, *list(item["options"])[1:]]}
    assert ("option copied into the question", "A") in problems(
        planted, result.kb, frozenset(), config, rules
    )
