"""Two-hop items from single-hop source questions and verified clues (docs/region-sets.md §3).

Each source question × each clue type the set declares: the region's own words are replaced in
the context, question and options (:mod:`.scrub`), the clue sentence opens what the model reads,
and the item carries the clue's evidence. Every attempt that yields no item is a removal record
with its reason; nothing is dropped silently.

One path for every item format; the format decides only the layout of the text fields:

* ``case``: the clue sentence opens the scenario (``narrative``), the source question follows;
* ``statement``: the source's context is a sentence stem; the question is the clue sentence, then
  the set's ``statement`` frame quoting the stem ("… which option correctly completes the
  following statement? "{stem} …""), frames taken in turn by the source's index in its region.

Options stay a list in the source's order with the answer's letter; finalize places them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from cultureqa.regions.config import RegionSet
from cultureqa.regions.generation.clues import ClueBook
from cultureqa.regions.generation.tables import Knowledge, Region
from cultureqa.regions.scrub import frame_terms, scrub_all

ITEM_COLUMNS = (
    "item_id", "pair_id", "source_id", "region", "language", "clue_type", "topic", "clue",
    "clue_key", "narrative", "background_none", "background_oracle", "question", "options",
    "answer", "clue_evidence", "replaced", "frame_terms", "template_id",
)  # fmt: skip
REMOVED_COLUMNS = (
    "item_id",
    "source_id",
    "region",
    "language",
    "clue_type",
    "stage",
    "reason",
    "detail",
)


@dataclass
class Built:
    """Items, removal records, and counts."""

    items: pd.DataFrame
    removed: pd.DataFrame


def removal(
    row: Mapping[str, Any], clue_type: str, stage: str, reason: str, detail: str = ""
) -> dict[str, Any]:
    """One removal record."""
    return {
        "item_id": f"{row['source_id']}.{clue_type}.{row['language']}",
        "source_id": row["source_id"], "region": row["region"], "language": row["language"],
        "clue_type": clue_type, "stage": stage, "reason": reason, "detail": detail,
    }  # fmt: skip


def _rotation(sources: pd.DataFrame) -> pd.Series:
    """Each source's index among its region's sources: which of the region's clues it gets."""
    ordered = sources.sort_values(["region", "source_id"])
    return ordered.groupby(["region", "language"]).cumcount().reindex(sources.index)


def stem(context: str) -> str:
    """A sentence stem ready to quote: one line, double quotes made single, no trailing ellipsis."""
    return " ".join(context.replace('"', "'").split()).rstrip(" .…")


def _layout(
    fmt: str, template: Mapping[str, Any], clue_sentence: str, oracle: str,
    context: str, question: str, turn: int, noun: str,
) -> dict[str, str]:  # fmt: skip
    """The text fields of one item in its format (what each hop condition reads)."""
    if fmt == "case":
        return {
            "narrative": f"{clue_sentence} {context}", "background_none": context,
            "background_oracle": f"{oracle} {context}", "question": question, "template_id": "",
        }  # fmt: skip
    frames = template["statement"]
    frames = [frames] if isinstance(frames, str) else list(frames)
    k = turn % len(frames)
    framed = str(frames[k]).format(stem=stem(context), noun=noun)
    return {
        "narrative": clue_sentence, "background_none": "", "background_oracle": oracle,
        "question": f"{clue_sentence} {framed}", "template_id": f"statement.{k}",
    }  # fmt: skip


def item_text(
    rs: RegionSet, region: Region, lang: str, text: Mapping[str, Any], turn: int = 0
) -> dict[str, Any]:
    """An item's words in ``lang``, laid out in the set's format; the clue framed.

    ``text``: ``clue``, ``context``, ``question`` and ``options`` (a list in the source's order),
    as the source (or a translation) wrote them; every term pointing at ``region`` is replaced.
    ``turn`` picks the ``statement`` frame (frames are taken in turn).
    """
    fields = [str(text["context"]), str(text["question"]), *(str(o) for o in text["options"])]
    clean, replaced = scrub_all(fields, region, lang)
    template = rs.templates[lang]
    clue_sentence = template["frame"].format(clue=text["clue"])
    oracle = template["oracle"].format(name=region.names[lang])
    laid = _layout(
        rs.item_format, template, clue_sentence, oracle, clean[0], clean[1], turn, rs.noun[lang]
    )
    return {
        "clue": text["clue"], **laid, "options": clean[2:],
        "replaced": json.dumps(replaced, ensure_ascii=False),
        "frame_terms": json.dumps(frame_terms(clean, region, lang)),
    }  # fmt: skip


def build_items(sources: pd.DataFrame, book: ClueBook, rs: RegionSet, kb: Knowledge) -> Built:
    """Every (source, clue type) attempt: an item, or a removal saying why not."""
    items, removed = [], []
    rotation = _rotation(sources)
    for index, row in sources.sort_values(["source_id", "language"]).iterrows():
        lang = str(row["language"])
        region = kb.regions[str(row["region"])]
        for clue_type in rs.clue_types:
            clues = book.get(region.id, clue_type)
            if not clues:
                removed.append(removal(row, clue_type, "build", f"no verified {clue_type} clue"))
                continue
            turn = int(rotation[index])
            clue = clues[turn % len(clues)]
            text = {
                "clue": clue.text[lang], "context": str(row["context"]),
                "question": str(row["question"]), "options": list(row["options"]),
            }  # fmt: skip
            items.append(
                {
                    "item_id": f"{row['source_id']}.{clue_type}.{lang}",
                    "pair_id": f"{row['source_id']}.{clue_type}",
                    "source_id": row["source_id"], "region": region.id, "language": lang,
                    "clue_type": clue_type, "topic": row["topic"], "clue_key": clue.key,
                    **item_text(rs, region, lang, text, turn), "answer": row["answer"],
                    "clue_evidence": json.dumps(clue.evidence, sort_keys=True, ensure_ascii=False),
                }
            )  # fmt: skip
    return Built(
        pd.DataFrame(items, columns=list(ITEM_COLUMNS)),
        pd.DataFrame(removed, columns=list(REMOVED_COLUMNS)),
    )
