"""Verify stage: repair leaks and copying (phase 1), then a structure check (phase 2).

Phase 1 flags a question that names a province, city or regency as a location (gazetteer), names
its own province, capital, a place in it or its people anywhere, cultural terms included
("Rumoh Aceh", "Batak wedding": issue 11), copies option text, or whose clue repeats a
distinctive option word. The template generator repairs a clue leak by regenerating the pair's
clue from the next KB fact and a statement leak by rebuilding the statement (own-province terms
become "local"/"setempat") with the same clue; the LLM generator rewrites with indirect
references. Phase 2 removes items marked "[NEEDS MAJOR REVISION]" and tidies minor issues
(DESIGN.md §5.4).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from cultureqa.knowledge.gazetteer import find_location_mentions, find_own_province_leaks
from cultureqa.mocqa_build.stage import StageResult, stage_metrics
from cultureqa.mocqa_build.textchecks import copied_option, has_anaphor, shortcut_terms, word_count
from cultureqa.mocqa_shared.schema import (
    LETTERS,
    N_OPTIONS,
    VARIANT_COLUMNS,
    as_options,
    removed_rows,
    require_columns,
)
from cultureqa.regions.llm.parse import parse_labelled

MAJOR = "[NEEDS MAJOR REVISION]"
Repairer = Callable[[pd.DataFrame, Mapping[str, list[str]], int], pd.DataFrame]
"""(every row of the pairs with issues, issues per variant id, attempt) → replacement rows
(same variant ids; rows not returned stay as they were)."""
Reviewer = Callable[[pd.DataFrame], Mapping[str, str]]
"""rows → variant id → structure verdict text (an LLM's reply); missing ids count as OK."""


@dataclass(frozen=True)
class VerifyConfig:
    """Thresholds of both phases (``mocqa.verify`` params)."""

    copy_ngram: int = 4
    repair_attempts: int = 3
    min_question_words: int = 8


CLUE_LEAK = "clue names its province"
STATEMENT_LEAK = "statement names its province (single hop)"


def own_province_issues(row: Mapping[str, Any]) -> list[str]:
    """Own-province names, places and peoples, split by hop.

    In the clue they are an answer leak; elsewhere in the question the statement no longer
    needs the first hop.
    """
    question, language, clue = str(row["question"]), str(row["language"]), str(row["clue"])
    province = str(row["province"])
    in_clue = find_own_province_leaks(clue, language, province)  # type: ignore[arg-type]
    in_question = find_own_province_leaks(question, language, province)  # type: ignore[arg-type]
    issues = [f"{CLUE_LEAK}: {x.name} ({x.kind} {x.term})" for x in in_clue]
    clue_names = [x.name for x in in_clue]
    for leak in in_question:
        if leak.name in clue_names:
            clue_names.remove(leak.name)  # the same term, seen again through the question
        else:
            issues.append(f"{STATEMENT_LEAK}: {leak.name} ({leak.kind} {leak.term})")
    return issues


def phase1_issues(row: Mapping[str, Any], copy_ngram: int) -> list[str]:
    """Leak, copying and shortcut problems of one variant (empty when clean)."""
    question, language = str(row["question"]), str(row["language"])
    options = as_options(row["options"])
    own = own_province_issues(row)
    mentions = find_location_mentions(question, language)  # type: ignore[arg-type]
    issues = [f"location: {m.name}" for m in mentions if not any(f": {m.name} (" in i for i in own)]
    issues += own
    copied = copied_option(question, options, copy_ngram)
    if copied is not None:
        issues.append(f"copies option: {copied}")
    issues += [f"repeats option word: {w}" for w in shortcut_terms(str(row["clue"]), options)]
    return issues


def structure_issues(row: Mapping[str, Any], config: VerifyConfig) -> tuple[list[str], list[str]]:
    """(major, minor) structure problems decidable by rules (phase 2, step 1)."""
    question, language = str(row["question"]), str(row["language"])
    options = as_options(row["options"])
    major = []
    if not has_anaphor(question, language):
        major.append("no reference back to the province (second hop missing)")
    if not str(row["clue"]).strip():
        major.append("no first-hop clue")
    if (
        len(options) != N_OPTIONS
        or len(set(options)) != N_OPTIONS
        or not all(o.strip() for o in options)
    ):
        major.append("options are not three distinct non-empty texts")
    if row["answer"] not in LETTERS:
        major.append(f"answer {row['answer']!r} is not A-C")
    if word_count(question) < config.min_question_words:
        major.append("question too short to hold two hops")
    minor = []
    if "  " in question or question != question.strip():
        minor.append("whitespace")
    if question[:1].islower():
        minor.append("lowercase start")
    return major, minor


def _apply_revision(
    row: Mapping[str, Any], verdict: str, config: VerifyConfig
) -> tuple[str, list[str]]:
    """The reviewer's minor revision, if it gives one that still passes phase 1."""
    revised = (
        parse_labelled(verdict).get("QUESTION") if verdict and MAJOR not in verdict.upper() else ""
    )
    if revised and not phase1_issues({**row, "question": revised}, config.copy_ngram):
        return revised, ["revised by the structure reviewer"]
    return str(row["question"]), []


def _tidy(question: str) -> str:
    text = " ".join(question.split())
    return text[:1].upper() + text[1:]


def _phase1(
    frame: pd.DataFrame, config: VerifyConfig, repair: Repairer | None, log: list[dict[str, Any]]
) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Repair rounds; returns the frame and the issues that remain per variant id."""
    issues = {
        r["variant_id"]: phase1_issues(r, config.copy_ngram) for r in frame.to_dict("records")
    }
    for attempt in range(1, config.repair_attempts + 1):
        bad = {k: v for k, v in issues.items() if v}
        if not bad or repair is None:
            break
        pairs = frame.loc[frame["variant_id"].isin(bad), "pair_id"]
        fixed = repair(frame[frame["pair_id"].isin(pairs)], bad, attempt)
        fixed_ids = set(fixed["variant_id"])
        frame = pd.concat([frame[~frame["variant_id"].isin(fixed_ids)], fixed], ignore_index=True)
        for row in fixed.to_dict("records"):
            vid = row["variant_id"]
            now = phase1_issues(row, config.copy_ngram)
            log.append(
                {
                    "variant_id": vid,
                    "attempt": attempt,
                    "issues": "; ".join(issues.get(vid, [])),
                    "remaining": "; ".join(now),
                    "resolved": not now,
                }
            )
            issues[vid] = now
    return frame, issues


def _phase2(
    frame: pd.DataFrame, config: VerifyConfig, review: Reviewer | None
) -> tuple[pd.DataFrame, pd.Series, list[str]]:
    """Structure check: (frame with tidied questions, major-problem mask, note per row)."""
    verdicts = dict(review(frame)) if review is not None and len(frame) else {}
    notes, majors, questions = [], [], []
    for row in frame.to_dict("records"):
        verdict = verdicts.get(row["variant_id"], "")
        row["question"], minor = _apply_revision(row, verdict, config)
        major, rule_minor = structure_issues(row, config)
        if MAJOR in verdict.upper():
            major.append("structure reviewer: " + verdict.strip()[:200])
        notes.append(f"{MAJOR} " + "; ".join(major) if major else "; ".join(minor + rule_minor))
        majors.append(bool(major))
        questions.append(_tidy(str(row["question"])))
    frame = frame.assign(question=questions) if len(frame) else frame
    return frame, pd.Series(majors, index=frame.index, dtype=bool), notes


def verify_variants(
    frame: pd.DataFrame,
    config: VerifyConfig,
    repair: Repairer | None = None,
    review: Reviewer | None = None,
) -> StageResult:
    """Run both phases; ``repair`` and ``review`` are the generator-specific steps."""
    require_columns(frame, VARIANT_COLUMNS, "verify")
    log: list[dict[str, Any]] = []
    n_input = len(frame)
    frame, issues = _phase1(frame.reset_index(drop=True), config, repair, log)
    bad = frame["variant_id"].map(lambda v: bool(issues.get(v)))
    details = frame.loc[bad, "variant_id"].map(lambda v: "; ".join(issues[v]))
    reasons = frame.loc[bad, "variant_id"].map(lambda v: _removal_reason(issues[v]))
    removed = [removed_rows(frame[bad], "verify", reasons, details)]
    frame, majors, notes = _phase2(frame[~bad].reset_index(drop=True), config, review)
    removed.append(
        removed_rows(frame[majors], "verify", MAJOR, pd.Series(notes, index=frame.index)[majors])
    )
    kept = frame[~majors].loc[:, list(VARIANT_COLUMNS)].reset_index(drop=True)
    all_removed = pd.concat(removed, ignore_index=True)
    repairs = pd.DataFrame(
        log, columns=["variant_id", "attempt", "issues", "remaining", "resolved"]
    )
    metrics = stage_metrics(
        "verify",
        n_input,
        kept,
        all_removed,
        repaired=int(repairs["resolved"].sum()) if len(repairs) else 0,
        repair_attempts=len(repairs),
        minor_revisions=sum(bool(n) and not n.startswith(MAJOR) for n in notes),
    )
    return StageResult(kept, all_removed, metrics, {"repairs": repairs})


def _removal_reason(issues: list[str]) -> str:
    """The removal reason of an unrepaired variant: its issue kinds, without the details."""
    kinds = sorted({issue.split(":", 1)[0] for issue in issues})
    return "not repaired: " + ", ".join(kinds)


def _clue_at_fault(issues: list[str]) -> bool:
    """Whether regenerating the clue can help (statement-only leaks need the same clue)."""
    return any(not i.startswith(STATEMENT_LEAK) for i in issues)


def template_repairer(items: pd.DataFrame, generator: Any) -> Repairer:
    """Regenerate a pair's clue from the next KB fact (both languages stay parallel)."""
    from cultureqa.mocqa_build.expand import rotations, source_side, template_variant

    by_id = items.set_index("source_id", drop=False)
    rotation_of = rotations(items).set_axis(items["source_id"])
    tried: dict[str, set[str]] = {}

    def repair(rows: pd.DataFrame, issues: Mapping[str, list[str]], attempt: int) -> pd.DataFrame:
        out = []
        for pid, group in rows.groupby("pair_id"):
            first = group.iloc[0]
            item = by_id.loc[first["source_id"]]
            pair_issues = [i for v in group["variant_id"] for i in issues.get(v, [])]
            if _clue_at_fault(pair_issues):
                tried.setdefault(str(pid), set()).update(group["fact_key"])
            options = {lang: source_side(item, lang)[1] for lang in ("en", "id")}
            clue, _ = generator.clue_for(
                item["province"],
                first["clue_type"],
                int(rotation_of[first["source_id"]]),
                options,
                exclude=frozenset(tried.get(str(pid), set())),
            )
            if clue is None:
                continue
            for language in group["language"]:
                made = template_variant(
                    generator,
                    item,
                    clue,
                    first["clue_type"],
                    language,
                    int(rotation_of[first["source_id"]]),
                )
                if isinstance(made, dict):
                    out.append(made)
        return pd.DataFrame(out, columns=list(VARIANT_COLUMNS))

    return repair
