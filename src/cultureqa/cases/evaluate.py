"""Evaluate one model on the shuffled cross-cultural items, for every shuffle seed (DESIGN.md §6).

Chat models get a system prompt with three steps (behavioural differences, each side's cultural
background in one sentence, exclusion of distractors) and return
``{"comparison": {"foreign": …, "china": …}, "selection": letter}``; only ``selection`` is scored,
read by the shared MCQ parser, and an unreadable reply is an explicit parse error counted wrong.
Backends with log-likelihoods (the local model, the baselines) score the six letters after the
same prompt, as the generic runner does for MCQ. Every prediction keeps the error type behind the
chosen letter, which is what the analysis is about.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.cases.construct import CORRECT_TYPE
from cultureqa.cases.shuffle import LETTERS, parse_letter_types
from cultureqa.evaluation.parsing import EMPTY, EMPTY_ERROR, is_empty_reply, parse_letter
from cultureqa.evaluation.prompts import Template, TemplateError
from cultureqa.evaluation.runner import Decoding, error_share
from cultureqa.llm.base import (
    GenerateRequest,
    GenerateResponse,
    LoglikRequest,
    LoglikResponse,
    Message,
    ModelClient,
)
from cultureqa.llm.cached import CachedClient
from cultureqa.llm.registry import build_model
from cultureqa.llm.store import ResponseStore
from cultureqa.records import scores_json
from cultureqa.spend import api_stats

LOGLIK_CUE = "\n\nAnswer:"
"""Appended to the prompt before the scored letters " A" … " F" (log-likelihood backends)."""
USER_FIELDS = frozenset({"background", "question", "options"})
CASE_META: tuple[str, ...] = (
    "domain", "continent", "country", "iso3", "W", "E", "I", "R", "D",
    "weird_score", "weird_bin", "topic_categories",
)  # fmt: skip
"""Case columns carried into every prediction row, so analysis never joins back."""
BASELINE_BACKENDS = frozenset({"random", "fixed"})
_OBJECT = re.compile(r"\{.*\}", re.S)


@dataclass(frozen=True)
class CasesPrompt:
    """The system and user templates; their joint hash goes into every request key."""

    system: Template
    user: Template

    @property
    def sha256(self) -> str:
        """Short hash of both templates and the log-likelihood cue."""
        text = self.system.text + "\x1e" + self.user.text + "\x1e" + LOGLIK_CUE
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class CasesEvalOutcome:
    """Predictions over every seed, the calls actually sent, and the prompt hash."""

    predictions: pd.DataFrame
    calls: int
    template_sha256: str
    api: dict[str, Any] = field(default_factory=dict)
    """What the client and cache did: sends, retries, failures, waits, breaker (for run.json)."""

    @property
    def error_share(self) -> float:
        """Share of items whose model call failed (see :func:`runner.error_share`)."""
        return error_share(self.predictions)


def load_prompt(root: Path, language: str = "en") -> CasesPrompt:
    """``prompts/cases/evaluate/{system,user}.<language>.txt``, checked for placeholders."""
    folder = root / "prompts" / "cases" / "evaluate"
    loaded = []
    for name in ("system", "user"):
        path = folder / f"{name}.{language}.txt"
        if not path.exists():
            raise TemplateError(f"{path}: template not found")
        loaded.append(Template(path, path.read_text(encoding="utf-8").strip()))
    system, user = loaded
    present = {f for _, f, _, _ in string.Formatter().parse(user.text) if f}
    if missing := sorted(USER_FIELDS - present):
        raise TemplateError(f"{user.path}: missing placeholder(s) {missing}")
    system.render()  # a stray placeholder in the system prompt fails here, not per item
    return CasesPrompt(system, user)


def option_lines(item: Mapping[str, Any]) -> str:
    """The options as lettered lines ``A. …`` in their shuffled positions."""
    return "\n".join(f"{letter}. {item[f'option_{letter}']}" for letter in LETTERS)


def render_messages(prompt: CasesPrompt, item: Mapping[str, Any]) -> tuple[Message, Message]:
    """System and user turns for one item; the case background is the narrative."""
    user = prompt.user.render(
        background=str(item["narrative"]),
        question=str(item["question"]),
        options=option_lines(item),
    )
    return Message("system", prompt.system.render()), Message("user", user)


def generate_request(
    prompt: CasesPrompt, item: Mapping[str, Any], decoding: Decoding
) -> GenerateRequest:
    """A chat request for one item."""
    return GenerateRequest(
        render_messages(prompt, item),
        decoding.max_tokens,
        decoding.temperature,
        decoding.seed,
        prompt.sha256,
    )


def loglik_request(prompt: CasesPrompt, item: Mapping[str, Any]) -> LoglikRequest:
    """Score ``" A"`` … ``" F"`` after the flattened prompt and the answer cue."""
    system, user = render_messages(prompt, item)
    context = f"{system.content}\n\n{user.content}{LOGLIK_CUE}"
    return LoglikRequest(context, tuple(f" {letter}" for letter in LETTERS))


def read_comparison(text: str | None) -> tuple[str, str]:
    """The reply's (foreign, china) comparison sentences, or empty strings; never scored."""
    match = _OBJECT.search(text or "")
    try:
        payload = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        return "", ""
    comparison = payload.get("comparison") if isinstance(payload, dict) else None
    if not isinstance(comparison, dict):
        return "", ""
    return str(comparison.get("foreign") or ""), str(comparison.get("china") or "")


