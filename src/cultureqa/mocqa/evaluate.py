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

The run itself (client, response store, accounting, run record) is
:func:`cultureqa.evaluation.engine.evaluate`; this module says only what ID-MoCQA asks and scores.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig

from cultureqa.core.config import select
from cultureqa.core.io import SourceError
from cultureqa.core.provenance import file_md5
from cultureqa.core.records import NORMALISATION_PROVINCE, pick_best, scores_json
from cultureqa.core.runlog import CALL_COLUMNS
from cultureqa.evaluation.engine import Batch, ModelView, RunSpec
from cultureqa.evaluation.parsing import EMPTY, EMPTY_ERROR, is_empty_reply
from cultureqa.evaluation.record import conform, group_metrics, model_sha
from cultureqa.knowledge.provinces import KnowledgeBase, load_knowledge_base
from cultureqa.llm.base import (
    GenerateRequest,
    GenerateResponse,
    LoglikRequest,
    LoglikResponse,
    Message,
)
from cultureqa.mocqa.answers import (
    LETTERS,
    TEMPLATE_DIR,
    ParsedReply,
    load_template,
    parse_reply,
    render,
    scored_fields,
)

ITEM_COLUMNS = ("item_id", "source_id", "clue_type", "language", "province", "topic")
DATASET_COLUMNS = (*ITEM_COLUMNS, "question", "options", "answer")
PROVINCE_CUE = {"en": "Province:", "id": "Provinsi:"}
ANSWER_CUE = {"en": "Answer:", "id": "Jawaban:"}

