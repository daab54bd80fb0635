"""Dataset card (markdown + JSON): what was built, from what, and what each stage removed.

Researchers reading a benchmark need the funnel as much as the final counts: how many candidate
questions each stage dropped and why, and how the survivors spread over clue types, languages,
provinces and topics (DESIGN.md §5.6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

STAGE_ORDER = ("ingest", "expand", "judge", "verify", "rebalance", "finalize")


def _counts(frame: pd.DataFrame, columns: Sequence[str]) -> dict[str, int]:
    grouped = frame.groupby(list(columns)).size()
    return {
        ".".join(str(k) for k in (key if isinstance(key, tuple) else (key,))): int(n)
        for key, n in grouped.items()
    }


def words_table(dataset: pd.DataFrame) -> pd.DataFrame:
    """Words per question by clue type × language (mean, median, min, max)."""
    stats = dataset.groupby(["clue_type", "language"])["n_words"].agg(
        ["mean", "median", "min", "max"]
    )
    return stats.round(1).reset_index()


def removal_breakdown(removed: pd.DataFrame) -> list[dict[str, Any]]:
    """Removals counted by stage × reason × clue type × language (clue type from the pair id)."""
    if removed.empty:
        return []
    frame = removed.assign(clue_type=removed["pair_id"].astype(str).str.rsplit(".", n=1).str[-1])
    keys = ["stage", "reason", "clue_type", "language"]
    counts = frame.groupby(keys).size().rename("removed").reset_index()
    return [{str(k): v for k, v in row.items()} for row in counts.to_dict(orient="records")]


def removal_examples(
    removed: pd.DataFrame, variants: pd.DataFrame | None, per_reason: int = 2
) -> list[dict[str, str]]:
    """A few removed items per (stage, reason), with their question text where it is known."""
    if removed.empty:
        return []
    questions = (
        dict(zip(variants["variant_id"], variants["question"], strict=True))
        if variants is not None
        else {}
    )
    out = []
    for _, group in removed.groupby(["stage", "reason"], sort=True):
        for row in group.sort_values("variant_id").head(per_reason).itertuples():
            out.append(
                {
                    "stage": str(row.stage),
                    "reason": str(row.reason),
                    "variant_id": str(row.variant_id),
                    "detail": str(row.detail)[:300],
                    "question": str(questions.get(row.variant_id, ""))[:400],
                }
            )
    return out


def repairs(stages: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Items kept after a repair, per step: statement rewrites (expand), verify repairs."""
    expand, verify = stages.get("expand", {}), stages.get("verify", {})
    return {
        "expand: statements rewritten (own-province terms → local/setempat)": dict(
            expand.get("statements_rewritten", {})
        ),
        "verify: leaks/copies repaired": verify.get("repaired", 0),
        "verify: repair attempts": verify.get("repair_attempts", 0),
        "verify: minor revisions": verify.get("minor_revisions", 0),
        "rebalance: translated": stages.get("rebalance", {}).get("translated", 0),
    }


