"""Rebalance: every (source, clue type) pair in every language of the set (design §1 step 7).

Earlier steps remove items one language at a time, and a source may be written in one language
only, so a pair can lack a language. With the LLM generator the missing side is translated from
a side that survived (clue, background, question and the six options, in one reply); the
translation is scrubbed with the target language's terms and goes through the rule judge again,
so a translation that names its region is removed like any item. Without a translator (offline:
``generator.kind: template``) nothing can be translated and the pair's other sides are dropped,
each with the reason and the earlier removals that caused it. Every translation and every drop
is counted in the card.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.llm.store import StoreLocation
from cultureqa.mocqa_shared.models import load_prompt
from cultureqa.regions.build import ITEM_COLUMNS, REMOVED_COLUMNS, item_text
from cultureqa.regions.config import RegionSet
from cultureqa.regions.generation.tables import Knowledge
from cultureqa.regions.judges.panel import LETTERS, format_options, language_name
from cultureqa.regions.llm.ask import ask

TRANSLATE_SLOTS = (
    "noun", "source_language", "target_language", "clue", "background", "question", "options",
)  # fmt: skip
OFFLINE_REASON = "counterpart language missing (no translator: generator is template)"
FAILED_REASON = "translation of the missing side failed"

Translation = Mapping[str, Any]
"""``clue``, ``context``, ``question``, ``options`` (the source's six) in the target language."""
Translator = Callable[[pd.DataFrame, Sequence[str]], list[Translation | None]]
"""(source items, target language per item) → the translation per item, or None if unusable."""
Recheck = Callable[[pd.DataFrame, str], tuple[pd.DataFrame, pd.DataFrame]]
"""(items in one language, the language) → (kept, removal records): the rule judge."""


@dataclass(frozen=True)
class Rebalanced:
    """Complete pairs, the removal records of this step, and its counts."""

    items: pd.DataFrame
    removed: pd.DataFrame
    counts: Mapping[str, int]


def pair_key(frame: pd.DataFrame) -> pd.Series:
    """``source_id.clue_type``: one pair, one item per language."""
    return frame["source_id"].astype(str) + "." + frame["clue_type"].astype(str)


def _why_missing(pair: str, missing: Sequence[str], earlier: pd.DataFrame) -> str:
    hits = earlier[(pair_key(earlier) == pair) & earlier["language"].isin(missing)]
    if hits.empty:
        return f"the source has no {', '.join(missing)} version"
    return "; ".join(f"{r.language} removed at {r.stage}: {r.reason}" for r in hits.itertuples())


def _translated(
    source: Mapping[str, Any], target: str, text: Translation, rs: RegionSet, kb: Knowledge
) -> dict[str, Any]:
    region = kb.regions[str(source["region"])]
    evidence = json.loads(str(source["clue_evidence"]))
    evidence["translated_from"] = source["language"]
    return {
        **{c: source[c] for c in ("source_id", "region", "clue_type", "topic", "clue_key")},
        "item_id": f"{source['source_id']}.{source['clue_type']}.{target}",
        "pair_id": f"{source['source_id']}.{source['clue_type']}",
        "language": target,
        "answer": source["answer"],
        **item_text(rs, region, target, text),
        "clue_evidence": json.dumps(evidence, sort_keys=True, ensure_ascii=False),
    }


def _translate_pairs(
    items: pd.DataFrame,
    missing: Mapping[str, list[str]],
    rs: RegionSet,
    kbs: Mapping[str, Knowledge],
    translator: Translator,
    recheck: Recheck,
) -> tuple[list[pd.DataFrame], list[pd.DataFrame], dict[str, str]]:
    """(translated items the rule judge kept, its removals, why each failed pair failed)."""
    sources = items[pair_key(items).isin(missing)].sort_values("language")
    sources = sources.drop_duplicates(["source_id", "clue_type"])  # one side to translate from
    jobs = [(s, t) for s in sources.to_dict("records") for t in missing[_key(s)]]
    done = translator(
        pd.DataFrame([s for s, _ in jobs], columns=items.columns), [t for _, t in jobs]
    )
    rows, failed = [], {}
    for (source, target), text in zip(jobs, done, strict=True):
        if text is None:
            failed[_key(source)] = f"{target}: no usable translation"
        else:
            rows.append(_translated(source, target, text, rs, kbs[target]))
    added, removed = [], []
    for lang in rs.languages:
        mine = pd.DataFrame([r for r in rows if r["language"] == lang], columns=list(ITEM_COLUMNS))
        if len(mine):
            kept, gone = recheck(mine, lang)
            added.append(kept)
            removed.append(gone.assign(stage="rebalance"))
            for key in pair_key(gone).unique():
                failed.setdefault(key, "the translation failed the rule judge")
    return added, removed, failed


def rebalance(
    items: pd.DataFrame,
    earlier: pd.DataFrame,
    rs: RegionSet,
    kbs: Mapping[str, Knowledge],
    translator: Translator | None,
    recheck: Recheck,
) -> Rebalanced:
    """Translate (or drop) every pair's missing languages; re-judge what was translated."""
    want = set(rs.languages)
    present = items.groupby(pair_key(items))["language"].agg(set)
    missing = {str(p): sorted(want - s) for p, s in present.items() if want - s}
    added: list[pd.DataFrame] = []
    removed: list[pd.DataFrame] = []
    failed: dict[str, str] = {}
    if translator is not None and missing:
        added, removed, failed = _translate_pairs(items, missing, rs, kbs, translator, recheck)
    complete = pd.concat([items, *added], ignore_index=True)
    keys = pair_key(complete)
    still = complete.groupby(keys)["language"].agg(set)
    drop = keys.isin({p for p, s in still.items() if want - s})
    reason = OFFLINE_REASON if translator is None else FAILED_REASON
    records = [
        {
            **{c: r[c] for c in REMOVED_COLUMNS if c in r},
            "stage": "rebalance", "reason": reason,
            "detail": failed.get(k) or _why_missing(k, missing.get(k, []), earlier),
        }
        for r, k in zip(complete[drop].to_dict("records"), keys[drop], strict=True)
    ]  # fmt: skip
    removed.append(pd.DataFrame(records, columns=list(REMOVED_COLUMNS)))
    counts = {
        "incomplete_pairs": len(missing),
        "translated": sum(len(a) for a in added),
        "dropped_items": int(drop.sum()),
    }
    out = complete[~drop].sort_values(["source_id", "clue_type", "language"])
    return Rebalanced(out.reset_index(drop=True), pd.concat(removed, ignore_index=True), counts)


def _key(row: Mapping[str, Any]) -> str:
    return f"{row['source_id']}.{row['clue_type']}"


TRANSLATE_LABELS = ("CLUE", "BACKGROUND", "QUESTION", *(f"OPTION_{x}" for x in LETTERS))


def llm_translator(
    model: Mapping[str, Any], prompt_path: Path, noun: str, store_path: StoreLocation
) -> Translator:
    """Translation by the generator model: one request per missing side, every field labelled."""

    def translate(rows: pd.DataFrame, targets: Sequence[str]) -> list[Translation | None]:
        prompt = load_prompt(prompt_path, TRANSLATE_SLOTS)
        requests = [
            prompt.request(
                model,
                noun=noun,
                source_language=language_name(str(r["language"])),
                target_language=language_name(t),
                clue=r["clue"],
                background=r["background_none"],
                question=r["question"],
                options=format_options([str(o) for o in r["options"]]),
            )
            for r, t in zip(rows.to_dict("records"), targets, strict=True)
        ]
        out: list[Translation | None] = []
        for answer in ask("translator", model, requests, store_path):
            fields = {k: answer.reply.get(k) for k in TRANSLATE_LABELS} if answer.reply else {}
            if not fields or not all(fields.values()):
                out.append(None)  # a missing field is never guessed: the pair is dropped
                continue
            out.append(
                {
                    "clue": fields["CLUE"].rstrip("."), "context": fields["BACKGROUND"],
                    "question": fields["QUESTION"],
                    "options": [fields[f"OPTION_{x}"] for x in LETTERS],
                }
            )  # fmt: skip
        return out

    return translate