PREDICTION_COLUMNS: dict[str, str] = {
    "model": "str", "roster_entry": "str", "backend": "str", "model_sha": "str", "prompt": "str",
    **dict.fromkeys(ITEM_COLUMNS, "str"), "gold": "str", "scoring": "str",
    "province_raw": "str", "province_pred": "str", "province_correct": "bool",
    "answer_pred": "str", "correct": "bool", "status": "str", "parse_error": "str",
    "error": "str", "raw": "str", "scores": "str", "score_normalisation": "str",
    "margin": "float64", "prompt_tokens": "int64",
    "completion_tokens": "int64", "tokens": "int64", "cost_usd": "float64",
    **CALL_COLUMNS, "template_sha256": "str",
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
    template_dir: str = TEMPLATE_DIR
    """Where ``<style>.<language>.txt`` lives (the hop diagnostic has one folder per condition)."""


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


@dataclass
class MocqaFamily:
    """ID-MoCQA on the evaluation engine: one batch over every item of ``cfg.languages``.

    Both languages go in one batch, so a batching local model sees the same batches as ever.
    """

    dataset: pd.DataFrame
    cfg: EvalConfig
    root: Path
    kb: KnowledgeBase
    dataset_path: str = ""
    """The dataset file relative to the project root (provenance; empty in the hop diagnostic)."""
    benchmark: str = "mocqa"

    @classmethod
    def from_params(cls, params: DictConfig, root: Path, style: str) -> MocqaFamily:
        """The family as the ``mocqa_evaluate`` stage runs it for one prompt style.

        A language configured in ``mocqa_eval.languages`` with no items in the dataset is an
        input error (the run would silently report one language only).
        """
        cfg = select(params, "mocqa_eval")
        dataset_path = root / str(cfg["dataset"])
        settings = EvalConfig(
            style=style,
            languages=tuple(cfg.get("languages") or ("en", "id")),
            min_max_tokens=int((cfg.get("min_max_tokens") or {}).get(style, 64)),
            limit=cfg.get("limit"),
        )
        dataset = load_dataset(dataset_path)
        if absent := [x for x in settings.languages if not dataset["language"].eq(x).any()]:
            raise SourceError(dataset_path, f"no items in language(s) {absent}", column="language")
        kb = load_knowledge_base(root / "data" / "knowledge" / "provinces")
        return cls(dataset, settings, root, kb, str(cfg["dataset"]))

    @property
    def max_tokens_floor(self) -> int:
        """The prompt style's generation budget floor."""
        return self.cfg.min_max_tokens

    def plan(self, model: ModelView) -> list[Batch]:
        """Log-likelihood where the backend can (two requests per item), else generate."""
        cfg = self.cfg
        templates = {
            lang: load_template(self.root, cfg.style, lang, cfg.template_dir)
            for lang in cfg.languages
        }
        items = balanced_subset(
            self.dataset[self.dataset["language"].isin(cfg.languages)], cfg.limit
        )
        rows = [{str(k): v for k, v in r.items()} for r in items.to_dict("records")]
        if not rows:
            raise ValueError(f"the dataset has no items in languages {list(cfg.languages)}")
        hashes = {k: t.sha256 for k, t in templates.items()}
        prompts = [render(templates[r["language"]], r["question"], r["options"]) for r in rows]
        shas = [hashes[r["language"]] for r in rows]
        if model.supports_loglik:
            return [self._loglik_batch(rows, prompts, shas, hashes)]
        requests = [
            GenerateRequest(
                messages=(Message("user", prompt),),
                max_tokens=model.decoding.max_tokens,
                temperature=model.decoding.temperature,
                seed=model.decoding.seed,
                template_version=sha,
            )
            for prompt, sha in zip(prompts, shas, strict=True)
        ]

        def score(replies: Sequence[GenerateResponse]) -> pd.DataFrame:
            return pd.DataFrame(map(_generation_row, rows, replies, shas))

        return [Batch(cfg.style, "generate", requests, score, hashes)]

    def _loglik_batch(
        self,
        rows: list[dict[str, Any]],
        prompts: list[str],
        shas: list[str],
        hashes: dict[str, str],
    ) -> Batch:
        requests = []
        for row, prompt in zip(rows, prompts, strict=True):
            lang = str(row["language"])
            letters = tuple(" " + x for x in LETTERS[: len(row["options"])])
            names = tuple(" " + n for n in province_names(self.kb, lang))
            requests += [
                LoglikRequest(f"{prompt}\n{ANSWER_CUE[lang]}", letters),
                LoglikRequest(f"{prompt}\n{PROVINCE_CUE[lang]}", names),
            ]

        def score(scores: Sequence[LoglikResponse]) -> pd.DataFrame:
            return pd.DataFrame(
                _loglik_row(row, scores[2 * i], scores[2 * i + 1], shas[i], self.kb)
                for i, row in enumerate(rows)
            )

        return Batch(self.cfg.style, "loglik", requests, score, hashes, per_item=2)

    def finish(self, rows: pd.DataFrame, run: RunSpec) -> pd.DataFrame:
        """The roster entry's identity on every row, then the column contract."""
        frame = rows.assign(
            model=str(run.model_cfg["id"]),
            roster_entry=run.roster_entry,
            backend=str(run.model_cfg.get("backend")),
            model_sha=model_sha(run.model_cfg),
            prompt=self.cfg.style,
        )
        frame = frame.assign(tokens=frame["prompt_tokens"] + frame["completion_tokens"])
        return conform(frame, PREDICTION_COLUMNS, "ID-MoCQA")

    def dataset_record(self) -> dict[str, Any]:
        """Name, path and MD5 of the finalized dataset."""
        md5 = file_md5(self.root / self.dataset_path) if self.dataset_path else None
        return {"name": "mocqa", "path": self.dataset_path, "md5": md5}

    def details(self, predictions: pd.DataFrame) -> dict[str, Any]:
        """Nothing beyond the shared record."""
        return {}

    def metrics(self, predictions: pd.DataFrame) -> dict[str, Any]:
        """Per-language multi-hop and first-hop accuracy and rates."""
        measures = {"multi_hop": "correct", "first_hop": "province_correct"}
        return group_metrics(predictions, "language", measures)


_EMPTY: dict[str, Any] = {
    "province_raw": "", "province_pred": "", "province_correct": False, "answer_pred": "",
    "correct": False, "status": "ok", "parse_error": "", "error": "", "raw": "", "scores": "",
    "score_normalisation": "", "margin": math.nan,
}  # fmt: skip


def _base_row(row: Mapping[str, Any], scoring: str, sha: str) -> dict[str, Any]:
    """An unanswered row (wrong on both hops) that scoring then fills in."""
    identity = {c: str(row[c]) for c in ITEM_COLUMNS}
    return {**identity, "gold": str(row["answer"]), "scoring": scoring, "template_sha256": sha,
            **_EMPTY}  # fmt: skip


def _generation_row(row: Mapping[str, Any], reply: GenerateResponse, sha: str) -> dict[str, Any]:
    out = _base_row(row, "generate", sha)
    out["raw"] = reply.text or ""
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


def _loglik_row(
    row: Mapping[str, Any],
    answer: LoglikResponse,
    province: LoglikResponse,
    sha: str,
    kb: KnowledgeBase,
) -> dict[str, Any]:
    out = _base_row(row, "loglik", sha)
    if answer.status != "ok" or province.status != "ok":
        out.update(status="error", error=answer.error or province.error or "no scores")
        return out
    (a, answer_margin), (p, province_margin) = _argmax(answer, False), _argmax(province, True)
    named = province_names(kb, str(row["language"]))[p]
    parsed = ParsedReply(kb.provinces[p].name, named, LETTERS[a])
    out.update(scored_fields(parsed, str(row["province"]), str(row["answer"])))
    out["scores"] = scores_json({
        "answer": list(answer.logprobs), "province": list(province.logprobs),
        "province_tokens": list(province.token_counts),
    })  # fmt: skip
    out["score_normalisation"] = NORMALISATION_PROVINCE
    out["margin"] = min(answer_margin, province_margin)  # the closer of the two picks
    return out


def _argmax(response: LoglikResponse, per_token: bool) -> tuple[int, float]:
    """Best continuation and its margin; per-token mean when asked and token counts are known."""
    scores = list(response.logprobs)
    counts = list(response.token_counts)
    if per_token and len(counts) == len(scores) and all(c > 0 for c in counts):
        scores = [s / c for s, c in zip(scores, counts, strict=True)]
    return pick_best(scores)
