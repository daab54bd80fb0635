"""Turn (items, setting) into model requests, run them, and score the answers.

Dataset → requests (solver) → scores (scorer) stay separate: requests are plain data, the client
is any ModelClient, and scoring is a pure function of items and responses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from cultureqa.evaluation.parsing import EMPTY, EMPTY_ERROR, is_empty_reply, parse_letter
from cultureqa.evaluation.prompts import ANSWER_CUES, Template
from cultureqa.llm.base import (
    GenerateRequest,
    GenerateResponse,
    LoglikRequest,
    LoglikResponse,
    Message,
    ModelClient,
)
from cultureqa.records import LETTERS, PREDICTION_COLUMNS, McqItem, Setting, scores_json

LocationFn = Callable[[McqItem, str], str]
"""Returns the location name for an item in a language ("" for no location)."""


@dataclass(frozen=True)
class Decoding:
    """Generation parameters from the model config (temperature 0 unless a model refuses it)."""

    temperature: float = 0.0
    max_tokens: int = 16
    seed: int | None = None


@dataclass(frozen=True)
class SettingPlan:
    """Everything needed to run one setting: its templates and location phrasing."""

    setting: Setting
    template: Template
    location_clause: str = ""
    """Format string with ``{location}``, e.g. 'Lokasi: {location}. '."""


class UnsupportedSetting(RuntimeError):
    """The model cannot run this setting (completion scoring needs log-likelihoods)."""


def format_options(options: Sequence[str]) -> str:
    """Render options as lettered lines, the layout every MCQ parser expects."""
    return "\n".join(f"{LETTERS[i]}. {text}" for i, text in enumerate(options))


def render_prompt(item: McqItem, plan: SettingPlan, location: str) -> str:
    """Fill the setting's template for one item; its metadata fields are placeholders too."""
    clause = plan.location_clause.format(location=location) if location else ""
    k = len(item.options)
    return plan.template.render(
        **{str(key): str(value) for key, value in item.metadata.items()},
        location_clause=clause,
        question=item.question,
        options=format_options(item.options),
        letters=", ".join(LETTERS[:k]),
    )


async def run_setting(
    client: ModelClient,
    items: Sequence[McqItem],
    plan: SettingPlan,
    location_of: LocationFn,
    decoding: Decoding,
) -> pd.DataFrame:
    """Evaluate ``items`` under one setting; returns one prediction row per item."""
    setting = plan.setting
    if setting.scoring == "completion" and not client.supports_loglik:
        raise UnsupportedSetting(f"{client.model_id} cannot score completions ({setting.name})")
    prompts = [render_prompt(i, plan, location_of(i, setting.location)) for i in items]
    if client.supports_loglik:
        if setting.scoring == "mcq":
            prompts = [_with_answer_cue(p, setting.language) for p in prompts]
        requests = [_loglik_request(i, p, setting) for i, p in zip(items, prompts, strict=True)]
        answers = await client.loglik(requests)
        rows = [_score_loglik(i, a) for i, a in zip(items, answers, strict=True)]
    else:
        gen = [_generate_request(p, plan, decoding) for p in prompts]
        replies = await client.generate(gen)
        rows = [_score_generation(i, r) for i, r in zip(items, replies, strict=True)]
    frame = pd.DataFrame(rows)
    frame.insert(0, "item_id", [i.id for i in items])
    frame["setting"] = setting.name
    frame["scoring"] = setting.scoring
    frame["location"] = setting.location
    frame["language"] = setting.language
    for key in sorted({k for i in items for k in i.metadata}):
        if key not in frame.columns:
            frame[key] = [i.metadata.get(key) for i in items]
    return frame


