"""The generic two-hop build of one region set: clues → items → checks → finalize → card.

One function, :func:`run_build`, with no region in it: every set runs here (Indonesia's
provinces, the ID-MoCQA dataset, among them), and tests run invented five-region sets, in both
item formats, through the same call. The
model-backed steps (LLM generator, judge panel, translation of missing languages) are selected
by :class:`.models.ModelSteps`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.cases.shuffle import answer_position_counts
from cultureqa.regions.build import build_items
from cultureqa.regions.config import RegionSet
from cultureqa.regions.finalize import finalize, gold_positions
from cultureqa.regions.generation.clues import ClueBook, Clues
from cultureqa.regions.generation.tables import Knowledge, load_knowledge
from cultureqa.regions.judges.checks import (
    CheckConfig,
    SetRules,
    check_items,
    exclusions,
    phrase_replacements,
)
from cultureqa.regions.judges.judging import JUDGEMENT_COLUMNS, Judgement
from cultureqa.regions.models import ModelSteps
from cultureqa.regions.sources.source import load_source
from cultureqa.regions.translate import rebalance

REFUSED_COLUMNS = ("target", "clue_type", "reason", "candidates")


@dataclass
class BuildResult:
    """The finalized dataset and everything the card reports."""

    dataset: pd.DataFrame
    removed: pd.DataFrame
    refused: pd.DataFrame
    metrics: dict[str, Any]
    kb: Knowledge
    book: ClueBook
    judgements: pd.DataFrame = field(default_factory=pd.DataFrame)
    """One record per (item, judge): the rule judge's and, when configured, the panel's."""
    judged: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Every variant the judge ruled on, kept and rejected, in the set's item format with the
    text the judge saw, ``judge_keep``, the ``judge`` that decided and its ``judge_reason``."""


def run_build(
    rs: RegionSet, root: Path, seed: int, checks: CheckConfig, models: ModelSteps | None = None
) -> BuildResult:
    """Build the set's two-hop dataset (one language's knowledge per language).

    ``models``: the LLM generator, the judge panel and translation when configured
    (:mod:`.models`); None is the offline build (table clues, rule judge, no translation).
    """
    steps = models or ModelSteps()
    frames, removed_frames, refused_rows, counts = [], [], [], Counter[str]()
    kbs: dict[str, Knowledge] = {}
    rechecks: dict[str, Callable[[pd.DataFrame], tuple[pd.DataFrame, pd.DataFrame]]] = {}
    judgements: list[Judgement] = []
    ruled: list[pd.DataFrame] = []
    kb = book = None
    read = None
    for language in rs.languages:
        kb = kbs[language] = load_knowledge(rs, root, language)
        read = read or load_source(rs.source, kb.regions, root, rs.languages)
        excluded = exclusions(rs.name, rs.source, set(read.frame["source_id"]))
        sources = read.frame[read.frame["language"] == language]
        clues = Clues(rs, kb)
        book = steps.clue_book(clues, sorted(sources["region"].unique()))
        built = build_items(sources, book, rs, kb)
        rules = SetRules(
            rs.clue_may_name, clues.margins, phrase_replacements(rs.replacements),
            rs.scrub_limit, excluded=excluded, item_format=rs.item_format,
        )  # fmt: skip
        rechecks[language] = partial(
            check_items, kb=kb, complete=clues.complete, config=checks, rules=rules
        )
        kept, removed = rechecks[language](built.items)
        kept, judged_out, verdicts = steps.judge(kept, removed, rs, kb)
        judgements += verdicts
        ruled.append(ruled_on(built.items, kept, removed, judged_out, steps.judge_name))
        frames.append(kept)
        removed_frames += [built.removed, removed, judged_out]
        counts["sources"] += len(sources)
        refused_rows += [(t, c, r, n) for (t, c, r), n in sorted(book.refused.items())]
    assert kb is not None and book is not None and read is not None, "a set has a language"
    earlier = pd.concat(removed_frames, ignore_index=True)
    balanced = rebalance(
        pd.concat(frames, ignore_index=True), earlier, rs, kbs, steps.translator(rs),
        lambda frame, lang: rechecks[lang](frame),
    )  # fmt: skip
    removed = pd.concat([earlier, balanced.removed], ignore_index=True)
    refused = pd.DataFrame(refused_rows, columns=list(REFUSED_COLUMNS)).drop_duplicates()
    dataset = finalize(balanced.items, seed, rs.item_format)
    metrics = card_metrics(rs, dataset, removed, refused, counts["sources"], seed)
    metrics |= {"rebalance": dict(balanced.counts), "models": steps.metrics(judgements)}
    metrics["source_rows_dropped_by_reason"] = dict(sorted(read.dropped.items()))
    table = pd.DataFrame([j.record() for j in judgements], columns=list(JUDGEMENT_COLUMNS))
    judged = judged_table(pd.concat(ruled, ignore_index=True), dataset, seed, rs.item_format)
    metrics["judged"] = judged_counts(judged, dataset)
    return BuildResult(dataset, removed, refused, metrics, kb, book, table, judged)


