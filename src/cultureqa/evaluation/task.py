"""Evaluate one model on one benchmark over all of the benchmark's settings.

This is the typed function behind ``stages/evaluate.py``: config in, predictions and a summary
out. The model is loaded once and reused across settings (loading the local model costs seconds).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from cultureqa.benchmarks.load import load_items, load_source_frame
from cultureqa.benchmarks.regions import region_namer
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.evaluation.prompts import find_template, style_skip_reason
from cultureqa.evaluation.runner import (
    Decoding,
    SettingPlan,
    UnsupportedSetting,
    conform,
    error_share,
    run_setting,
)
from cultureqa.io import SourceError
from cultureqa.llm.cached import CachedClient
from cultureqa.llm.registry import build_model
from cultureqa.llm.store import ResponseStore
from cultureqa.records import McqItem
from cultureqa.spend import api_stats

log = logging.getLogger(__name__)


@dataclass
class EvalOutcome:
    """Predictions of every supported setting, plus what was skipped and why."""

    predictions: pd.DataFrame
    skipped: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    templates: dict[str, str] = field(default_factory=dict)
    api: dict[str, Any] = field(default_factory=dict)
    """What the client and cache did: sends, retries, failures, waits, breaker (for run.json)."""

    @property
    def stopped(self) -> str | None:
        """Why the client stopped sending (circuit breaker), if it did."""
        client = self.api.get("client") or {}
        return client.get("stopped")

    @property
    def error_share(self) -> float:
        """Share of items whose model call failed (see :func:`runner.error_share`)."""
        return error_share(self.predictions)


def load_benchmark_items(
    spec: BenchmarkSpec, root: Path
) -> tuple[dict[str, list[McqItem]], str, pd.DataFrame]:
    """Items per language, the source label, and the raw frame (for hashing and validation)."""
    frame, origin = load_source_frame(spec, root)
    normalizer = None
    if spec.normalize_region:
        from cultureqa.knowledge.gazetteer import normalize_province

        normalizer = normalize_province
    languages = {s.language for s in spec.settings}
    items = {lang: load_items(spec, frame, lang, origin, normalizer) for lang in sorted(languages)}
    for column in spec.columns.metadata:
        _check_boolean_column(frame, column, spec.columns.id, origin, items)
    return items, origin, frame


def _check_boolean_column(
    frame: pd.DataFrame,
    column: str,
    id_column: str | None,
    origin: str,
    items: Mapping[str, list[McqItem]],
) -> None:
    """A metadata column read as True/False must be True/False on every row.

    A blank among booleans would otherwise reach ``predictions.parquet`` as a mixed column and
    fail there with a pyarrow traceback, far from the source cell that caused it.
    """
    values = {i.id: i.metadata.get(column) for batch in items.values() for i in batch}
    if not any(isinstance(v, bool) for v in values.values()):
        return
    # Ids that are templates or synthesized have no source column: the message names the item.
    ids = frame[id_column].tolist() if id_column in frame.columns else []
    rows = {str(v): pos for pos, v in enumerate(ids, start=1)}
    for item_id, value in values.items():
        if not isinstance(value, bool):
            raise SourceError(
                origin,
                f"item {item_id}: expected True/False like the other rows, got {value!r}",
                row=rows.get(item_id),
                column=column,
            )


def evaluate_benchmark(
    spec: BenchmarkSpec,
    model_cfg: Mapping[str, Any],
    prompt_style: str,
    root: Path,
    store_path: Path,
    progress: bool = True,
    min_max_tokens: int = 0,
) -> EvalOutcome:
    """Run every setting of ``spec`` with the configured model; never raises for item failures.

    ``min_max_tokens`` is the prompt style's generation budget floor (CoT needs room to reason);
    a setting the style does not apply to is skipped with its reason, never run half-way.
    """
    items, _, _ = load_benchmark_items(spec, root)
    built = build_model(model_cfg)
    store = ResponseStore(store_path)
    decoding = Decoding(**dict(model_cfg.get("decoding") or {}))
    if min_max_tokens > decoding.max_tokens and not built.client.supports_loglik:
        decoding = replace(decoding, max_tokens=min_max_tokens)
    total = sum(len(items[s.language]) for s in spec.settings)
    bar = tqdm(total=total, desc=f"{spec.name}/{model_cfg['id']}", disable=not progress, unit="q")
    client = CachedClient(
        built.client, store, built.identity, built.chunk_size, on_progress=_progress_hook(bar)
    )
    namer = region_namer(spec.location.region_names)

    def location_of(item: McqItem, level: str) -> str:
        if level == "none":
            return ""
        if level == "country":
            return spec.location.country.get(item.language, "")
        return namer(str(item.metadata[level]), item.language)

    outcome = EvalOutcome(predictions=pd.DataFrame())

    async def run_all() -> list[pd.DataFrame]:
        frames = []
        try:
            for setting in spec.settings:
                reason = style_skip_reason(prompt_style, setting.scoring)
                if reason is not None:
                    log.warning("skipping %s: %s", setting.name, reason)
                    outcome.skipped[setting.name] = reason
                    bar.update(len(items[setting.language]))
                    continue
                template = find_template(
                    root,
                    spec.name,
                    setting.scoring,
                    prompt_style,
                    setting.language,
                    spec.prompt_fallback.get(setting.language),
                )
                outcome.templates[setting.name] = template.sha256
                clause = spec.location.clause.get(setting.language, "")
                plan = SettingPlan(setting, template, clause)
                batch = items[setting.language]
                try:
                    frames.append(await run_setting(client, batch, plan, location_of, decoding))
                except UnsupportedSetting as exc:
                    outcome.skipped[setting.name] = str(exc)
                    bar.update(len(batch))
        finally:
            await client.aclose()
        return frames

    try:
        with logging_redirect_tqdm():  # log lines print above the bar instead of through it
            frames = asyncio.run(run_all())
    finally:
        bar.close()
        store.close()
    outcome.calls = client.calls
    outcome.api = api_stats(client)
    if frames:
        merged = pd.concat(frames, ignore_index=True)
        merged.insert(0, "model", str(model_cfg["id"]))
        merged.insert(0, "benchmark", spec.name)
        outcome.predictions = conform(merged)
    return outcome


def _progress_hook(bar: tqdm) -> Any:  # type: ignore[type-arg]
    state = {"errors": 0, "tokens": 0, "cost": 0.0}

    def hook(responses: Any) -> None:
        for r in responses:
            state["errors"] += int(getattr(r, "status", "ok") != "ok")
            usage = getattr(r, "usage", None)
            if usage is not None:
                state["tokens"] += usage.prompt_tokens + usage.completion_tokens
                state["cost"] += usage.cost_usd
        bar.update(len(responses))
        bar.set_postfix(
            errors=state["errors"], tokens=state["tokens"], cost=f"${state['cost']:.4f}"
        )

    return hook


def setting_metrics(predictions: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per-setting accuracy and error rates for DVC metrics.

    Confidence intervals are left to the analyze stage: importing statsmodels here would add
    seconds to every evaluation process's start-up.
    """
    out: dict[str, dict[str, float]] = {}
    for name, group in predictions.groupby("setting", sort=True):
        out[str(name)] = {
            "n": len(group),
            "accuracy": round(float(group["correct"].mean()), 6),
            "error_rate": round(float((group["status"] == "error").mean()), 6),
            "parse_error_rate": round(float((group["status"] == "parse_error").mean()), 6),
            "empty_rate": round(float((group["status"] == "empty").mean()), 6),
        }
    return out
