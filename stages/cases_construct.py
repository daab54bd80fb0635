"""DVC stage: cases construct — one 6-option typed item per case.

``cases.construct.model: null`` takes the pre-constructed sample items (offline default); a model
config constructs with that LLM through the response store, retrying rejected output.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)
import pandas as pd

from cultureqa.cases.construct import (
    ATTEMPT_COLUMNS,
    ConstructConfig,
    ConstructionResult,
    construct_items,
    load_construct_template,
)
from cultureqa.cases.ingest import load_sample_items
from cultureqa.core.config import load_params, run_stage, select, setup_stage
from cultureqa.core.io import write_json, write_parquet
from cultureqa.core.runlog import VOLATILE_COLUMNS, runlog_dir
from cultureqa.core.spend import LEDGER, budget_from, build_guard, team_from
from cultureqa.llm.door import open_client
from cultureqa.llm.store import open_store, store_location


def construct_with_model(
    cases: pd.DataFrame, model_cfg: dict[str, Any], config: ConstructConfig, root: Path
) -> tuple[ConstructionResult, int]:
    template = load_construct_template(root)
    store = open_store(store_location())
    try:
        client = open_client(str(model_cfg["id"]), model_cfg, store)

        async def run() -> ConstructionResult:
            try:
                return await construct_items(cases, client, template, config)
            finally:
                await client.aclose()  # records the client's counters in the ledger

        return asyncio.run(run()), client.calls
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    setup_stage()
    root = Path.cwd()
    params = load_params(root / "params.yaml")
    cfg = select(params, "cases")
    build, c = root / cfg["paths"]["build"], dict(cfg["construct"])
    cases = pd.read_parquet(build / "annotate" / "cases.parquet")
    model_cfg = c.pop("model", None)
    max_failed = float(c.pop("max_failed_share"))
    out = build / "construct"
    with build_guard(out, budget_from(params), team_from(params)):
        if model_cfg is None:
            items = load_sample_items(root / cfg["sources"]["items"], cases["case_id"])
            attempts = pd.DataFrame(columns=list(ATTEMPT_COLUMNS))
            result, calls = ConstructionResult(items, attempts), 0
        else:
            result, calls = construct_with_model(cases, model_cfg, ConstructConfig(**c), root)
            LEDGER.raise_if_stopped()  # refused requests are not "rejected items"
        write_parquet(out / "items.parquet", result.items)
        write_attempts(out, result.attempts, calls)
        metrics = construct_metrics(result, cases, model_cfg)
        write_json(root / cfg["paths"]["metrics"] / "construct.json", metrics)
    share = len(result.failed) / max(1, len(cases))
    print(f"cases construct ({metrics['origin']}): {len(result.items)} items, {calls} calls")
    if share > max_failed:
        print(
            f"error: {share:.1%} of cases yielded no valid item (limit {max_failed:.1%}); "
            f"see {out / 'attempts.parquet'}",
            file=sys.stderr,
        )
        return 1
    return 0


def construct_metrics(
    result: ConstructionResult, cases: pd.DataFrame, model_cfg: dict[str, Any] | None
) -> dict[str, Any]:
    """Origin, counts, rejections by reason, tokens and cost (stable: no call counts)."""
    attempts = result.attempts
    return {
        "origin": "llm" if model_cfg else "sample",
        "model": (model_cfg or {}).get("id"),
        "cases": len(cases), "items": len(result.items), "failed": list(result.failed),
        "requests": len(attempts),
        "rejections_by_reason": result.rejections["reason"].value_counts().to_dict(),
        "tokens": int(attempts["prompt_tokens"].sum() + attempts["completion_tokens"].sum()),
        "cost_usd": float(attempts["cost_usd"].sum()),
    }  # fmt: skip


def write_attempts(out: Path, attempts: pd.DataFrame, calls: int) -> None:
    """Attempts (a DVC output) without what differs between a fresh run and a cached rerun.

    Latencies, cache flags and the call count go to the run log (:mod:`cultureqa.core.runlog`), so
    the output and ``metrics/cases/construct.json`` hash the same on every rerun.
    """
    volatile = [c for c in VOLATILE_COLUMNS if c in attempts.columns]
    write_parquet(out / "attempts.parquet", attempts.drop(columns=volatile))
    side = runlog_dir(out)
    write_parquet(side / "attempts_calls.parquet", attempts[volatile].reset_index(drop=True))
    write_json(side / "construct.json", {"model_calls": calls})


if __name__ == "__main__":
    sys.exit(run_stage(main))
