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

import hashlib
import json
import math
import re
import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig

from cultureqa.cases.construct import CORRECT_TYPE
from cultureqa.cases.shuffle import LETTERS, parse_letter_types
from cultureqa.core.config import select
from cultureqa.core.provenance import file_md5
from cultureqa.core.records import NORMALISATION_SUM, pick_best, scores_json
from cultureqa.evaluation.engine import Batch, Decoding, ModelView, RunSpec
from cultureqa.evaluation.parsing import EMPTY, EMPTY_ERROR, is_empty_reply, read_reply
from cultureqa.evaluation.prompts import Template, TemplateError
from cultureqa.evaluation.record import group_metrics
from cultureqa.llm.base import (
    GenerateRequest,
    GenerateResponse,
    LoglikRequest,
    LoglikResponse,
    Message,
)

LOGLIK_CUE = "\n\nAnswer:"
"""Appended to the prompt before the scored letters " A" … " F" (log-likelihood backends)."""
USER_FIELDS = frozenset({"background", "question", "options"})
CASE_META: tuple[str, ...] = (
    "domain", "continent", "country", "iso3", "W", "E", "I", "R", "D",
    "weird_score", "weird_bin", "hand_annotated", "topic_categories",
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


def load_prompt(root: Path, language: str = "en", folder: Path | None = None) -> CasesPrompt:
    """``prompts/cases/evaluate/{system,user}.<language>.txt``, checked for placeholders.

    ``folder``: another pair of the same shape (the two-hop diagnostic's per-condition prompts).
    """
    folder = folder or root / "prompts" / "cases" / "evaluate"
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
        "comparison_foreign": "", "comparison_china": "", "scores": "",
        "score_normalisation": "", "margin": math.nan,
    }  # fmt: skip


def _with_choice(row: dict[str, Any], item: Mapping[str, Any], letter: str) -> dict[str, Any]:
    kind = parse_letter_types(str(item["letter_types"]))[letter]
    return {**row, "pred": letter, "pred_type": kind, "correct": kind == CORRECT_TYPE}


def score_generation(item: Mapping[str, Any], reply: GenerateResponse) -> dict[str, Any]:
    """One prediction row from a chat reply: only ``selection`` counts."""
    foreign, china = read_comparison(reply.text)
    row = _base_row(item) | {
        "raw": reply.text or "", "comparison_foreign": foreign, "comparison_china": china,
    }  # fmt: skip
    if reply.status != "ok":
        return row | {"status": "error", "error": reply.error or "model error"}
    if is_empty_reply(reply.status, reply.text):
        return row | {"status": EMPTY, "error": EMPTY_ERROR}
    reading = read_reply(reply.text, len(LETTERS))
    if reading.letter is None:
        return row | {"status": "parse_error", "error": reading.error}
    return _with_choice(row, item, reading.letter)


def score_loglik(item: Mapping[str, Any], answer: LoglikResponse) -> dict[str, Any]:
    """One prediction row from letter log-likelihoods: the argmax letter is the selection."""
    row = _base_row(item)
    if answer.status != "ok" or len(answer.logprobs) != len(LETTERS):
        return row | {"status": "error", "error": answer.error or "no scores"}
    scores = list(answer.logprobs)
    best, margin = pick_best(scores)
    scored = row | {"scores": scores_json(scores), "margin": margin,
                    "score_normalisation": NORMALISATION_SUM}  # fmt: skip
    return _with_choice(scored, item, LETTERS[best])


