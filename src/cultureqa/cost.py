"""Dry run: what a sweep will send, and cost, before it runs (issue 14 item 5).

``cultureqa cost -S 'model=gpt_4o,gpt_5_mini' -S 'prompt=zero_shot,cot'`` expands the sweep the
way ``dvc exp run --queue -S`` does (DVC's own Hydra sweep parser), composes each experiment's
params from ``conf/`` and runs every model-calling evaluation stage's own function (IndoCulture
and config benchmarks, ID-MoCQA, cases) with :data:`cultureqa.llm.cached.DRY_RUN` set: the stage
code renders the real prompts and builds the real requests, the cache layer reports them with
what the response store already holds, and nothing is sent. So the request counts are the
stage's counts, not a model of them (``tests/test_cost.py`` checks them against the fake server).

Per stage × roster entry it reports requests, how many the store holds (free), and for the rest:
prompt tokens (``litellm.token_counter`` on the rendered messages with litellm's tokenizer for
the model; exact for OpenAI models, tiktoken's approximation where litellm has no tokenizer, and
characters / 4 for local backends), completion tokens (``max_tokens``: the upper bound; and a
typical figure: the mean of the stored replies of the same group when the store has some, else a
fixed guess per reply shape), and cost (configured ``price:`` first, else litellm's price table;
``None`` — shown as ``?`` — when neither knows the model, never a guess).
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cultureqa.llm.base import GenerateRequest, LoglikRequest
from cultureqa.llm.cached import DRY_RUN, CachedClient

TYPICAL_COMPLETION = {"letter": 4, "json": 40, "reasoning": 400, "cases": 300}
"""Guessed reply lengths (tokens) when the store holds no reply of the group to measure: an MCQ
letter, ID-MoCQA's JSON answer, a chain of thought, the cases' comparison + JSON selection."""


@dataclass
class Group:
    """One stage × roster entry of one experiment: its requests and what they cost."""

    experiment: str
    stage: str
    entry: str
    model: str
    backend: str
    shape: str = "letter"
    """Reply shape for the typical-length guess (a key of :data:`TYPICAL_COMPLETION`)."""
    requests: int = 0
    stored: int = 0
    earlier: int = 0
    """Not stored, but sent by an earlier group of the sweep (same store key): free here."""
    prompt_tokens: int = 0
    completion_tokens_max: int = 0
    completion_tokens_typical: int = 0
    cost_max_usd: float | None = 0.0
    cost_typical_usd: float | None = 0.0
    cost_without_store_usd: float | None = 0.0
    """Upper bound had the store held nothing (what the cache saves, by difference)."""
    tokens_by: str = ""
    price_from: str = ""
    typical_from: str = ""
    _misses: list[Any] = field(default_factory=list, repr=False)
    _hits: list[Any] = field(default_factory=list, repr=False)
    _stored_completions: list[int] = field(default_factory=list, repr=False)
    _seen: set[str] = field(default_factory=set, repr=False)

    @property
    def to_send(self) -> int:
        """Requests neither stored nor sent earlier in the sweep: the ones this run pays for."""
        return self.requests - self.stored - self.earlier

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready row (private working lists left out)."""
        row = {k: v for k, v in dataclasses.asdict(self).items() if not k.startswith("_")}
        return row | {"to_send": self.to_send}


class Recorder:
    """The :data:`DRY_RUN` hook: files each batch's unique requests under the current group."""

    def __init__(self) -> None:
        self.groups: list[Group] = []
        self.current: Group | None = None
        self.planned: set[str] = set()
        """Keys some earlier group sends: a later experiment finds them in the store."""

    @contextlib.contextmanager
    def group(self, group: Group) -> Iterator[Group]:
        """Record requests built inside the block under ``group``."""
        self.groups.append(group)
        self.current = group
        token = DRY_RUN.set(self.hook)
        try:
            yield group
        finally:
            DRY_RUN.reset(token)
            self.current = None

    def hook(
        self,
        client: CachedClient,
        kind: str,
        requests: Sequence[Any],
        keys: list[str],
        stored: Mapping[str, Any],
    ) -> None:
        """Count each distinct key once (a run sends duplicates once, too)."""
        group = self.current
        assert group is not None, "a dry-run batch outside a group"
        for key, request in zip(keys, requests, strict=True):
            if key in group._seen:
                continue
            group._seen.add(key)
            group.requests += 1
            if key in stored:
                group.stored += 1
                group._hits.append(request)
                usage = stored[key].get("usage") or {}
                if "completion_tokens" in usage:
                    group._stored_completions.append(int(usage["completion_tokens"]))
            elif key in self.planned:
                group.earlier += 1
                group._hits.append(request)
            else:
                self.planned.add(key)
                group._misses.append(request)


# --- tokens and prices -------------------------------------------------------------------------

Counter = Callable[[Any], int]


