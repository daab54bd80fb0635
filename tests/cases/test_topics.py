"""Topic normalization by the rules in conf/cases/topic_rules.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.cases.ingest import load_cases
from cultureqa.cases.topics import (
    TOPIC_COLUMNS,
    TopicRules,
    TopicRulesError,
    analysis_categories,
    annotate_topics,
    categorize,
    category_counts,
    explode_categories,
    keyword_pattern,
    load_topic_rules,
    normalize_tags,
    rules_from_mapping,
    split_tags,
)

ROOT = Path(__file__).resolve().parents[2]
RULES_PATH = ROOT / "conf" / "cases" / "topic_rules.yaml"
BANK = ROOT / "data" / "sources" / "cases" / "case_bank.csv"


@pytest.fixture(scope="module")
def rules() -> TopicRules:
    return load_topic_rules(RULES_PATH)


def test_rules_file_compiles_with_threshold(rules: TopicRules) -> None:
    assert rules.min_category_n == 50
    assert rules.min_fragment_length == 2
    assert rules.fallback_category == "uncategorized"
    assert len(rules.categories) >= 10


def test_split_handles_mixed_delimiters_punctuation_and_fragments(rules: TopicRules) -> None:
    raw = "tipping/service; restaurant etiquette|Money;;  a , law!, Cash?? ,x, -, (souk)"
    assert split_tags(raw, rules) == (
        "tipping", "service", "restaurant etiquette", "money", "law", "cash", "souk"
    )  # fmt: skip


def test_split_dedupes_and_keeps_inner_hyphens(rules: TopicRules) -> None:
    assert split_tags("Shoes-off & shoes-off | -son", rules) == ("shoes-off", "son")
    assert split_tags(None, rules) == ()
    assert split_tags("Religion & holidays|food", rules) == ("religion", "holidays", "food")


def test_synonyms_merge_into_one_category(rules: TopicRules) -> None:
    for synonym in ("tipping", "gratuity", "tips", "mobile money", "haggling"):
        assert "money and payment" in categorize(synonym, rules), synonym


def test_one_fragment_may_map_to_several_categories(rules: TopicRules) -> None:
    assert set(categorize("democracy sausage", rules)) >= {
        "food and drink", "government and civic life"
    }  # fmt: skip
    assert set(categorize("language education", rules)) >= {
        "language and communication", "education and schooling"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("fragment", "wanted", "not_wanted"),
    [
        ("in-laws", "family and social relations", "law and regulation"),
        ("fine-dining", "food and drink", "law and regulation"),
        ("customs airport", "law and regulation", "etiquette and greetings"),
        ("community service", "government and civic life", "commerce and work"),
        ("land acknowledgement", "government and civic life", "environment and nature"),
        ("university entrance", "education and schooling", "housing and architecture"),
    ],
)
def test_exclusion_rules_block_false_keyword_hits(
    rules: TopicRules, fragment: str, wanted: str, not_wanted: str
) -> None:
    categories = categorize(fragment, rules)
    assert wanted in categories
    assert not_wanted not in categories


def test_keywords_match_whole_words_with_plural(rules: TopicRules) -> None:
    pattern = keyword_pattern("tip")
    assert pattern.search("tips") and pattern.search("a tip")
    assert not pattern.search("tiptoe")
    assert keyword_pattern("table manners").search("good   table manners")
    assert categorize("sunday", rules) != categorize("sun protection", rules)


def test_fallback_and_unmatched(rules: TopicRules) -> None:
    result = normalize_tags("zzz; qqq", rules)
    assert result.categories == ("uncategorized",)
    assert result.unmatched == ("zzz", "qqq")
    bare = rules_from_mapping({"categories": {"food": {"keywords": ["food"]}}})
    assert normalize_tags("zzz", bare).categories == ()


def test_categories_follow_rule_order_not_tag_order(rules: TopicRules) -> None:
    names = [c.name for c in rules.categories]
    result = normalize_tags("law; food", rules)
    assert list(result.categories) == sorted(result.categories, key=names.index)


def test_annotate_shipped_bank(rules: TopicRules) -> None:
    cases = annotate_topics(load_cases(BANK), rules)
    assert set(TOPIC_COLUMNS) <= set(cases.columns)
    lists = cases["topic_categories"].map(json.loads)
    assert lists.map(len).min() >= 1
    assert not lists.map(lambda c: "uncategorized" in c).any()
    exploded = explode_categories(cases)
    assert len(exploded) == lists.map(len).sum()
    counts = category_counts(cases)
    assert sum(counts.values()) == len(exploded)
    assert analysis_categories(cases, rules.min_category_n) == []  # a sample, not a benchmark
    assert "family and social relations" in analysis_categories(cases, 10)


def test_annotate_leaves_input_untouched(rules: TopicRules) -> None:
    cases = pd.DataFrame({"case_id": ["c1"], "topic_tags": ["food|law"]})
    out = annotate_topics(cases, rules)
    assert list(cases.columns) == ["case_id", "topic_tags"]
    assert json.loads(out.loc[0, "topic_fragments"]) == ["food", "law"]
    assert analysis_categories(out, 1, exclude=["law and regulation"]) == ["food and drink"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"delimiters": [";"]}, "'categories' mapping"),
        ({"categories": {"x": {"regexes": ["("]}}}, r"categories\.x\.regexes: invalid regex"),
        ({"categories": {"x": {"exclude": ["a"]}}}, "neither keywords nor regexes"),
        ({"strip_pattern": "[", "categories": {"x": {"keywords": ["a"]}}}, "strip_pattern"),
    ],
)
def test_bad_rules_name_the_key(data: dict[str, object], message: str) -> None:
    with pytest.raises(TopicRulesError, match=message):
        rules_from_mapping(data, source="rules.yaml")


def test_unreadable_rules_file(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("categories: [unclosed", encoding="utf-8")
    with pytest.raises(TopicRulesError, match="cannot read"):
        load_topic_rules(path)
    with pytest.raises(TopicRulesError, match="cannot read"):
        load_topic_rules(tmp_path / "missing.yaml")
