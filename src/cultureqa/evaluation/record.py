"""The run record every family's evaluation ends in, and the pure helpers that fill it.

One schema for IndoCulture/generic benchmarks, ID-MoCQA and the cross-cultural benchmark:
:func:`cultureqa.core.runlog.write_run` writes it as ``run.json`` (stable keys) plus its run log
(``model_calls``, ``api``, ``timings``: true of one process's run, not of the result).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cultureqa.core.runlog import call_columns
from cultureqa.evaluation.parsing import EMPTY, parse_cause
from cultureqa.llm.base import NOT_SENT, GenerateResponse, LoglikResponse

if TYPE_CHECKING:  # pandas only where a table is built: after the replies, never before
    import pandas as pd

Reply = GenerateResponse | LoglikResponse


@dataclass(frozen=True)
class Counts:
    """How the items ended: every prediction status has its count (an unknown one is an error)."""

    items: int
    ok: int
    errors: int
    parse_errors: int
    empty: int
    """Answered with no text after the client's retries: scored wrong, never an error."""
    not_sent: int
    """Requests never sent (breaker open, stage stopping); their items count as errors."""


@dataclass
class RunRecord:
    """One evaluation run, the same schema for every family (``run.json`` + its run log)."""

    benchmark: str
    roster_entry: str
    model: dict[str, Any]
    model_sha: str
    prompt: str
    settings: list[str]
    skipped: dict[str, str]
    templates: dict[str, str]
    counts: Counts
    error_share: float
    max_error_share: float
    details: dict[str, Any]
    provenance: dict[str, Any]
    model_calls: int = 0
    api: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    error_causes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """What ``error_share`` is made of, by cause (:data:`UNUSABLE`): items, share, an example."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready; :func:`cultureqa.core.runlog.write_run` splits stable from volatile keys."""
        return dataclasses.asdict(self)


def model_sha(model_cfg: Mapping[str, Any]) -> str:
    """Short hash of a model config: tells two roster entries with one display id apart."""
    text = json.dumps(dict(model_cfg), sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


UNUSABLE = {"error": "failed", "parse_error": "unparsable", EMPTY: "empty"}
"""Statuses of items without a usable answer, and the cause each is counted under: a failed
call, a reply with no option to read, a reply with no text. All three count toward
``max_error_share``: a model that answers nothing usable has not been evaluated."""

EXAMPLE_CHARS = 80
"""How much of an example reply an error line quotes."""


def error_share(predictions: pd.DataFrame) -> float:
    """Share of items without a usable answer (a failed call, an empty or unparsable reply)."""
    if predictions.empty:
        return 0.0
    return float(predictions["status"].isin(list(UNUSABLE)).mean())


def error_causes(predictions: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Items without a usable answer by cause: count, share and the first one's reply (or error).

    The example is the reply as the model wrote it (the error text for a failed call), cut to
    :data:`EXAMPLE_CHARS`, so the line that fails a run shows what the model sent.
    """
    out: dict[str, dict[str, Any]] = {}
    if predictions.empty:
        return out
    for status, cause in UNUSABLE.items():
        part = predictions[predictions["status"] == status]
        if part.empty:
            continue
        first = part.iloc[0]
        raw = first.get("raw", "") if status != "error" else first.get("error", "")
        text = "" if raw is None or (isinstance(raw, float) and raw != raw) else str(raw)
        cut = text[:EXAMPLE_CHARS] + ("…" if len(text) > EXAMPLE_CHARS else "")
        share = round(len(part) / len(predictions), 6)
        out[cause] = {"items": len(part), "share": share, "example": cut}
        if status == "parse_error" and "error" in part.columns:
            by_cause = part["error"].map(parse_cause).value_counts()
            out[cause]["by_cause"] = {str(k): int(v) for k, v in sorted(by_cause.items())}
    return out


def group_metrics(
    predictions: pd.DataFrame, by: str, measures: Mapping[str, str]
) -> dict[str, dict[str, float]]:
    """Per-group means for DVC metrics: n, each measure (name -> boolean column) and the rates.

    Confidence intervals are left to the analyze stages: importing statsmodels here would add
    seconds to every evaluation process's start-up.
    """
    out: dict[str, dict[str, float]] = {}
    for key, part in predictions.groupby(by, sort=True):
        row = {name: round(float(part[column].mean()), 6) for name, column in measures.items()}
        out[str(key)] = {"n": len(part), **row} | {
            "parse_error_rate": round(float((part["status"] == "parse_error").mean()), 6),
            "empty_rate": round(float((part["status"] == EMPTY).mean()), 6),
            "error_rate": round(float((part["status"] == "error").mean()), 6),
        }
    return out


def conform(frame: pd.DataFrame, contract: Mapping[str, str], name: str) -> pd.DataFrame:
    """Order and type columns per a family's column contract; extra columns go last."""
    missing = [c for c in contract if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} predictions lack columns {missing}")
    extra = [c for c in frame.columns if c not in contract]
    return frame[[*contract, *extra]].astype(dict(contract))


def accounting(replies: Sequence[Reply], per_item: int) -> dict[str, list[Any]]:
    """Per-item columns from the replies: usage summed, the call columns of the run log.

    An item scored from several requests (ID-MoCQA log-likelihood asks twice) sums their
    tokens, cost, attempts, retries and times; it is ``cached`` only if all of them were.
    Columns are ``prompt_tokens``, ``completion_tokens``, ``cost_usd`` and
    :data:`cultureqa.core.runlog.CALL_COLUMNS`, in that order.
    """
    columns: dict[str, list[Any]] = {}
    for start in range(0, len(replies), per_item):
        group = replies[start : start + per_item]
        for name, value in _item_accounting(group).items():
            columns.setdefault(name, []).append(value)
    return columns


def _item_accounting(group: Sequence[Reply]) -> dict[str, Any]:
    out: dict[str, Any] = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0}
    for reply in group:
        usage = getattr(reply, "usage", None)
        if usage is not None:
            out["prompt_tokens"] += usage.prompt_tokens
            out["completion_tokens"] += usage.completion_tokens
            out["cost_usd"] += usage.cost_usd
    return out | call_columns(*group)


STATUSES = ("ok", "parse_error", EMPTY, "error")
"""Every prediction status: answered, unreadable, answered with no text, failed call."""


def count(predictions: pd.DataFrame) -> Counts:
    """Items by status, and how many of the errors were requests never sent.

    A status outside :data:`STATUSES` raises: a family that invents one must name it here,
    so that no item ends in a count nobody reads.
    """
    if predictions.empty:
        return Counts(0, 0, 0, 0, 0, 0)
    statuses = predictions["status"].value_counts().to_dict()
    if unknown := sorted(set(statuses) - set(STATUSES)):
        raise ValueError(f"predictions have unknown status values {unknown} (known: {STATUSES})")
    ok, unparsed, empty, errors = (int(statuses.get(k, 0)) for k in STATUSES)
    not_sent = int(predictions["error"].astype(str).str.startswith(NOT_SENT).sum())
    return Counts(len(predictions), ok, errors, unparsed, empty, not_sent)