def refused_facts(refused: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Clue facts refused before any item could use them, grouped by reason.

    One entry per reason with the count and the facts ("Papua: commonsense:dishes:Papeda"),
    so a reviewer sees which clues were refused as shared, unknown or too close to call.
    """
    if refused is None or refused.empty:
        return []  # the caller records None when there is no table
    out = []
    for reason, group in refused.groupby("reason", sort=True):
        facts = [f"{r.province}: {r.fact_key}" for r in group.itertuples()]
        out.append({"reason": str(reason), "facts_refused": len(group), "facts": facts})
    return out


def card_json(
    dataset: pd.DataFrame,
    stages: Mapping[str, Mapping[str, Any]],
    info: Mapping[str, Any],
    removed: pd.DataFrame | None = None,
    variants: pd.DataFrame | None = None,
    refused: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """Machine-readable card: stage funnel, counts by every slice, words, gold positions.

    ``removed`` (every stage's removal records) and ``variants`` (the expand output, for the
    question texts of removed items) add the removal breakdown and examples; ``refused`` (the
    expand stage's refused clue facts) adds the refusals by reason.
    """
    full = ["clue_type", "language", "province", "topic"]
    removed = removed if removed is not None else pd.DataFrame(columns=["stage", "pair_id"])
    return {
        **info,
        "clue_facts_refused": None if refused is None else refused_facts(refused),
        "removed_by_stage_reason_clue_type_language": removal_breakdown(removed),
        "removed_examples": removal_examples(removed, variants),
        "repairs": repairs(stages),
        "rows": len(dataset),
        "pairs": int(dataset["pair_id"].nunique()) if len(dataset) else 0,
        "source_items": int(dataset["source_id"].nunique()) if len(dataset) else 0,
        "stages": [dict(stages[s]) for s in STAGE_ORDER if s in stages],
        "counts": {
            "clue_type_x_language": _counts(dataset, ["clue_type", "language"]),
            "province": _counts(dataset, ["province"]),
            "topic": _counts(dataset, ["topic"]),
            "clue_type_x_language_x_province_x_topic": _counts(dataset, full),
        },
        "words_per_question": words_table(dataset).to_dict(orient="records"),
        "gold_positions": _counts(dataset, ["answer"]),
    }


def _md_table(frame: pd.DataFrame) -> str:
    header = "| " + " | ".join(str(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *body])


def _funnel(stages: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for s in stages:
        reasons = "; ".join(f"{r} ({n})" for r, n in s.get("removed_by_reason", {}).items()) or "—"
        rows.append(
            {
                "stage": s["stage"],
                "in": s.get("input", ""),
                "kept": s.get("kept", ""),
                "removed": s.get("removed", ""),
                "why removed": reasons,
            }
        )
    return _md_table(pd.DataFrame(rows)) if rows else "(no stage metrics found)"


def _ci(row: Mapping[str, Any], name: str) -> str:
    """``0.62 [0.50, 0.73]`` from a value and its bounds (``—`` when undefined)."""
    value, low, high = row.get(name), row.get(f"{name}_low"), row.get(f"{name}_high")
    if value is None or low is None or high is None:
        return "—"
    return f"{value:.2f} [{low:.2f}, {high:.2f}]"


def _p(value: Any) -> str:
    return "—" if value is None else f"{value:.3g}"


def _p_holm(row: Mapping[str, Any], key: str) -> str:
    """``0.012 (Holm 0.41): inconclusive, n≈380``: McNemar p, its adjustment, the reading."""
    raw, adjusted = row.get(f"p_{key}"), row.get(f"p_{key}_holm")
    text = _p(raw) if adjusted is None else f"{_p(raw)} (Holm {_p(adjusted)})"
    if (reading := row.get(f"reading_{key}")) is not None:
        needed = row.get(f"n_to_decide_{key}")
        text += f": {reading}" + (f", n≈{needed}" if needed is not None else "")
    return text


def hop_markdown_table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The card's hop table: accuracies and differences with their 95% intervals, readings."""
    rows = [
        {
            "language": r["language"],
            "clue type": r["clue_type"],
            "n": r["n"],
            "none": _ci(r, "none"),
            "clue": _ci(r, "clue"),
            "oracle": _ci(r, "oracle"),
            "first hop": _ci(r, "first_hop"),
            "clue − none": _ci(r, "clue_minus_none"),
            "oracle − none": _ci(r, "oracle_minus_none"),
            "gain": _ci(r, "gain"),
            "p clue/none": _p_holm(r, "clue_vs_none"),
            "p oracle/none": _p_holm(r, "oracle_vs_none"),
            "p clue/oracle": _p_holm(r, "clue_vs_oracle"),
            "reading": r["reading"],
        }
        for r in records
    ]
    return pd.DataFrame(rows)


def _hop_section(hop: Mapping[str, Any] | None) -> list[str]:
    if not hop:
        return ["(the hop-necessity stage has not run: `dvc repro mocqa_hop`)"]
    if "readings" not in hop:
        return ["(hop.json predates the none/clue/oracle diagnostic: `dvc repro mocqa_hop`)"]
    table = hop_markdown_table(list(hop.get("table", [])))
    accuracy = ", ".join(f"{k} {v}" for k, v in dict(hop.get("accuracy", {})).items())
    legend = [f"- **{k}**: {v}" for k, v in dict(hop["readings"]).items()]
    chance = (
        "**This model is a chance baseline: it shows the plumbing only and cannot read the "
        "table** (configure a real model, `mocqa.hop.model`, e.g. `-S mocqa.hop.model=model`)."
        if hop.get("chance_model")
        else str(
            hop.get("rule")
            or "(hop.json predates the Holm-corrected readings: `dvc repro mocqa_hop`)"
        )
        + " Intervals: paired bootstrap over items, "
        f"{dict(hop.get('bootstrap', {})).get('resamples')} resamples."
    )
    prompts = dict(hop.get("prompts") or {})
    told = (
        "Each condition has its own prompt: " + ", ".join(f"`{k}` {v}" for k, v in prompts.items())
        if prompts
        else "(one prompt for every condition: hop.json predates the per-condition prompts)"
    )
    return [
        f"Model `{hop.get('model')}` ({hop.get('roster_entry')}, {hop.get('prompt')}), "
        f"{hop.get('paired_items')} items answered under every condition; accuracy: {accuracy}. "
        "Conditions: `none` = statement only (clue removed), `clue` = the item, `oracle` = the "
        "clue replaced by the province's name; chance is each item's own (1 / its options). "
        "gain = (clue − none) / "
        "(oracle − none): the share of what naming the province is worth that the clue gives.",
        told + ".",
        chance,
        f"Dropped (clue not found in the question): {hop.get('dropped_clue_not_found', 0)}.",
        "",
        _md_table(table) if len(table) else "(no rows)",
        "",
        *legend,
    ]


def _plain(value: Any) -> str:
    """A count or a {label: count} mapping as reader-friendly text."""
    if isinstance(value, Mapping):
        return "; ".join(f"{k} {v}" for k, v in value.items()) or "0"
    return str(value)


def _refused_section(card: Mapping[str, Any]) -> list[str]:
    if card.get("clue_facts_refused") is None:
        return ["(not recorded: only the template generator refuses facts from the tables)"]
    groups = list(card["clue_facts_refused"])
    if not groups:
        return ["(no clue fact refused)"]
    table = pd.DataFrame(
        {
            "reason": [g["reason"] for g in groups],
            "facts": [g["facts_refused"] for g in groups],
            "which": ["; ".join(g["facts"]) for g in groups],
        }
    )
    return [
        "A clue fact is offered only if it belongs to its province alone among Indonesia's "
        "provinces (named facts: `data/knowledge/national/clue_facts.csv`; comparisons and "
        "intersections: the national table, decided by at least the configured margin). "
        "These candidate facts were refused before any item used them:",
        "",
        _md_table(table),
    ]


def _removal_sections(card: Mapping[str, Any]) -> list[str]:
    breakdown = pd.DataFrame(card.get("removed_by_stage_reason_clue_type_language", []))
    examples = pd.DataFrame(card.get("removed_examples", []))
    fixes = "\n".join(f"- {k}: {_plain(v)}" for k, v in dict(card.get("repairs", {})).items())
    return [
        "## Repaired and kept",
        "",
        fixes or "(none)",
        "",
        "## Removed by stage, reason, clue type and language",
        "",
        _md_table(breakdown) if len(breakdown) else "(nothing removed)",
        "",
        "## Examples of removed items",
        "",
        _md_table(examples) if len(examples) else "(nothing removed)",
    ]


def card_markdown(dataset: pd.DataFrame, card: Mapping[str, Any]) -> str:
    """Human-readable card with the funnel and the main cross-tables."""
    by_type = pd.crosstab(dataset["clue_type"], dataset["language"]).reset_index()
    by_province = pd.crosstab(dataset["province"], dataset["clue_type"]).reset_index()
    by_topic = pd.crosstab(dataset["topic"], dataset["clue_type"]).reset_index()
    parts = [
        f"# {card.get('name', 'ID-MoCQA')} — dataset card",
        "",
        str(card.get("description", "")),
        "",
        f"- rows: {card['rows']} ({card['pairs']} English/Indonesian pairs from "
        f"{card['source_items']} source items)",
        f"- generator: {card.get('generator')}; judge: {card.get('judge')}",
        f"- option shuffle seed: {card.get('seed')}; gold positions: {card['gold_positions']}",
        f"- source: {card.get('source')}",
        "",
        "## Stages (kept / removed and why)",
        "",
        _funnel(card["stages"]),
        "",
        "## Clue facts refused (not unique in all of Indonesia)",
        "",
        *_refused_section(card),
        "",
        *_removal_sections(card),
        "",
        "## Hop necessity (is the clue needed?)",
        "",
        *_hop_section(card.get("hop_necessity")),
        "",
        "## Clue type × language",
        "",
        _md_table(by_type),
        "",
        "## Province × clue type",
        "",
        _md_table(by_province),
        "",
        "## Topic × clue type",
        "",
        _md_table(by_topic),
        "",
        "## Words per question",
        "",
        _md_table(words_table(dataset)),
        "",
        "The full clue type × language × province × topic counts are in card.json.",
    ]
    return "\n".join(parts) + "\n"