JUDGED_COLUMNS = ("judge_keep", "judge", "judge_reason")
"""What ``judged.parquet`` adds to the item format's columns."""


def ruled_on(
    built: pd.DataFrame,
    kept: pd.DataFrame,
    checked_out: pd.DataFrame,
    judged_out: pd.DataFrame,
    judge_name: str,
) -> pd.DataFrame:
    """One language's variants the judge ruled on: the kept as kept, the rejected as built.

    The rule judge rules on every built item (its removals are ``checked_out``); the panel, when
    configured, on the items the rules kept (``judged_out``). A rejected item's text is the one
    the judge read: the built item's, before checks.
    """
    verdicts = []
    for frame, judge in ((checked_out, "rules"), (judged_out, judge_name)):
        if len(frame):
            why = frame.groupby("item_id")["reason"].agg(lambda r: "; ".join(sorted(set(r))))
            verdicts.append(
                pd.DataFrame({"item_id": why.index, "judge": judge, "judge_reason": why})
            )
    rejected = (
        pd.concat(verdicts, ignore_index=True).drop_duplicates("item_id")
        if verdicts
        else pd.DataFrame(columns=["item_id", "judge", "judge_reason"])
    )
    gone = built[built["item_id"].isin(set(rejected["item_id"]))]
    out = pd.concat([kept.assign(judge_keep=True), gone.assign(judge_keep=False)])
    out = out.merge(rejected, on="item_id", how="left")
    out["judge"] = out["judge"].fillna(judge_name).astype(str)
    out["judge_reason"] = out["judge_reason"].fillna("").astype(str)
    return out.reset_index(drop=True)


def judged_table(
    ruled: pd.DataFrame, dataset: pd.DataFrame, seed: int, item_format: str
) -> pd.DataFrame:
    """The ruled-on variants in the set's item format, with the judge's verdict.

    Published rows as published; the rest (rejected, or kept and dropped later for a missing
    language) finalized alike with the same seed.
    """
    verdicts = ruled[["item_id", *JUDGED_COLUMNS]]
    # a rejected variant's id may be published again as a translation (rebalance): not its text
    as_published = set(ruled.loc[ruled["judge_keep"], "item_id"]) & set(dataset["item_id"])
    published = dataset[dataset["item_id"].isin(as_published)]
    rest = ruled[~ruled["item_id"].isin(as_published)].drop(columns=list(JUDGED_COLUMNS))
    parts = [published] + ([finalize(rest, seed, item_format)] if len(rest) else [])
    laid = pd.concat(parts, ignore_index=True) if len(parts) > 1 else published
    out = laid.merge(verdicts, on="item_id", how="left", validate="one_to_one")
    return out.sort_values("item_id", kind="stable").reset_index(drop=True)


def judged_counts(judged: pd.DataFrame, dataset: pd.DataFrame) -> dict[str, int]:
    """Variants ruled on, kept, rejected; published items without a verdict.

    Those are translated sides (rebalance): one may carry the id of a variant the judge rejected,
    whose judged row keeps its own text.
    """
    return {
        "variants": len(judged),
        "kept": int(judged["judge_keep"].sum()),
        "rejected": int((~judged["judge_keep"]).sum()),
        "published_without_verdict": int(
            (~dataset["item_id"].isin(set(judged.loc[judged["judge_keep"], "item_id"]))).sum()
        ),
    }