def _with_answer_cue(prompt: str, language: str) -> str:
    """The prompt ending in an answer cue, so the scored letter reads as the model's answer.

    Zero-shot templates end with the cue already; a CoT template ends with its instruction to
    reason, which a scored model cannot follow, so the cue of the item's language is appended
    (the same way ID-MoCQA scores CoT prompts). Without a known cue the setting cannot be scored.
    """
    if prompt.rstrip().endswith(tuple(ANSWER_CUES.values())):
        return prompt
    if language not in ANSWER_CUES:
        raise UnsupportedSetting(
            f"no answer cue for language '{language}' to score letters after a template that "
            f"does not end with one (known: {sorted(ANSWER_CUES)})"
        )
    return f"{prompt}\n{ANSWER_CUES[language]}"


def _loglik_request(item: McqItem, prompt: str, setting: Setting) -> LoglikRequest:
    if setting.scoring == "completion":
        continuations = tuple(" " + o for o in item.options)
    else:
        continuations = tuple(" " + LETTERS[i] for i in range(len(item.options)))
    return LoglikRequest(context=prompt, continuations=continuations)


def _generate_request(prompt: str, plan: SettingPlan, decoding: Decoding) -> GenerateRequest:
    return GenerateRequest(
        messages=(Message("user", prompt),),
        max_tokens=decoding.max_tokens,
        temperature=decoding.temperature,
        seed=decoding.seed,
        template_version=plan.template.sha256,
    )


def _score_loglik(item: McqItem, answer: LoglikResponse) -> dict[str, object]:
    base = _empty_row(item)
    base.update(latency_s=answer.latency_s, cached=answer.cached)
    if answer.status != "ok" or not answer.logprobs:
        base.update(status="error", error=answer.error or "no scores")
        return base
    scores = list(answer.logprobs)
    best = max(range(len(scores)), key=scores.__getitem__)
    base.update(pred=LETTERS[best], correct=best == item.answer_index, scores=scores_json(scores))
    return base


def _score_generation(item: McqItem, reply: GenerateResponse) -> dict[str, object]:
    base = _empty_row(item)
    base.update(
        raw=reply.text or "",
        latency_s=reply.latency_s,
        prompt_tokens=reply.usage.prompt_tokens,
        completion_tokens=reply.usage.completion_tokens,
        cost_usd=reply.usage.cost_usd,
        cached=reply.cached,
    )
    if reply.status != "ok":
        base.update(status="error", error=reply.error or "model error")
        return base
    if is_empty_reply(reply.status, reply.text):
        base.update(status=EMPTY, error=EMPTY_ERROR)
        return base
    letter = parse_letter(reply.text, len(item.options))
    if letter is None:
        base.update(status="parse_error", error="no option letter in reply")
        return base
    base.update(pred=letter, correct=letter == item.answer_letter)
    return base


def _empty_row(item: McqItem) -> dict[str, object]:
    return {
        "gold": item.answer_letter,
        "pred": "",
        "correct": False,
        "status": "ok",
        "error": "",
        "raw": "",
        "scores": "",
        "latency_s": 0.0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "cached": False,
    }


def error_share(predictions: pd.DataFrame) -> float:
    """Share of items whose model call failed; parse errors and empty replies are wrong answers."""
    if predictions.empty:
        return 0.0
    return float((predictions["status"] == "error").mean())


STATUSES = ("ok", "parse_error", EMPTY, "error")
"""Every prediction status, in report order: answered, unreadable, empty, failed call."""


def status_counts(predictions: pd.DataFrame) -> dict[str, int]:
    """Items per status (zeros included), for run.json: what was wrong for which reason."""
    counts = predictions["status"].value_counts() if not predictions.empty else pd.Series()
    unknown = sorted(set(counts.index) - set(STATUSES))
    if unknown:
        raise ValueError(f"predictions have unknown status values {unknown} (known: {STATUSES})")
    return {s: int(counts.get(s, 0)) for s in STATUSES}


def conform(frame: pd.DataFrame) -> pd.DataFrame:
    """Order and type columns per :data:`PREDICTION_COLUMNS` (the predictions contract)."""
    missing = [c for c in PREDICTION_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"predictions lack columns {missing}")
    extra = [c for c in frame.columns if c not in PREDICTION_COLUMNS]
    out = frame[list(PREDICTION_COLUMNS) + extra].copy()
    return out.astype(PREDICTION_COLUMNS)
