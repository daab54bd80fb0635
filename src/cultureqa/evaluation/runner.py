"""Turn (items, setting) into model requests and score the answers: the generic MCQ family.

Dataset → requests (solver) → scores (scorer) stay separate: requests are plain data, the client
is any ModelClient, and scoring is a pure function of items and responses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cultureqa.core.records import (
    LETTERS,
    NORMALISATION_SUM,
    McqItem,
    Setting,
    pick_best,
    scores_json,
)
from cultureqa.evaluation.engine import Batch, Decoding, ModelView, run_batch
from cultureqa.evaluation.parsing import EMPTY, EMPTY_ERROR, is_empty_reply, read_reply
from cultureqa.evaluation.prompts import ANSWER_CUES, Template
from cultureqa.llm.base import (
    GenerateRequest,
    GenerateResponse,
    LoglikRequest,
    LoglikResponse,
    Message,
    ModelClient,
)

if TYPE_CHECKING:  # pandas only where a table is built: after the replies, never before
    import pandas as pd

LocationFn = Callable[[McqItem, str], str]
"""Returns the location name for an item in a language ("" for no location)."""


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


def setting_batch(
    items: Sequence[McqItem], plan: SettingPlan, location_of: LocationFn, model: ModelView
) -> Batch:
    """One setting's requests and scorer; raises :class:`UnsupportedSetting` when it cannot run."""
    setting = plan.setting
    if setting.scoring == "completion" and not model.supports_loglik:
        raise UnsupportedSetting(f"{model.model_id} cannot score completions ({setting.name})")
    prompts = [render_prompt(i, plan, location_of(i, setting.location)) for i in items]
    templates = {setting.name: plan.template.sha256}
    if model.supports_loglik:
        if setting.scoring == "mcq":
            prompts = [_with_answer_cue(p, setting.language) for p in prompts]
        requests = [_loglik_request(i, p, setting) for i, p in zip(items, prompts, strict=True)]

        def score_loglik(answers: Sequence[LoglikResponse]) -> pd.DataFrame:
            rows = [_score_loglik(i, a) for i, a in zip(items, answers, strict=True)]
            return _setting_frame(items, rows, setting)

        return Batch(setting.name, "loglik", requests, score_loglik, templates)
    gen = [_generate_request(p, plan, model.decoding) for p in prompts]

    def score_generation(replies: Sequence[GenerateResponse]) -> pd.DataFrame:
        rows = [_score_generation(i, r) for i, r in zip(items, replies, strict=True)]
        return _setting_frame(items, rows, setting)

    return Batch(setting.name, "generate", gen, score_generation, templates)


async def run_setting(
    client: ModelClient,
    items: Sequence[McqItem],
    plan: SettingPlan,
    location_of: LocationFn,
    decoding: Decoding,
) -> pd.DataFrame:
    """One setting through the engine's batch path, without a run record (unit tests)."""
    model = ModelView(client.model_id, client.supports_loglik, decoding)
    return await run_batch(client, setting_batch(items, plan, location_of, model))


def _setting_frame(
    items: Sequence[McqItem], rows: list[dict[str, object]], setting: Setting
) -> pd.DataFrame:
    """Scored rows with the item id first, then the setting and the items' metadata."""
    import pandas as pd

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
    if answer.status != "ok" or not answer.logprobs:
        base.update(status="error", error=answer.error or "no scores")
        return base
    scores = list(answer.logprobs)
    best, margin = pick_best(scores)
    base.update(
        pred=LETTERS[best],
        correct=best in item.golds,
        scores=scores_json(scores),
        margin=margin,
        score_normalisation=NORMALISATION_SUM,
    )
    return base


def _score_generation(item: McqItem, reply: GenerateResponse) -> dict[str, object]:
    base = _empty_row(item)
    base["raw"] = reply.text or ""
    if reply.status != "ok":
        base.update(status="error", error=reply.error or "model error")
        return base
    if is_empty_reply(reply.status, reply.text):
        base.update(status=EMPTY, error=EMPTY_ERROR)
        return base
    reading = read_reply(reply.text, len(item.options))
    if reading.letter is None:
        base.update(status="parse_error", error=reading.error)
        return base
    letter = reading.letter
    base.update(pred=letter, correct=LETTERS.index(letter) in item.golds)
    return base


def _empty_row(item: McqItem) -> dict[str, object]:
    return {
        "gold": item.gold_letters,
        "pred": "",
        "correct": False,
        "status": "ok",
        "error": "",
        "raw": "",
        "scores": "",
        "score_normalisation": "",
        "margin": math.nan,
    }
