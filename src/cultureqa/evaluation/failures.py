"""The line that fails a run over ``max_error_share``: which causes, how many, what was sent.

"100.0 % of items failed" told a user nothing they could act on. The line names each cause of
the unusable items (failed calls, empty replies, unparsable replies), quotes an example reply,
and for failed calls says what the server answered, from the client's counters: an all-429 run
names the 429s, the attempts spent and the server's ``Retry-After``, and what to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cultureqa.evaluation.record import RunRecord
from cultureqa.llm.api.retry import CAUSE_WORDS, RetryConfig


def over_limit_line(record: RunRecord, predictions: Path) -> str:
    """One line: share over the limit, each cause with its share and example, where to look."""
    causes = record.error_causes
    parts = []
    if "failed" in causes:
        parts.append(_failed(causes["failed"], record))
    if "unparsable" in causes:
        found = causes["unparsable"]
        by = ", ".join(f"{k} {n}" for k, n in (found.get("by_cause") or {}).items())
        why = f": {by}" if by else ""
        parts.append(
            f"{found['share']:.1%} unparsable replies (no option to read{why}), "
            f"e.g. {found['example']!r}"
        )
    if "empty" in causes:
        parts.append(f"{causes['empty']['share']:.1%} empty replies (no text)")
    return (
        f"{record.error_share:.1%} of items have no usable answer (limit "
        f"{record.max_error_share:.1%}, max_error_share): {'; '.join(parts)}; see {predictions} "
        "columns 'status', 'error' and 'raw'"
    )


def _failed(found: Mapping[str, Any], record: RunRecord) -> str:
    """Failed calls by cause from the client's counters, else the first item's error."""
    client = record.api.get("client") or {}
    by_cause: Mapping[str, int] = client.get("failed_by_cause") or {}
    head = f"{found['share']:.1%} failed calls"
    if not by_cause:
        return f"{head}, e.g. {found['example']!r}"
    retry = _retry_config(record.model)
    named = ", ".join(f"{n} {CAUSE_WORDS.get(c, c)}" for c, n in _largest_first(by_cause))
    line = f"{head} ({named}, each after up to {retry.attempts} attempts)"
    if "429" in by_cause:
        line += _rate_limit_hint(client, retry)
    return line


def _rate_limit_hint(client: Mapping[str, Any], retry: RetryConfig) -> str:
    """What the server asked for, and what to change, for a run stopped by 429s."""
    asked = client.get("retry_after_max_s")
    if asked is None:
        return (
            "; the server sent no Retry-After: lower the model's concurrency, or raise "
            "retry.attempts and retry.max_wait_s"
        )
    said = f"; the server asked to wait up to {asked:g} s (Retry-After)"
    if asked > retry.max_wait_s:
        return (
            f"{said}, longer than retry.max_wait_s = {retry.max_wait_s:g} s, so retries came "
            f"early ({client.get('retry_after_capped', 0)} times): raise retry.max_wait_s to "
            f"at least {asked:g}, or lower the model's concurrency"
        )
    return f"{said}: lower the model's concurrency, or raise retry.attempts"


def _retry_config(model: Mapping[str, Any]) -> RetryConfig:
    known = {k: v for k, v in dict(model.get("retry") or {}).items() if v is not None}
    try:
        return RetryConfig(**known)
    except TypeError:  # a key the config check already named; the defaults still apply
        return RetryConfig()


def _largest_first(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