def _base_row(item: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "case_id": str(item["case_id"]), "gold": str(item["answer"]), "pred": "",
        "pred_type": "", "correct": False, "status": "ok", "error": "", "raw": "",
        "comparison_foreign": "", "comparison_china": "", "scores": "", "latency_s": 0.0,
        "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "cached": False,
    }  # fmt: skip


def _with_choice(row: dict[str, Any], item: Mapping[str, Any], letter: str) -> dict[str, Any]:
    kind = parse_letter_types(str(item["letter_types"]))[letter]
    return {**row, "pred": letter, "pred_type": kind, "correct": kind == CORRECT_TYPE}


def score_generation(item: Mapping[str, Any], reply: GenerateResponse) -> dict[str, Any]:
    """One prediction row from a chat reply: only ``selection`` counts."""
    foreign, china = read_comparison(reply.text)
    row = _base_row(item) | {
        "raw": reply.text or "", "comparison_foreign": foreign, "comparison_china": china,
        "latency_s": reply.latency_s, "prompt_tokens": reply.usage.prompt_tokens,
        "completion_tokens": reply.usage.completion_tokens, "cost_usd": reply.usage.cost_usd,
        "cached": reply.cached,
    }  # fmt: skip
    if reply.status != "ok":
        return row | {"status": "error", "error": reply.error or "model error"}
    if is_empty_reply(reply.status, reply.text):
        return row | {"status": EMPTY, "error": EMPTY_ERROR}
    letter = parse_letter(reply.text, len(LETTERS))
    if letter is None:
        return row | {"status": "parse_error", "error": "no selection letter in reply"}
    return _with_choice(row, item, letter)


def score_loglik(item: Mapping[str, Any], answer: LoglikResponse) -> dict[str, Any]:
    """One prediction row from letter log-likelihoods: the argmax letter is the selection."""
    row = _base_row(item) | {"latency_s": answer.latency_s, "cached": answer.cached}
    if answer.status != "ok" or len(answer.logprobs) != len(LETTERS):
        return row | {"status": "error", "error": answer.error or "no scores"}
    scores = list(answer.logprobs)
    best = max(range(len(scores)), key=scores.__getitem__)
    return _with_choice(row | {"scores": scores_json(scores)}, item, LETTERS[best])


