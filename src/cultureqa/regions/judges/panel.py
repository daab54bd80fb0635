"""The three-model judge panel with the paper's keep rule, over any two-hop items.

Each panel model scores every item on the eight criteria of :mod:`.judging` and names a category;
an item stays iff :func:`.judging.keep` accepts the verdicts (2 of 3 Acceptable, no Significant).
A malformed or empty reply and a failed call are recorded as such and count as neither. The rule
judge writes the same record (:mod:`.judge`), so the judgements table has one shape whichever
judge ran; the ID-MoCQA build asks this panel with its own slots. Calls go through the response
store: a rerun asks nothing already answered.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.evaluation.parsing import EMPTY, EMPTY_ERROR, is_empty_reply
from cultureqa.llm.store import StoreLocation
from cultureqa.mocqa_shared.models import load_prompt, run_models
from cultureqa.regions.judges.judging import Judgement, decide, parse_reply

LANGUAGE_NAMES = {"en": "English", "id": "Indonesian"}
"""Language codes as the prompts write them (a code without a name is written as the code)."""
LETTERS = "ABCDEF"
SIGNIFICANT_REASON = "a judge rated it Significant"
TOO_FEW_REASON = "too few judges rated it Acceptable"


def language_name(code: str) -> str:
    """The language's English name for a prompt (the code itself when none is declared)."""
    return LANGUAGE_NAMES.get(code, code)


def format_options(options: Sequence[str]) -> str:
    """Options as lettered lines, the way judges and annotators see them."""
    return "\n".join(f"{letter}. {text}" for letter, text in zip(LETTERS, options, strict=False))


@dataclass(frozen=True)
class PanelConfig:
    """``conf/judge/{rules,panel}.yaml``: the kind, the keep rule's bar, panel and prompt."""

    kind: str = "rules"
    min_acceptable: int = 1
    judges: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    prompt: Path | None = None

    @classmethod
    def from_params(cls, cfg: Mapping[str, Any], root: Path) -> PanelConfig:
        """Parse the ``judge`` params section; a panel needs judges and a prompt."""
        kind = str(cfg.get("kind"))
        if kind not in ("rules", "panel"):
            raise ValueError(f"judge.kind must be 'rules' or 'panel', got {kind!r}")
        if cfg.get("min_acceptable") is None:
            raise ValueError(
                "params: missing key 'judge.min_acceptable' that conf/ defines: run `make params`"
            )
        judges = {str(k): dict(v) for k, v in dict(cfg.get("judges") or {}).items()}
        if kind == "panel" and (not judges or not cfg.get("prompt")):
            raise ValueError("judge.kind=panel needs judge.judges and judge.prompt")
        prompt = root / str(cfg["prompt"]) if cfg.get("prompt") else None
        return cls(kind, int(cfg["min_acceptable"]), judges, prompt)


def ask_panel(
    ids: Sequence[str],
    fills: Sequence[Mapping[str, Any]],
    config: PanelConfig,
    slots: tuple[str, ...],
    store_path: StoreLocation,
) -> list[Judgement]:
    """Ask every panel model about every item (prompt ``config.prompt`` filled with ``fills``)."""
    assert config.prompt is not None, "a panel has a prompt (PanelConfig.from_params)"
    prompt = load_prompt(config.prompt, slots)
    jobs = {
        name: (model_cfg, [prompt.request(model_cfg, **fill) for fill in fills])
        for name, model_cfg in config.judges.items()
    }
    out = []
    for name, responses in run_models(jobs, store_path).items():
        for vid, response in zip(ids, responses, strict=True):
            if response.status != "ok" or response.text is None:
                out.append(Judgement(vid, name, status="error", error=response.error or "no reply"))
            elif is_empty_reply(response.status, response.text):  # neither valid nor an error
                out.append(Judgement(vid, name, status=EMPTY, error=EMPTY_ERROR))
            else:
                out.append(parse_reply(vid, name, response.text))
    return out


def decisions(judgements: Sequence[Judgement], min_acceptable: int) -> pd.DataFrame:
    """Per judged id: the vote counts and the keep rule's verdict (``keep``)."""
    by_id: dict[str, list[Judgement]] = {}
    for j in judgements:
        by_id.setdefault(j.variant_id, []).append(j)
    rows = [{"variant_id": v, **decide(js, min_acceptable)} for v, js in by_id.items()]
    columns = ["variant_id", "n_judges", "n_valid", "n_acceptable", "n_significant", "keep"]
    return pd.DataFrame(rows, columns=columns)


def removal_reason(row: Mapping[str, Any]) -> str:
    """Why the keep rule removed a judged item."""
    return SIGNIFICANT_REASON if row["n_significant"] > 0 else TOO_FEW_REASON


def removal_detail(row: Mapping[str, Any], why: Mapping[str, str]) -> str:
    """The votes behind a removal, then each dissenting judge's rationale."""
    votes = (
        f"{row['n_acceptable']}/{row['n_judges']} acceptable, {row['n_significant']} significant"
    )
    rationale = why.get(str(row["variant_id"]))
    return f"{votes}; {rationale}" if rationale else votes


def failures(judgements: Sequence[Judgement]) -> dict[str, str]:
    """Per judged id, the rationale of each judge that did not find it Acceptable."""
    out: dict[str, list[str]] = {}
    for j in judgements:
        if not j.acceptable and j.rationale:
            out.setdefault(j.variant_id, []).append(f"{j.judge}: {j.rationale[:300]}")
    return {k: " / ".join(v) for k, v in out.items()}


def judge_counts(judgements: Sequence[Judgement]) -> dict[str, Any]:
    """Categories and reply statuses per judge (what the metrics and the card report)."""
    categories: dict[str, Counter[str]] = {}
    status: dict[str, Counter[str]] = {}
    for j in judgements:
        categories.setdefault(j.judge, Counter())[j.category or "none"] += 1
        status.setdefault(j.judge, Counter())[j.status] += 1
    return {
        "categories_by_judge": {k: dict(sorted(v.items())) for k, v in categories.items()},
        "reply_status_by_judge": {k: dict(sorted(v.items())) for k, v in status.items()},
    }
