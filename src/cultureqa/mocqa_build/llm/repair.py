"""LLM steps after generation, all through the response store.

Rewrite leaks (verify phase 1), review structure (phase 2), translate a missing language
(rebalance).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.llm.store import StoreLocation
from cultureqa.mocqa_build.judge import LANGUAGE_NAMES, format_options
from cultureqa.mocqa_build.verify import Repairer, Reviewer
from cultureqa.mocqa_shared.models import load_prompt
from cultureqa.mocqa_shared.schema import as_options
from cultureqa.regions.llm.ask import ask
from cultureqa.regions.llm.parse import parse_labelled

REWRITE_SLOTS = ("question", "issues", "options", "language")
STRUCTURE_SLOTS = ("question", "options", "answer", "language")
TRANSLATE_SLOTS = ("question", "source_language", "target_language")


@dataclass(frozen=True)
class LlmSteps:
    """The generator model and prompt folder (``generator.model``, ``generator.prompts_dir``)."""

    model: Mapping[str, Any]
    prompts_dir: Path
    store_path: StoreLocation

    def _ask(
        self, prompt_name: str, slots: tuple[str, ...], fills: list[dict[str, Any]]
    ) -> list[str | None]:
        prompt = load_prompt(self.prompts_dir / prompt_name, slots)
        requests = [prompt.request(self.model, **f) for f in fills]
        answers = ask("steps", self.model, requests, self.store_path)
        return [a.text if a.reply is not None else None for a in answers]


def llm_repairer(steps: LlmSteps) -> Repairer:
    """Rewrite questions with issues using only indirect references (verify phase 1)."""

    def repair(rows: pd.DataFrame, issues: Mapping[str, list[str]], attempt: int) -> pd.DataFrame:
        todo = rows[rows["variant_id"].map(lambda v: bool(issues.get(v)))]
        fills = [
            {
                "question": r["question"],
                "issues": "; ".join(issues[r["variant_id"]]),
                "options": format_options(as_options(r["options"])),
                "language": LANGUAGE_NAMES.get(r["language"], r["language"]),
            }
            for r in todo.to_dict("records")
        ]
        replies = steps._ask("verify/rewrite.en.txt", REWRITE_SLOTS, fills) if fills else []
        out = []
        for row, reply in zip(todo.to_dict("records"), replies, strict=True):
            rewritten = parse_labelled(reply or "").get("QUESTION")
            if rewritten:
                out.append({**row, "question": rewritten})
        return pd.DataFrame(out, columns=rows.columns)

    return repair


def llm_reviewer(steps: LlmSteps) -> Reviewer:
    """Two-step structure review by the generator model: OK, a minor revision, or major."""

    def review(rows: pd.DataFrame) -> Mapping[str, str]:
        records = rows.to_dict("records")
        fills = [
            {
                "question": r["question"],
                "options": format_options(as_options(r["options"])),
                "answer": r["answer"],
                "language": LANGUAGE_NAMES.get(r["language"], r["language"]),
            }
            for r in records
        ]
        replies = steps._ask("verify/structure.en.txt", STRUCTURE_SLOTS, fills)
        return {r["variant_id"]: reply or "" for r, reply in zip(records, replies, strict=True)}

    return review


def translate(
    steps: LlmSteps, rows: pd.DataFrame, targets: list[str]
) -> list[tuple[str, str] | None]:
    """(question, clue) of each row in its target language, or None when unusable."""
    fills = [
        {
            "question": r["question"],
            "source_language": LANGUAGE_NAMES.get(r["language"], r["language"]),
            "target_language": LANGUAGE_NAMES.get(t, t),
        }
        for r, t in zip(rows.to_dict("records"), targets, strict=True)
    ]
    replies = steps._ask("translate.en.txt", TRANSLATE_SLOTS, fills) if fills else []
    out: list[tuple[str, str] | None] = []
    for reply in replies:
        parsed = parse_labelled(reply or "")
        question = parsed.get("QUESTION")
        out.append((question, parsed.get("CLUE")) if question else None)
    return out
