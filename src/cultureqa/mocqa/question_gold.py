"""Agreement of the Table 6 counts with a hand-tagged gold set, for the run record.

The taggers' own accuracies (none published for Pattern; nlp-id's held-out agreement with its
corpus) say nothing about questions shaped like ID-MoCQA's. The gold set
(``tests/gold/question_pos/<language>.yaml``, ``mocqa_eval.question_analysis.gold``) holds
questions in that shape, each with the words a reader counts per measure; this module counts the
same questions with the pipeline's taggers and name lists and reports, per measure, the mean
per question both ways, the bias of the pipeline's total (%), the mean absolute error and the
share of questions counted exactly. Every listed word must occur in its question, so a typo in
the gold is an error naming the file, entry and measure, not a silent miscount.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from cultureqa.core.io import SourceError
from cultureqa.mocqa.pos import Tagger
from cultureqa.mocqa.question_pos import COLUMNS, item_counts

GOLD_MEASURES = ("adjectives", "common_nouns", "proper_nouns", "verbs", "persons", "locations",
                 "cultural_terms")  # fmt: skip
"""Lists per gold entry; ``nouns`` = common + proper nouns, as the tagger counts them."""


def load_gold(path: Path) -> list[dict[str, Any]]:
    """The gold entries of one language: ``q`` and one word list per :data:`GOLD_MEASURES`."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no gold set (mocqa_eval.question_analysis.gold)")
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(entries, list) or not entries:
        raise SourceError(path, "expected a non-empty list of entries")
    for row, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("q"), str):
            raise SourceError(path, "each entry needs a question string", row=row, column="q")
        for measure in GOLD_MEASURES:
            words = entry.get(measure)
            if not isinstance(words, list):
                raise SourceError(path, "expected a list (empty: [])", row=row, column=measure)
            for word in words:
                if not re.search(rf"(?<!\w){re.escape(str(word))}(?!\w)", entry["q"]):
                    raise SourceError(path, f"{word!r} is not in the question", row=row,
                                      column=measure)  # fmt: skip
    return entries


def gold_counts(entry: Mapping[str, Any]) -> dict[str, int]:
    """The hand counts of one entry under the Table 6 column names."""
    counts = {m: len(entry[m]) for m in GOLD_MEASURES if m != "common_nouns"}
    counts["nouns"] = len(entry["common_nouns"]) + len(entry["proper_nouns"])
    return counts


def agreement(entries: list[dict[str, Any]], language: str, tagger: Tagger) -> dict[str, Any]:
    """Per Table 6 measure: gold and pipeline means, bias (%), mean |error|, exact share."""
    pairs = [(gold_counts(e), item_counts(e["q"], language, tagger)) for e in entries]
    out: dict[str, Any] = {"questions": len(entries)}
    for measure in COLUMNS:
        gold = [g[measure] for g, _ in pairs]
        got = [c[measure] for _, c in pairs]
        total = sum(gold)
        out[measure] = {
            "gold_mean": round(total / len(gold), 3),
            "tagged_mean": round(sum(got) / len(got), 3),
            "bias_pct": round(100 * (sum(got) / total - 1), 1) if total else None,
            "mean_abs_error": round(
                sum(abs(a - b) for a, b in zip(got, gold, strict=True)) / len(gold), 3
            ),
            "exact_share": round(
                sum(a == b for a, b in zip(got, gold, strict=True)) / len(gold), 3
            ),
        }
    return out


def gold_agreement(
    root: Path, folder: str, taggers: Mapping[str, Tagger]
) -> dict[str, dict[str, Any]]:
    """Agreement per language with ``<root>/<folder>/<language>.yaml`` (missing: an error).

    Each language's tagger is used through a fresh correction counter, so the corrections the
    run record reports for the dataset are the dataset's own.
    """
    out = {}
    for language, tagger in taggers.items():
        entries = load_gold(root / folder / f"{language}.yaml")
        fresh = replace(tagger, corrected=Counter())
        out[language] = {
            "source": f"{folder}/{language}.yaml",
            **agreement(entries, language, fresh),
        }
    return out


def with_bias(table: pd.DataFrame, measured: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Table 6 with the tagger's measured bias (%) beside each count, per row's language.

    The English-vs-Indonesian gaps of the counts were the size of the Indonesian tagger's own
    bias on the gold (issue 42), so a count is never printed without it: ``<measure>_bias_pct``
    follows ``<measure>_per_question``, taken from the gold agreement of the row's language
    (empty where that measure's gold total is 0, and for a language without a gold set).
    """
    out = table.copy()
    columns: list[str] = [c for c in out.columns if not c.endswith("_per_question")]
    for measure in COLUMNS:
        bias = {lang: (m.get(measure) or {}).get("bias_pct") for lang, m in measured.items()}
        out[f"{measure}_bias_pct"] = [bias.get(str(lang)) for lang in out["language"]]
        columns += [f"{measure}_per_question", f"{measure}_bias_pct"]
    return out[columns]


def describe_agreement(measured: Mapping[str, Any]) -> str:
    """The report's clause: bias of the mean per word class against the gold questions."""
    parts = [
        f"{m} {measured[m]['bias_pct']:+.1f} %"
        for m in ("nouns", "verbs", "adjectives", "proper_nouns")
        if measured[m]["bias_pct"] is not None
    ]
    return (
        f"; against {measured['questions']} hand-tagged questions ({measured['source']}) the "
        f"counts are off by {', '.join(parts)} (bias of the mean; every measure in "
        "question_taggers.json)"
    )
