r"""Evaluate one model with one prompt style on ID-MoCQA, both languages (DESIGN.md §6).

The model sees the two-hop question and options A–C and must commit to the province (first hop)
and the option (second hop).

* **Generation backends** (API models): one request per item; the template asks for JSON
  ``{"province": …, "answer": …}`` (CoT: reasoning first) and :mod:`cultureqa.mocqa.answers`
  reads the reply.
* **Log-likelihood backends** (``client.supports_loglik``: the local model, the baselines) are
  scored, not asked to write JSON, with two requests per item over the same rendered prompt:

  - answer: ``" A"``, ``" B"``, ``" C"`` after ``"<prompt>\nAnswer:"`` (``Jawaban:``), argmax of
    the summed log-probability, as :mod:`cultureqa.evaluation.runner` scores IndoCulture MCQ;
  - province: the 11 province names after ``"<prompt>\nProvince:"`` (``Provinsi:``), English
    names for ``en`` items and the knowledge base's Indonesian names for ``id`` items; argmax of
    the *mean* log-probability per token, because names run from one token ("Bali") to several
    ("Nusa Tenggara Timur") and a summed score would favour the short ones.

  The hops are scored independently: the answer is not conditioned on the model's own province
  guess, which would need a second, chained request and would mix the two accuracies. A CoT
  template cannot make a scored model reason; under log-likelihood it only changes the context.

Every call goes through :class:`~cultureqa.llm.cached.CachedClient`, so reruns are free and a
crash loses nothing already answered.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from cultureqa.evaluation.parsing import EMPTY, EMPTY_ERROR, is_empty_reply
from cultureqa.evaluation.prompts import Template
from cultureqa.evaluation.runner import error_share
from cultureqa.knowledge.provinces import KnowledgeBase
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
from cultureqa.mocqa.answers import (
    LETTERS,
    ParsedReply,
    load_template,
    parse_reply,
    render,
    scored_fields,
)
from cultureqa.records import scores_json
from cultureqa.spend import LEDGER, api_stats

ITEM_COLUMNS = ("item_id", "source_id", "clue_type", "language", "province", "topic")
DATASET_COLUMNS = (*ITEM_COLUMNS, "question", "options", "answer")
PROVINCE_CUE = {"en": "Province:", "id": "Provinsi:"}
ANSWER_CUE = {"en": "Answer:", "id": "Jawaban:"}

PREDICTION_COLUMNS: dict[str, str] = {
    "model": "str", "roster_entry": "str", "backend": "str", "model_sha": "str", "prompt": "str",
    **dict.fromkeys(ITEM_COLUMNS, "str"), "gold": "str", "scoring": "str",
    "province_raw": "str", "province_pred": "str", "province_correct": "bool",
    "answer_pred": "str", "correct": "bool", "status": "str", "parse_error": "str",
    "error": "str", "raw": "str", "scores": "str", "prompt_tokens": "int64",
    "completion_tokens": "int64", "tokens": "int64", "cost_usd": "float64",
    "latency_s": "float64", "cached": "bool", "template_sha256": "str",
}  # fmt: skip
"""Column contract of ``data/eval/mocqa/<entry>/<prompt>/predictions.parquet``."""


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation: the prompt style, the languages, and the generation budget floor."""

    style: str
    languages: tuple[str, ...] = ("en", "id")
    min_max_tokens: int = 64
    """Generation budget floor; the model's own ``max_tokens`` wins when larger (CoT needs room)."""
    limit: int | None = None
    """Evaluate only the first N items per language (smoke runs)."""


@dataclass
class MocqaOutcome:
    """Predictions plus what a run record needs: calls made and template hashes per language."""

    predictions: pd.DataFrame
    calls: int = 0
    templates: dict[str, str] = field(default_factory=dict)
    api: dict[str, Any] = field(default_factory=dict)
    """What the client and cache did: sends, retries, failures, waits, breaker (for run.json)."""

    @property
    def error_share(self) -> float:
        """Share of items whose model call failed (see :func:`runner.error_share`)."""
        return error_share(self.predictions)


def load_dataset(path: Path) -> pd.DataFrame:
    """The finalized ID-MoCQA table; a missing file or column names what to run or fix."""
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: build ID-MoCQA first (stages/mocqa_*.py)")
    frame = pd.read_parquet(path)
    missing = [c for c in DATASET_COLUMNS if c not in frame.columns]
    if missing:
        raise KeyError(f"{path}: dataset lacks columns {missing}")
    return frame.assign(options=[[str(o) for o in opts] for opts in frame["options"]])


