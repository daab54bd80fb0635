"""Construct 6-option attribution items from cases with an LLM (DESIGN.md §6).

Option letters are error *types* here (F correct, A–E the distractor types). Output is untrusted:
an item with a missing or duplicated type, an empty option or a vague answer ("cultural
differences") is rejected and retried with the reason, since one broken item corrupts every
error-type statistic. Every attempt is logged, so the rejection log shows what went wrong.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from cultureqa.core.paths import project_root
from cultureqa.evaluation.parsing import EMPTY_ERROR, is_empty_reply
from cultureqa.evaluation.prompts import Template, TemplateError
from cultureqa.llm.base import GenerateRequest, GenerateResponse, Message, ModelClient

TYPES: tuple[str, ...] = ("A", "B", "C", "D", "E", "F")
CORRECT_TYPE = "F"
TYPE_NAMES: dict[str, str] = {
    "A": "logical or technical attribution", "B": "false consensus", "C": "shallow stereotype",
    "D": "single cultural attribution", "E": "cross-cultural analogy", "F": "correct",
}  # fmt: skip
TYPED_COLUMNS: tuple[str, ...] = (
    "case_id", "question", *(f"type_{t}" for t in TYPES), "origin", "model", "attempts"
)  # fmt: skip
"""Columns of the constructed (unshuffled) item table; ``type_X`` is the option of type X."""

ATTEMPT_COLUMNS: tuple[str, ...] = (  # the attempt log: one row per request sent
    "case_id", "attempt", "status", "reason", "raw",
    "prompt_tokens", "completion_tokens", "cost_usd", "latency_s", "cached",
)  # fmt: skip
TEMPLATE_FIELDS = frozenset({"country", "domain", "narrative", "commentary", "differences"})
VAGUE_PATTERNS: tuple[str, ...] = (
    r"\bcultur(?:al|ally) (?:difference|gap|divide|clash|shock)",
    r"\bdifferen(?:t|ces? (?:in|of|between)) cultures?\b",
    r"\bcultures? (?:is|are) different\b",
    r"\bcultures? differs?\b",
    r"\bdifferent (?:customs|habits|traditions|values) in different\b",
)
"""Metalanguage that names no cultural logic; an answer containing it explains nothing."""

RETRY_NOTE = (
    "Your previous reply was rejected: {reason}. Reply again with one corrected JSON object "
    "only, with a question and exactly one option for each type A, B, C, D, E and F."
)
_FENCE = re.compile(r"```[A-Za-z]*\s*(.*?)```", re.S)
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)


class ItemRejected(ValueError):
    """A constructed item breaks the item contract; the message is the reason sent back."""


@dataclass(frozen=True)
class ConstructConfig:
    """Decoding and acceptance rules for construction (from the Hydra config)."""

    max_attempts: int = 3
    max_tokens: int = 4096
    temperature: float = 0.0
    seed: int | None = None
    min_answer_words: int = 6
    vague_patterns: tuple[str, ...] = VAGUE_PATTERNS


@dataclass(frozen=True)
class TypedItem:
    """A validated item whose option keys are error types, not positions."""

    case_id: str
    question: str
    options: Mapping[str, str]

    def to_record(self, origin: str, model: str, attempts: int) -> dict[str, Any]:
        """Row of the typed item table (:data:`TYPED_COLUMNS`)."""
        values = (self.case_id, self.question, *(self.options[t] for t in TYPES))
        return dict(zip(TYPED_COLUMNS, (*values, origin, model, attempts), strict=True))


@dataclass(frozen=True)
class ConstructionResult:
    """Accepted items, every attempt, and the cases that never produced a valid item."""

    items: pd.DataFrame
    attempts: pd.DataFrame
    failed: tuple[str, ...] = ()

    @property
    def rejections(self) -> pd.DataFrame:
        """The rejection log: attempts that were rejected or got no reply."""
        return self.attempts[self.attempts["status"] != "ok"].reset_index(drop=True)


class _Obj(dict[str, Any]):  # a JSON object remembering duplicated keys (json keeps the last)
    duplicates: tuple[str, ...] = ()


def _pairs_hook(pairs: list[tuple[str, Any]]) -> _Obj:
    obj = _Obj(pairs)
    keys = [k for k, _ in pairs]
    obj.duplicates = tuple(sorted({k for k in keys if keys.count(k) > 1}))
    return obj


def loads_strict(text: str) -> Any:
    """``json.loads`` whose objects remember duplicated keys (see :func:`validate_item`)."""
    return json.loads(text, object_pairs_hook=_pairs_hook)


def extract_json(text: str) -> Any:
    """The first JSON value in a reply: fenced blocks first, then the bare text, then ``{…}``.

    Raises:
        ItemRejected: when no candidate parses ("malformed output").
    """
    text = _THINK.sub("", text).strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0:
        raise ItemRejected("malformed output: no JSON object found")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text, text[start : end + 1]]
    error = ""
    for candidate in candidates:
        try:
            return loads_strict(candidate)
        except json.JSONDecodeError as exc:
            error = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    raise ItemRejected(f"malformed output: {error}")


def _type_key(key: object) -> str:
    return re.sub(r"^(?:type|option)[\s_]*", "", str(key).strip(), flags=re.I).strip(" .):").upper()


def _option_pairs(options: Any) -> list[tuple[str, Any]]:
    if isinstance(options, _Obj) and options.duplicates:
        raise ItemRejected(f"duplicated type(s) {sorted(set(map(_type_key, options.duplicates)))}")
    if isinstance(options, Mapping):
        return [(_type_key(k), v) for k, v in options.items()]
    if isinstance(options, list) and all(isinstance(o, Mapping) for o in options):
        return [(_type_key(o.get("type", "")), o.get("text")) for o in options]
    raise ItemRejected("'options' must be an object keyed by type A–F or a list of {type, text}")


def _text(value: object) -> str:  # whitespace-normalized text, "" for anything else
    return " ".join(value.split()) if isinstance(value, str) else ""


def _typed_options(options: Any) -> dict[str, str]:
    pairs = _option_pairs(options)
    keys = [k for k, _ in pairs]
    for problem, found in (
        ("duplicated type(s)", sorted({k for k in keys if keys.count(k) > 1})),
        ("unknown type(s) (types are A–F)", sorted(set(keys) - set(TYPES))),
        ("missing type(s)", [t for t in TYPES if t not in keys]),
    ):
        if found:
            raise ItemRejected(f"{problem} {found}")
    out = {k: _text(v.get("text") if isinstance(v, Mapping) else v) for k, v in pairs}
    empty = [t for t in TYPES if not out[t]]
    if empty:
        raise ItemRejected(f"empty option(s) for type(s) {empty}")
    return out


def validate_item(case_id: str, payload: Any, config: ConstructConfig | None = None) -> TypedItem:
    """Check one parsed item against the contract and normalize its whitespace.

    Raises:
        ItemRejected: with the first broken rule, phrased so a model can fix it.
    """
    config = config or ConstructConfig()
    if not isinstance(payload, Mapping):
        raise ItemRejected("output must be a JSON object with 'question' and 'options'")
    question = payload.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ItemRejected("missing or empty 'question'")
    options = _typed_options(payload.get("options"))
    if len({o.casefold() for o in options.values()}) < len(TYPES):
        raise ItemRejected("two options have identical text")
    _check_answer(options[CORRECT_TYPE], config)
    return TypedItem(case_id, " ".join(question.split()), options)


def _check_answer(answer: str, config: ConstructConfig) -> None:
    words = len(answer.split())
    if words < config.min_answer_words:
        raise ItemRejected(
            f"answer F is too short to name the local cultural logic ({words} words)"
        )
    for match in filter(None, (re.search(p, answer, re.I) for p in config.vague_patterns)):
        raise ItemRejected(f"answer F uses vague metalanguage ('{match[0]}'); name the local logic")


def parse_item(case_id: str, text: str, config: ConstructConfig | None = None) -> TypedItem:
    """Extract and validate an item from raw model output (fenced or bare JSON)."""
    return validate_item(case_id, extract_json(text), config)


def load_construct_template(root: Path | None = None, language: str = "en") -> Template:
    """The construction prompt ``prompts/cases/construct.<language>.txt``, validated."""
    path = (root or project_root()) / "prompts" / "cases" / f"construct.{language}.txt"
    template = Template(path, path.read_text(encoding="utf-8").strip() + "\n")
    present = {f for _, f, _, _ in string.Formatter().parse(template.text) if f}
    missing = sorted(TEMPLATE_FIELDS - present)
    if missing:
        raise TemplateError(f"{path}: missing placeholder(s) {missing}")
    return template


def build_request(
    case: Mapping[str, Any],
    template: Template,
    config: ConstructConfig,
    retry: tuple[str, str] | None = None,
) -> GenerateRequest:
    """One construction request; a retry adds the rejected reply and the reason.

    The retry turns make the request differ from the first one, so a response store never
    hands back the rejected reply again.
    """
    prompt = template.render(**{k: str(case.get(k, "")) for k in TEMPLATE_FIELDS})
    messages = [Message("user", prompt)]
    if retry is not None:
        raw, reason = retry
        messages += [Message("assistant", raw), Message("user", RETRY_NOTE.format(reason=reason))]
    version = hashlib.sha256((template.text + RETRY_NOTE).encode()).hexdigest()[:16]
    return GenerateRequest(
        tuple(messages), config.max_tokens, config.temperature, config.seed, version
    )


def _attempt_row(
    case_id: str, attempt: int, resp: GenerateResponse, status: str, reason: str
) -> dict[str, Any]:
    usage = resp.usage
    values = (case_id, attempt, status, reason, resp.text or "", usage.prompt_tokens,
              usage.completion_tokens, usage.cost_usd, resp.latency_s, resp.cached)  # fmt: skip
    return dict(zip(ATTEMPT_COLUMNS, values, strict=True))


async def construct_items(
    cases: pd.DataFrame,
    client: ModelClient,
    template: Template,
    config: ConstructConfig | None = None,
) -> ConstructionResult:
    """Construct one item per case, retrying rejected output up to ``max_attempts`` times.

    All pending cases go to the client together each round, so its own concurrency applies.
    A case that never yields a valid item is listed in ``failed``; the caller decides whether
    the share is acceptable.
    """
    config = config or ConstructConfig()
    pending: dict[str, tuple[Mapping[str, Any], tuple[str, str] | None]] = {
        str(c["case_id"]): (c, None) for c in cases.to_dict("records")
    }
    rows: list[dict[str, Any]] = []
    items: dict[str, dict[str, Any]] = {}
    for attempt in range(1, config.max_attempts + 1):
        if not pending:
            break
        ids = list(pending)
        requests = [build_request(pending[i][0], template, config, pending[i][1]) for i in ids]
        for case_id, resp in zip(ids, await client.generate(requests), strict=True):
            item, status, reason = _judge(case_id, resp, config)
            rows.append(_attempt_row(case_id, attempt, resp, status, reason))
            if item is not None:
                items[case_id] = item.to_record("llm", client.model_id, attempt)
                del pending[case_id]
            elif status == "rejected":
                pending[case_id] = (pending[case_id][0], (resp.text or "", reason))
    order = [str(c) for c in cases["case_id"]]
    return ConstructionResult(
        items=pd.DataFrame([items[c] for c in order if c in items], columns=list(TYPED_COLUMNS)),
        attempts=pd.DataFrame(rows, columns=list(ATTEMPT_COLUMNS)),
        failed=tuple(c for c in order if c in pending),
    )


def _judge(
    case_id: str, resp: GenerateResponse, config: ConstructConfig
) -> tuple[TypedItem | None, str, str]:
    """(item, status, reason) of one reply; a transport error is retried without feedback."""
    if resp.status != "ok" or resp.text is None:
        return None, "error", resp.error or "no reply"
    if is_empty_reply(resp.status, resp.text):  # retried with the reason: the store holds ""
        return None, "rejected", EMPTY_ERROR
    try:
        return parse_item(case_id, resp.text, config), "ok", ""
    except ItemRejected as exc:
        return None, "rejected", str(exc)