def seed_frame(items: pd.DataFrame, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Prediction rows (one per item) with the item's seed and case metadata."""
    frame = pd.DataFrame(rows)
    frame.insert(0, "seed", items["shuffle_seed"].astype(int).to_numpy())
    for column in CASE_META:
        if column in items.columns:
            frame[column] = items[column].to_numpy()
    return frame


@dataclass
class CasesFamily:
    """The cross-cultural benchmark on the evaluation engine: one batch per shuffle seed.

    Generation gets at least ``max_tokens_floor`` tokens: the comparison comes before the
    selection, so a model config tuned for one-letter answers would cut the reply short.
    """

    items_by_seed: Mapping[int, pd.DataFrame]
    paths: Mapping[int, str]
    """Each seed's items file relative to the project root, with ``root`` for its MD5."""
    prompt: CasesPrompt
    root: Path
    max_tokens_floor: int = 0
    threshold_pp: float = 2.0
    subset: dict[str, Any] | None = None
    """The subset ``cases.evaluate.limit`` keeps (cases, of how many, stratified by); None: all."""
    benchmark: str = "cases"

    @classmethod
    def from_params(cls, params: DictConfig, root: Path) -> CasesFamily:
        """The family as the ``cases_evaluate`` stage runs it: every shuffle seed."""
        cfg = select(params, "cases")
        ev = cfg["evaluate"]
        shuffle_dir = Path(cfg["paths"]["build"]) / "shuffle"
        paths = {int(s): str(shuffle_dir / f"items_seed{s}.parquet") for s in cfg["seeds"]}
        items = {seed: pd.read_parquet(root / path) for seed, path in paths.items()}
        limit = ev.get("limit")
        subset = None
        if limit is not None:
            first = next(iter(items.values()))
            chosen = stratified_cases(first, int(limit))
            items = {
                seed: f[f["case_id"].isin(chosen)].reset_index(drop=True)
                for seed, f in items.items()
            }
            subset = {
                "limit": int(limit),
                "cases": len(chosen),
                "of": int(first["case_id"].nunique()),
                "by": "domain",
            }
        return cls(
            items,
            paths,
            load_prompt(root, str(ev["language"])),
            root,
            int(ev["max_tokens"]),
            float(ev["robustness_threshold_pp"]),
            subset=subset,
        )

    def plan(self, model: ModelView) -> Iterator[Batch]:
        """Letters scored by log-likelihood where the backend can, else a chat request each."""
        templates = {str(seed): self.prompt.sha256 for seed in self.items_by_seed}
        for seed, items in self.items_by_seed.items():
            records = items.to_dict("records")
            label = str(seed)
            if model.supports_loglik:
                requests = [loglik_request(self.prompt, r) for r in records]
                yield Batch(label, "loglik", requests, self._scorer(items, score_loglik), templates)
            else:
                gen = [generate_request(self.prompt, r, model.decoding) for r in records]
                yield Batch(
                    label, "generate", gen, self._scorer(items, score_generation), templates
                )

    @staticmethod
    def _scorer(items: pd.DataFrame, score_one: Callable[[Any, Any], dict[str, Any]]) -> Any:
        records = items.to_dict("records")

        def score(replies: Sequence[Any]) -> pd.DataFrame:
            return seed_frame(
                items, [score_one(r, a) for r, a in zip(records, replies, strict=True)]
            )

        return score

    def finish(self, rows: pd.DataFrame, run: RunSpec) -> pd.DataFrame:
        """Identity columns first, case metadata last (the analysis never joins back)."""
        backend = str(run.model_cfg.get("backend"))
        meta = [c for c in CASE_META if c in rows.columns]
        rows = rows[[c for c in rows.columns if c not in meta] + meta]
        rows.insert(0, "kind", "baseline" if backend in BASELINE_BACKENDS else "model")
        rows.insert(0, "backend", backend)
        rows.insert(0, "roster_entry", run.roster_entry)
        rows.insert(0, "model", str(run.model_cfg["id"]))
        rows.insert(0, "benchmark", "cases")
        return rows

    def _items(self) -> dict[str, dict[str, str]]:
        return {str(s): {"path": p, "md5": file_md5(self.root / p)} for s, p in self.paths.items()}

    def dataset_record(self) -> dict[str, Any]:
        """Every seed's items file with its MD5."""
        return {"name": "cases", "items": self._items()}

    def details(self, predictions: pd.DataFrame) -> dict[str, Any]:
        """Items per seed and the seed-robustness check (largest accuracy gap)."""
        return {
            "items": self._items(),
            "robustness": robustness(predictions, self.threshold_pp),
            "subset": self.subset,
        }

    def metrics(self, predictions: pd.DataFrame) -> dict[str, Any]:
        """Per-seed accuracy and rates, plus robustness."""
        seeds = group_metrics(predictions, "seed", {"accuracy": "correct"})
        evaluated = int(predictions["case_id"].nunique())
        of = int(self.subset["of"]) if self.subset else evaluated
        return {
            "seeds": seeds,
            "robustness": robustness(predictions, self.threshold_pp),
            "cases": {"evaluated": evaluated, "of": of},
        }


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


def stratified_cases(items: pd.DataFrame, limit: int) -> list[str]:
    """At most ``limit`` case ids, taken round-robin over domains (a fixed hash orders each one).

    "The first N cases" would be a few domains of the case bank; this keeps every domain in a
    small default run, and every roster entry and seed sees the same cases.
    """
    cases = items[["case_id", "domain"]].drop_duplicates("case_id")
    rank = [hashlib.sha256(str(c).encode()).hexdigest() for c in cases["case_id"]]
    cases = cases.assign(rank=rank).sort_values(["domain", "rank"])
    cases["turn"] = cases.groupby("domain").cumcount()
    chosen = cases.sort_values(["turn", "domain"]).head(limit)
    return [str(case) for case in chosen["case_id"]]