def card_metrics(
    rs: RegionSet,
    dataset: pd.DataFrame,
    removed: pd.DataFrame,
    refused: pd.DataFrame,
    n_sources: int,
    seed: int,
) -> dict[str, Any]:
    """Kept/removed per clue type with reasons, refused candidates, types not generated."""
    per_type: dict[str, Any] = {}
    for clue_type in rs.clue_types:
        gone = removed[removed["clue_type"] == clue_type]
        kept = dataset[dataset["clue_type"] == clue_type] if len(dataset) else dataset
        reasons = gone.drop_duplicates(["item_id", "reason"])["reason"].value_counts()
        cand = refused[refused["clue_type"] == clue_type]
        per_type[clue_type] = {
            "attempted": n_sources,
            "kept": len(kept),
            "removed": int(gone["item_id"].nunique()),
            "removed_by_reason": {str(k): int(v) for k, v in sorted(reasons.items())},
            "regions_with_a_clue": int(kept["region"].nunique()) if len(kept) else 0,
            "candidates_refused_by_reason": {
                str(k): int(v) for k, v in cand.groupby("reason")["candidates"].sum().items()
            },
            "with_coverage_words": int(
                sum("no_figure" in json.loads(e) for e in kept.get("clue_evidence", []))
            ),
        }
    words = dataset["question"].str.split().str.len() if len(dataset) else pd.Series(dtype=int)
    lost: Counter[str] = Counter()
    repaired: Counter[str] = Counter()
    for record in dataset.get("replaced", []):
        terms = json.loads(record)
        lost.update({t["kind"] for t in terms})  # items, not occurrences
        repaired.update({r for t in terms for r in t.get("repair", "").split(", ") if r})
    framed: Counter[str] = Counter()
    for record in dataset.get("frame_terms", []):
        framed.update(set(json.loads(record)))  # items keeping each frame term
    return {
        "region_set": rs.name,
        "languages": list(rs.languages),
        "seed": seed,
        "source_questions": n_sources,
        "items": len(dataset),
        "regions": int(dataset["region"].nunique()) if len(dataset) else 0,
        "by_clue_type": per_type,
        "not_generated": dict(rs.not_generated),
        "items_with_terms_scrubbed_by_kind": dict(sorted(lost.items())),
        "items_with_replacements_fitted_by_rule": dict(sorted(repaired.items())),
        "items_keeping_a_frame_term": dict(sorted(framed.items())),
        "question_words_mean": round(float(words.mean()), 2) if len(words) else None,
        "item_format": rs.item_format,
        "answer_positions": (
            answer_position_counts(dataset)
            if rs.item_format == "case" and len(dataset)
            else gold_positions(dataset)
            if len(dataset)
            else {}
        ),
        "regions_without_items": without_items(dataset, removed),
        "coverage": coverage(rs, dataset),
    }


def without_items(dataset: pd.DataFrame, removed: pd.DataFrame) -> dict[str, str]:
    """Every source region that got no item, with the reasons its attempts were removed."""
    have = set(dataset["region"]) if len(dataset) else set()
    out = {}
    for region, gone in removed[~removed["region"].isin(have)].groupby("region", sort=True):
        reasons = gone.drop_duplicates(["item_id", "reason"])["reason"].value_counts()
        out[str(region)] = "; ".join(f"{k}: {v}" for k, v in sorted(reasons.items()))
    return out


