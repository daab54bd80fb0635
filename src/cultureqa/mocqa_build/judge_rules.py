"""The offline judge: score what rules can decide, in the panel's record shape.

Rules cannot judge fluency or cultural nuance, but they can decide the failures that matter most
for a two-hop question: the clue names the place (leak), repeats an option (shortcut), does not
single out the province in the KB, the options are broken, the text is too long, or a language
is missing. Those map onto the same eight criteria the LLM judges score (DESIGN.md §5.3).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from cultureqa.knowledge.gazetteer import find_own_province_leaks, has_location_leak
from cultureqa.knowledge.national_clues import ClueFactTable
from cultureqa.knowledge.provinces import KnowledgeBase
from cultureqa.mocqa_build import claims
from cultureqa.mocqa_build.facts import name_owners
from cultureqa.mocqa_build.textchecks import (
    content_tokens,
    copied_option,
    has_anaphor,
    looks_like,
    shortcut_terms,
    word_count,
)
from cultureqa.mocqa_shared.schema import LETTERS, N_OPTIONS, as_options
from cultureqa.regions.judges.judging import CRITERIA, Judgement, category_from_scores

CRITICAL = ("province_clue_accuracy", "answer_discrimination", "answer_quality")
UNDECIDED = {
    "cultural_alignment": "proxy only: share of the source statement's words kept",
    "question_clarity": "proxy only: no unfilled slot and a question ending",
    "language_quality": "proxy only: function-word language check and both languages present",
}
"""Criteria a rule cannot truly decide (fluency, nuance); the panel must judge them."""


@dataclass(frozen=True)
class RulesConfig:
    """Limits of the rules judge (``conf/judge/rules.yaml``)."""

    max_clue_words: int = 45
    max_question_words: int = 130
    copy_ngram: int = 4
    thresholds: Mapping[str, int] = field(
        default_factory=lambda: {"ok": 15, "minor": 13, "moderate": 10}
    )


def clue_accuracy(
    kb: KnowledgeBase,
    evidence: Mapping[str, Any],
    province: str,
    national: KnowledgeBase | None = None,
    clue_facts: ClueFactTable | None = None,
    min_gap_share: float = 0.0,
) -> int:
    """2 if the KB confirms the clue singles out ``province``, 1 if it cannot tell, else 0.

    Comparison and intersection claims are recomputed over ``national`` (every province of
    Indonesia) when given, with the margin ``min_gap_share``: a claim true only among the
    benchmark's provinces, or only by a hair, scores 0. A named fact (template clue) scores 2
    only if its national claim in ``clue_facts`` is exactly ``province`` too.
    """
    if evidence.get("claim") in ("comparison", "intersection"):
        universe = national if national is not None else kb
        return 2 if claims.verify_evidence(universe, evidence, province, min_gap_share) else 0
    if "kb_check" in evidence:  # LLM clue: checked against the KB at generation time
        return {"agrees": 2, "unverifiable": 1}.get(str(evidence["kb_check"]), 0)
    in_kb = _unique_in_kb(kb, evidence, province)
    if in_kb is None:
        return 1
    if clue_facts is not None and "fact_key" in evidence:
        in_kb = in_kb and clue_facts.verdict(province, str(evidence["fact_key"])).unique
    return 2 if in_kb else 0


def _unique_in_kb(kb: KnowledgeBase, evidence: Mapping[str, Any], province: str) -> bool | None:
    """Whether the named fact belongs to ``province`` alone in the KB (None: not a named fact)."""
    if evidence.get("kind") == "event":
        years = {e.year for e in kb[province].events} if province in [p.name for p in kb] else set()
        return evidence.get("year") in years
    if evidence.get("kind") == "border_country":
        owners = sorted(p.name for p in kb if evidence.get("name") in p.border_countries)
        return owners == [province]
    if "name" in evidence:
        return name_owners(kb, str(evidence["name"])) == [province]
    return None


def _band(value: int, limit: int) -> int:
    return 2 if value <= limit else (1 if value <= 1.5 * limit else 0)


def keeps_source_answer(row: Mapping[str, Any], source: Mapping[str, Any] | None) -> bool:
    """Whether the variant still has its source item's options and gold letter.

    Options may come from either language of the source (LLM mode lends the other language's
    options when one side has none); anything else means the answer is no longer the source's.
    """
    if source is None:
        return True
    allowed = [as_options(source.get(k)) for k in ("options_en", "options_id")]
    return row["answer"] == source.get("answer") and as_options(row["options"]) in allowed


def score_variant(
    row: Mapping[str, Any],
    kb: KnowledgeBase,
    config: RulesConfig,
    has_counterpart: bool,
    national: KnowledgeBase | None = None,
    source: Mapping[str, Any] | None = None,
    failed: list[str] | None = None,
    clue_facts: ClueFactTable | None = None,
    min_gap_share: float = 0.0,
) -> dict[str, int]:
    """Eight criterion scores (0–2) for one variant row."""
    question, clue, language = str(row["question"]), str(row["clue"]), str(row["language"])
    options = as_options(row["options"])
    evidence = json.loads(str(row["clue_evidence"]) or "{}")
    context_words = set(content_tokens(str(row.get("context", ""))))
    kept = len(context_words & set(content_tokens(question))) / max(1, len(context_words))
    cheats = bool(failed if failed is not None else failed_rules(row, config.copy_ngram))
    sound_options = (
        len(options) == N_OPTIONS
        and len(set(options)) == N_OPTIONS
        and all(o.strip() for o in options)
        and row["answer"] in LETTERS
        and keeps_source_answer(row, source)
    )
    two_hops = has_anaphor(question, language), bool(clue.strip()) and clue in question
    right_language = looks_like(question, language)
    return {
        "province_clue_accuracy": clue_accuracy(
            kb, evidence, str(row["province"]), national, clue_facts, min_gap_share
        ),
        "conciseness": min(
            _band(word_count(clue), config.max_clue_words),
            _band(word_count(question), config.max_question_words),
        ),
        "cultural_alignment": 2 if kept >= 0.6 else (1 if kept >= 0.3 else 0),
        "reasoning_structure": sum(two_hops),
        "answer_discrimination": 0 if cheats else 2,
        "answer_quality": 2 if sound_options else 0,
        "question_clarity": 2
        if "{" not in question and question.rstrip().endswith(("?", '…"'))
        else 1,
        "language_quality": int(right_language) + int(has_counterpart),
    }


def failed_rules(row: Mapping[str, Any], copy_ngram: int) -> list[str]:
    """The answer-leak and shortcut rules a variant breaks (the paper's Significant cases).

    Names of its own province, a place in it or its people anywhere in the question (clue:
    answer leak; statement: the first hop is no longer needed), a place used as a location,
    a repeated option word, or copied option text.
    """
    question, clue, language = str(row["question"]), str(row["clue"]), str(row["language"])
    options = as_options(row["options"])
    own = find_own_province_leaks(question, language, str(row["province"]))  # type: ignore[arg-type]
    out = [f"names its province: {x.name} ({x.kind} {x.term})" for x in own]
    if has_location_leak(question, language):  # type: ignore[arg-type]
        out.append("names a place as a location")
    out += [f"clue repeats option word: {w}" for w in shortcut_terms(clue, options)]
    if copied_option(question, options, copy_ngram) is not None:
        out.append("copies an option")
    return out


def rationale(failed_checks: list[str], scores: Mapping[str, int]) -> str:
    """Why the rules scored as they did, plus what rules cannot decide."""
    failed = list(failed_checks)
    if scores["province_clue_accuracy"] == 0:
        failed.append("clue claim not verified against the knowledge base")
    if scores["answer_quality"] == 0:
        failed.append("options broken or no longer the source item's answer")
    undecided = "; ".join(f"{k}: {v}" for k, v in UNDECIDED.items())
    return ("failed: " + "; ".join(failed) + " | " if failed else "") + "undecided: " + undecided


def judge_rules(
    variants: pd.DataFrame,
    kb: KnowledgeBase,
    config: RulesConfig,
    languages: Sequence[str],
    national: KnowledgeBase | None = None,
    items: pd.DataFrame | None = None,
    clue_facts: ClueFactTable | None = None,
    min_gap_share: float = 0.0,
) -> list[Judgement]:
    """One ``rules`` judgement per variant (never malformed: rules always answer).

    ``languages`` are the build's languages: a variant whose pair lacks one of them loses a
    point on language quality (both languages present is one of the rule-decidable checks).
    """
    languages_of = variants.groupby("pair_id")["language"].agg(lambda s: set(s))
    sources = (
        {str(r["source_id"]): r for r in items.to_dict(orient="records")}
        if items is not None
        else {}
    )
    wanted = set(languages)
    out = []
    for row in variants.to_dict(orient="records"):
        counterpart = languages_of[row["pair_id"]] >= wanted
        source = sources.get(str(row["source_id"])) if items is not None else None
        failed = failed_rules(row, config.copy_ngram)
        scores = score_variant(
            row, kb, config, counterpart, national, source, failed, clue_facts, min_gap_share
        )
        assert set(scores) == set(CRITERIA)
        category = category_from_scores(scores, config.thresholds, CRITICAL)
        why = rationale(failed, scores)
        out.append(Judgement(str(row["variant_id"]), "rules", scores, category, why))
    return out