async def evaluate_items(
    client: ModelClient, items: pd.DataFrame, prompt: CasesPrompt, decoding: Decoding
) -> pd.DataFrame:
    """Prediction rows (one per item) with the item's seed and case metadata."""
    records = items.to_dict("records")
    if client.supports_loglik:
        answers = await client.loglik([loglik_request(prompt, r) for r in records])
        rows = [score_loglik(r, a) for r, a in zip(records, answers, strict=True)]
    else:
        replies = await client.generate([generate_request(prompt, r, decoding) for r in records])
        rows = [score_generation(r, a) for r, a in zip(records, replies, strict=True)]
    frame = pd.DataFrame(rows)
    frame.insert(0, "seed", [int(r["shuffle_seed"]) for r in records])
    for column in CASE_META:
        if column in items.columns:
            frame[column] = items[column].to_numpy()
    return frame


def evaluate_entry(
    items_by_seed: Mapping[int, pd.DataFrame],
    model_cfg: Mapping[str, Any],
    prompt: CasesPrompt,
    store_path: Path,
    entry: str,
    max_tokens_floor: int = 0,
    progress: bool = False,
) -> CasesEvalOutcome:
    """Evaluate one roster entry on every seed's items through the response store.

    Generation gets at least ``max_tokens_floor`` tokens: the comparison comes before the
    selection, so a model config tuned for one-letter answers would cut the reply short.
    """
    from tqdm import tqdm

    built = build_model(model_cfg)
    store = ResponseStore(store_path)
    total = sum(len(f) for f in items_by_seed.values())
    bar = tqdm(total=total, desc=f"cases/{model_cfg['id']}", unit="q", disable=not progress)
    client = CachedClient(
        built.client, store, built.identity, built.chunk_size, lambda done: bar.update(len(done))
    )
    decoding_cfg = dict(model_cfg.get("decoding") or {})
    max_tokens = max(int(decoding_cfg.get("max_tokens", 16)), max_tokens_floor)
    decoding = Decoding(**{**decoding_cfg, "max_tokens": max_tokens})

    async def run_all() -> list[pd.DataFrame]:
        try:
            return [
                await evaluate_items(client, f, prompt, decoding) for f in items_by_seed.values()
            ]
        finally:
            await client.aclose()

    try:
        frames = asyncio.run(run_all())
    finally:
        bar.close()
        store.close()
    backend = str(model_cfg.get("backend"))
    predictions = pd.concat(frames, ignore_index=True)
    predictions.insert(0, "kind", "baseline" if backend in BASELINE_BACKENDS else "model")
    predictions.insert(0, "backend", backend)
    predictions.insert(0, "roster_entry", entry)
    predictions.insert(0, "model", str(model_cfg["id"]))
    predictions.insert(0, "benchmark", "cases")
    return CasesEvalOutcome(predictions, client.calls, prompt.sha256, api_stats(client))


def robustness(predictions: pd.DataFrame, threshold_pp: float) -> dict[str, Any]:
    """Accuracy per seed in pp and the largest gap between seeds, against the threshold."""
    from cultureqa.analysis.stats import max_pairwise_gap  # statsmodels: seconds to import

    per_seed = {
        str(seed): round(float(part["correct"].mean()) * 100, 4)
        for seed, part in predictions.groupby("seed", sort=False)
    }
    gap = max_pairwise_gap(per_seed)
    return {
        "accuracy_pp_by_seed": per_seed,
        "max_gap_pp": round(gap, 4) if gap == gap else None,
        "threshold_pp": threshold_pp,
        "robust": bool(gap <= threshold_pp) if gap == gap else None,
    }


def entry_metrics(predictions: pd.DataFrame, threshold_pp: float) -> dict[str, Any]:
    """DVC metrics of one roster entry: per-seed accuracy and rates, plus robustness."""
    seeds: dict[str, Any] = {}
    for seed, part in predictions.groupby("seed", sort=False):
        seeds[str(seed)] = {
            "n": len(part),
            "accuracy": round(float(part["correct"].mean()), 6),
            "parse_error_rate": round(float((part["status"] == "parse_error").mean()), 6),
            "empty_rate": round(float((part["status"] == EMPTY).mean()), 6),
            "error_rate": round(float((part["status"] == "error").mean()), 6),
        }
    return {"seeds": seeds, "robustness": robustness(predictions, threshold_pp)}