def _chars4(request: Any) -> int:
    """Characters / 4, rounded up: the usual rule of thumb where no tokenizer is known."""
    if isinstance(request, LoglikRequest):
        text = request.context + "".join(request.continuations)
    else:
        text = "".join(m.content for m in request.messages)
    return -(-len(text) // 4)


def token_counter(model_cfg: Mapping[str, Any]) -> tuple[Counter, str]:
    """A prompt-token counter for the model's requests and what it is."""
    if model_cfg.get("backend") != "litellm":
        return _chars4, "chars/4"
    from cultureqa.llm.api.litellm_lib import import_litellm

    litellm = import_litellm()
    name = str((model_cfg.get("options") or {})["litellm_model"])
    tokenizer = litellm.utils.select_tokenizer(model=name)
    if tokenizer["type"] == "huggingface_tokenizer":
        label = "litellm: model's tokenizer"
    else:
        label = "litellm: tiktoken " + (
            "(exact)" if _provider(litellm, name) == "openai" else "(approx.)"
        )

    def count(request: Any) -> int:
        if isinstance(request, LoglikRequest):
            return _chars4(request)
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        return int(litellm.token_counter(model=name, custom_tokenizer=tokenizer, messages=messages))

    return count, label


def _provider(litellm: Any, name: str) -> str | None:
    try:
        return str(litellm.get_model_info(name).get("litellm_provider"))
    except Exception:  # not in litellm's table: no provider to vouch for the tokenizer
        return None


Pricer = Callable[[int, int], float]


def pricer(model_cfg: Mapping[str, Any]) -> tuple[Pricer | None, str]:
    """Cost of (prompt tokens, completion tokens) for one request; None when nobody knows.

    With ``options.batch: true`` it is the batch price the batch client charges: litellm's batch
    prices where its table has them, else the full price × ``BATCH_DISCOUNT``.
    """
    if model_cfg.get("backend") != "litellm":
        return (lambda p, c: 0.0), "local (free)"
    from cultureqa.llm.api.batch import BATCH_DISCOUNT

    options = dict(model_cfg.get("options") or {})
    factor, suffix = (BATCH_DISCOUNT, " × batch") if options.get("batch") else (1.0, "")
    price = dict(model_cfg.get("price") or {})
    if price.get("input_per_token") is not None:
        p_in = float(price["input_per_token"]) * factor
        p_out = float(price.get("output_per_token") or 0.0) * factor
        return (lambda p, c: p * p_in + c * p_out), "configured price" + suffix
    from cultureqa.llm.api.litellm_lib import import_litellm

    litellm = import_litellm()
    name = str(options["litellm_model"])
    try:
        info = litellm.get_model_info(name)
        litellm.cost_per_token(model=name, prompt_tokens=1, completion_tokens=1)
    except Exception:  # litellm raises its own "not mapped" errors: the price is unknown
        return None, f"unknown: {name} is not in litellm's price table; set price.input_per_token"
    batch_in = info.get("input_cost_per_token_batches")
    if options.get("batch") and batch_in is not None:
        batch_out = float(info.get("output_cost_per_token_batches") or 0.0)
        return (lambda p, c: p * float(batch_in) + c * batch_out), "litellm batch prices"

    def cost(p: int, c: int) -> float:
        prompt, completion = litellm.cost_per_token(
            model=name, prompt_tokens=p, completion_tokens=c
        )
        return float(prompt + completion) * factor

    return cost, "litellm price table" + suffix


def estimate(group: Group, model_cfg: Mapping[str, Any]) -> Group:
    """Fill tokens and cost of ``group`` from its recorded requests."""
    count, group.tokens_by = token_counter(model_cfg)
    price, group.price_from = pricer(model_cfg)
    if group._stored_completions:
        typical = statistics.fmean(group._stored_completions)
        group.typical_from = f"store (n={len(group._stored_completions)})"
    else:
        typical = float(TYPICAL_COMPLETION[group.shape])
        group.typical_from = f"guess ({group.shape})"
    totals = {"max": 0.0, "typical": 0.0, "all": 0.0}
    for request, missing in [(r, True) for r in group._misses] + [(r, False) for r in group._hits]:
        prompt = count(request)
        top = request.max_tokens if isinstance(request, GenerateRequest) else 0
        usual = round(min(float(top), typical))
        if price is not None:
            totals["all"] += price(prompt, top)
        if not missing:
            continue
        group.prompt_tokens += prompt
        group.completion_tokens_max += top
        group.completion_tokens_typical += usual
        if price is not None:
            totals["max"] += price(prompt, top)
            totals["typical"] += price(prompt, usual)
    if price is None:
        group.cost_max_usd = group.cost_typical_usd = group.cost_without_store_usd = None
    else:
        group.cost_max_usd, group.cost_typical_usd = totals["max"], totals["typical"]
        group.cost_without_store_usd = totals["all"]
    return group