def province_names(kb: KnowledgeBase, language: str) -> tuple[str, ...]:
    """The 11 names scored as province continuations, in canonical order, in ``language``."""
    return tuple(p.name_id if language == "id" else p.name for p in kb)


def model_sha(model_cfg: Mapping[str, Any]) -> str:
    """Short hash of a model config: tells two roster entries with one display id apart."""
    text = json.dumps(dict(model_cfg), sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def evaluate_mocqa(
    dataset: pd.DataFrame,
    model_cfg: Mapping[str, Any],
    cfg: EvalConfig,
    root: Path,
    store_path: Path,
    roster_entry: str,
    kb: KnowledgeBase,
    progress: bool = False,
) -> MocqaOutcome:
    """Evaluate every item of ``cfg.languages``; item failures are recorded, never raised."""
    templates = {lang: load_template(root, cfg.style, lang) for lang in cfg.languages}
    items = balanced_subset(dataset[dataset["language"].isin(cfg.languages)], cfg.limit)
    rows = [{str(k): v for k, v in r.items()} for r in items.to_dict("records")]
    if not rows:
        raise ValueError(f"the dataset has no items in languages {list(cfg.languages)}")
    # Both languages share one model load (loading the local model costs seconds).
    built = build_model(model_cfg)
    store = ResponseStore(store_path)
    per_item = 2 if built.client.supports_loglik else 1  # loglik: answer + province requests
    desc = f"mocqa/{model_cfg['id']}/{cfg.style}"
    bar = tqdm(total=per_item * len(rows), desc=desc, disable=not progress, unit="req")
    client = CachedClient(
        built.client, store, built.identity, built.chunk_size, lambda r: bar.update(len(r))
    )
    decoding = dict(model_cfg.get("decoding") or {})
    decoding["max_tokens"] = max(int(decoding.get("max_tokens") or 0), cfg.min_max_tokens)
    try:
        scored = asyncio.run(_score(client, rows, templates, decoding, kb))
    finally:
        bar.close()
        store.close()
        LEDGER.record(roster_entry, client)  # the hop stage runs three conditions
    frame = pd.DataFrame(scored).assign(
        model=str(model_cfg["id"]),
        roster_entry=roster_entry,
        backend=str(model_cfg.get("backend")),
        model_sha=model_sha(model_cfg),
        prompt=cfg.style,
    )
    hashes = {k: t.sha256 for k, t in templates.items()}
    return MocqaOutcome(conform(frame), client.calls, hashes, api_stats(client))


async def _score(
    client: ModelClient,
    rows: list[dict[str, Any]],
    templates: Mapping[str, Template],
    decoding: Mapping[str, Any],
    kb: KnowledgeBase,
) -> list[dict[str, Any]]:
    """Score by log-likelihood where the backend can, else generate and parse."""
    prompts = [render(templates[r["language"]], r["question"], r["options"]) for r in rows]
    shas = [templates[r["language"]].sha256 for r in rows]
    try:
        if client.supports_loglik:
            return await _loglik_rows(client, rows, prompts, shas, kb)
        requests = [
            GenerateRequest(
                messages=(Message("user", prompt),),
                max_tokens=int(decoding["max_tokens"]),
                temperature=float(decoding.get("temperature", 0.0)),
                seed=decoding.get("seed"),
                template_version=sha,
            )
            for prompt, sha in zip(prompts, shas, strict=True)
        ]
        replies = await client.generate(requests)
        return [_generation_row(*args) for args in zip(rows, replies, shas, strict=True)]
    finally:
        await client.aclose()


_EMPTY: dict[str, Any] = {
    "province_raw": "", "province_pred": "", "province_correct": False, "answer_pred": "",
    "correct": False, "status": "ok", "parse_error": "", "error": "", "raw": "", "scores": "",
    "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "latency_s": 0.0, "cached": False,
}  # fmt: skip


def _base_row(row: Mapping[str, Any], scoring: str, sha: str) -> dict[str, Any]:
    """An unanswered row (wrong on both hops) that scoring then fills in."""
    identity = {c: str(row[c]) for c in ITEM_COLUMNS}
    return {**identity, "gold": str(row["answer"]), "scoring": scoring, "template_sha256": sha,
            **_EMPTY}  # fmt: skip


def _generation_row(row: Mapping[str, Any], reply: GenerateResponse, sha: str) -> dict[str, Any]:
    out = _base_row(row, "generate", sha)
    out.update(
        raw=reply.text or "",
        prompt_tokens=reply.usage.prompt_tokens,
        completion_tokens=reply.usage.completion_tokens,
        cost_usd=reply.usage.cost_usd,
        latency_s=reply.latency_s,
        cached=reply.cached,
    )
    if reply.status != "ok":
        out.update(status="error", error=reply.error or "model error")
        return out
    if is_empty_reply(reply.status, reply.text):  # wrong on both hops, counted apart
        out.update(status=EMPTY, error=EMPTY_ERROR)
        return out
    parsed = parse_reply(reply.text, row["options"])
    out.update(scored_fields(parsed, str(row["province"]), str(row["answer"])))
    return out


def balanced_subset(dataset: pd.DataFrame, limit: int | None) -> pd.DataFrame:
    """At most ``limit`` items per language, spread evenly over clue types and in both languages.

    "The first N rows" would be a few provinces and one clue type; instead (source id, clue type)
    pairs are ranked by a fixed hash, taken round-robin across clue types, and kept with all
    their language versions, so every model in a run sees the same balanced, paired subset.
    """
    if limit is None:
        return dataset.reset_index(drop=True)
    pairs = dataset[["source_id", "clue_type"]].drop_duplicates()
    rank = pairs.apply(
        lambda r: hashlib.sha256(f"{r.source_id}|{r.clue_type}".encode()).hexdigest(), axis=1
    )
    pairs = pairs.assign(rank=rank).sort_values(["clue_type", "rank"])
    pairs["turn"] = pairs.groupby("clue_type").cumcount()
    chosen = pairs.sort_values(["turn", "clue_type"]).head(limit)
    keys = set(zip(chosen["source_id"], chosen["clue_type"], strict=True))
    mask = [k in keys for k in zip(dataset["source_id"], dataset["clue_type"], strict=True)]
    return dataset[mask].reset_index(drop=True)


async def _loglik_rows(
    client: ModelClient,
    rows: list[dict[str, Any]],
    prompts: list[str],
    shas: list[str],
    kb: KnowledgeBase,
) -> list[dict[str, Any]]:
    requests = []
    for row, prompt in zip(rows, prompts, strict=True):
        lang = str(row["language"])
        letters = tuple(" " + x for x in LETTERS[: len(row["options"])])
        names = tuple(" " + n for n in province_names(kb, lang))
        requests += [
            LoglikRequest(f"{prompt}\n{ANSWER_CUE[lang]}", letters),
            LoglikRequest(f"{prompt}\n{PROVINCE_CUE[lang]}", names),
        ]
    scores = await client.loglik(requests)
    return [
        _loglik_row(row, scores[2 * i], scores[2 * i + 1], shas[i], kb)
        for i, row in enumerate(rows)
    ]


def _loglik_row(
    row: Mapping[str, Any],
    answer: LoglikResponse,
    province: LoglikResponse,
    sha: str,
    kb: KnowledgeBase,
) -> dict[str, Any]:
    out = _base_row(row, "loglik", sha)
    out.update(latency_s=answer.latency_s + province.latency_s, cached=answer.cached)
    if answer.status != "ok" or province.status != "ok":
        out.update(status="error", error=answer.error or province.error or "no scores")
        return out
    a, p = _argmax(answer, per_token=False), _argmax(province, per_token=True)
    named = province_names(kb, str(row["language"]))[p]
    parsed = ParsedReply(kb.provinces[p].name, named, LETTERS[a])
    out.update(scored_fields(parsed, str(row["province"]), str(row["answer"])))
    out["scores"] = scores_json(
        {"answer": list(answer.logprobs), "province": list(province.logprobs)}
    )
    return out


def _argmax(response: LoglikResponse, per_token: bool) -> int:
    """Best continuation; per-token mean when asked and the backend reported token counts."""
    scores = list(response.logprobs)
    counts = list(response.token_counts)
    if per_token and len(counts) == len(scores) and all(c > 0 for c in counts):
        scores = [s / c for s, c in zip(scores, counts, strict=True)]
    return max(range(len(scores)), key=scores.__getitem__)


def conform(frame: pd.DataFrame) -> pd.DataFrame:
    """Order and type the columns per :data:`PREDICTION_COLUMNS`; extra columns go last."""
    frame = frame.assign(tokens=frame["prompt_tokens"] + frame["completion_tokens"])
    missing = [c for c in PREDICTION_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"ID-MoCQA predictions lack columns {missing}")
    extra = [c for c in frame.columns if c not in PREDICTION_COLUMNS]
    return frame[[*PREDICTION_COLUMNS, *extra]].astype(PREDICTION_COLUMNS)