def coverage(rs: RegionSet, dataset: pd.DataFrame) -> dict[str, Any]:
    """The set's declared coverage bar against what the build gives (empty: none declared)."""
    if not rs.coverage:
        return {}
    shares = dataset["clue_type"].value_counts(normalize=True).to_dict() if len(dataset) else {}
    by_type = {t: round(float(shares.get(t, 0.0)), 4) for t in rs.clue_types}
    items, regions = len(dataset), int(dataset["region"].nunique()) if len(dataset) else 0
    bar = rs.coverage
    checks = {
        "items": items >= bar.get("min_items", 0),
        "regions": regions >= bar.get("min_regions", 0),
        "clue_type_shares": all(v >= bar.get("min_type_share", 0.0) for v in by_type.values()),
    }
    return {
        "bar": {k: int(v) if float(v).is_integer() else v for k, v in bar.items()},
        "items": items, "regions": regions, "type_shares": by_type,
        "met": checks, "all_met": all(checks.values()),
    }  # fmt: skip


def card_markdown(metrics: dict[str, Any]) -> str:
    """The dataset card: what was built, what was removed and why, what was not generated."""
    lines = [
        f"# Two-hop dataset card: region set `{metrics['region_set']}`",
        "",
        f"{metrics['items']} items from {metrics['source_questions']} source questions "
        f"({', '.join(metrics['languages'])}), {metrics['regions']} regions; "
        + (
            f"options shuffled with seed {metrics['seed']}"
            if metrics.get("item_format", "case") == "case"
            else f"gold positions assigned with seed {metrics['seed']}, one permutation per pair"
        )
        + f" (gold positions {metrics['answer_positions']}).",
        "",
        "| clue type | attempted | kept | removed | removed by reason | candidate clues refused |",
        "|---|---|---|---|---|---|",
    ]
    for clue_type, c in metrics["by_clue_type"].items():
        reasons = "; ".join(f"{k}: {v}" for k, v in c["removed_by_reason"].items()) or "—"
        cands = "; ".join(f"{k}: {v}" for k, v in c["candidates_refused_by_reason"].items()) or "—"
        counts = f"{c['attempted']} | {c['kept']} | {c['removed']}"
        lines.append(f"| {clue_type} | {counts} | {reasons} | {cands} |")
    scrubbed = metrics.get("items_with_terms_scrubbed_by_kind") or {}
    lines += ["", "**Items whose text lost a term that points at their region**, by kind: "
              + (", ".join(f"{k} {v}" for k, v in scrubbed.items()) or "none") + "."]  # fmt: skip
    fitted = metrics.get("items_with_replacements_fitted_by_rule") or {}
    lines += ["", "**Items whose replacement was fitted to its slot** (English), by rule: "
              + (", ".join(f"{k} {v}" for k, v in fitted.items()) or "none") + "."]  # fmt: skip
    if cov := metrics.get("coverage"):
        verdict = (
            "met"
            if cov["all_met"]
            else "NOT met: " + ", ".join(k for k, ok in cov["met"].items() if not ok)
        )
        shares = ", ".join(f"{k} {v:.0%}" for k, v in cov["type_shares"].items())
        lines += ["", f"**Coverage bar** {cov['bar']}: {cov['items']} items, {cov['regions']} "
                  f"regions, clue types {shares}: {verdict}."]  # fmt: skip
    if missing := metrics.get("regions_without_items"):
        lines += ["", "**Source regions without an item**, with the reasons:", ""]
        lines += [f"- {region}: {why}" for region, why in missing.items()]
    if dropped := metrics.get("source_rows_dropped_by_reason"):
        lines += ["", "**Source rows not used**, by reason: "
                  + "; ".join(f"{k}: {v}" for k, v in dropped.items()) + "."]  # fmt: skip
    if (models := metrics.get("models")) and (balance := metrics.get("rebalance")):
        lines += [
            "", f"**Model steps**: clues by {models['generator']}, judge {models['judge']}; pairs "
            f"missing a language {balance['incomplete_pairs']}, translated "
            f"{balance['translated']}, items dropped {balance['dropped_items']}.",
        ]  # fmt: skip
    lines += ["", "**Clue types not generated** (no offline proof of uniqueness):", ""]
    lines += [f"- {k}: {v}" for k, v in metrics["not_generated"].items()] or ["- none"]
    lines += [
        "",
        "Every kept clue holds for exactly its region over the whole universe (re-checked from its "
        "stored evidence); a clue ending in the coverage words leaves out the regions the source "
        "gives no figure for, and its evidence lists them.",
        "",
    ]
    return "\n".join(lines)
