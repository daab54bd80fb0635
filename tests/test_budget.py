"""Budget cap (issues 14 and 25): a stage never spends past ``spend.budget_usd``, says so, resumes.

Each reply of the fake server costs exactly $0.01 here (one completion token at $0.01, prompts
free, ``max_tokens`` 1), so the cap's arithmetic is visible in the server's request log. The
last test prices prompts too, at concurrency 16, from the server's own usage figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.core.runlog import runlog_dir
from cultureqa.core.spend import BUDGET, ApiStopped, budget_from
from cultureqa.llm.base import GenerateRequest, Message
from cultureqa.mocqa_shared.models import run_models
from cultureqa.testing import FakeOpenAIServer
from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[1]
EVALUATE = [sys.executable, str(ROOT / "stages" / "evaluate.py"), "--benchmark", "synthetic"]
OUT = Path("data/eval/synthetic/model")
FAST_RETRY = {"attempts": 3, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 5.0}
PER_REQUEST_USD = 0.01
CONCURRENCY = 1  # the cache layer leases 2 × concurrency: at most 2 requests past the cap


def _workspace(tmp_path: Path, api_base: str, n_items: int) -> Path:
    ws = make_api_workspace(ROOT, tmp_path / "ws", n_items, api_base, CONCURRENCY, retry=FAST_RETRY)
    params = OmegaConf.load(ws / "params.yaml")
    params.model.price = {"input_per_token": 0.0, "output_per_token": PER_REQUEST_USD}
    params.model.decoding.max_tokens = 1  # worst case = what a one-token reply costs: $0.01
    OmegaConf.save(params, ws / "params.yaml")
    return ws


def _set_budget(ws: Path, usd: Any) -> None:
    params = OmegaConf.load(ws / "params.yaml")
    params.spend.budget_usd = usd
    OmegaConf.save(params, ws / "params.yaml")


def _evaluate(ws: Path) -> subprocess.CompletedProcess[str]:
    env = {**stage_env(ws), "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [*EVALUATE, "--model", "model"], cwd=ws, env=env, capture_output=True, text=True
    )


def _run_record(ws: Path) -> dict[str, Any]:
    return json.loads((runlog_dir(ws / OUT, ws) / "run.json").read_text()) | json.loads(
        (ws / OUT / "run.json").read_text()
    )


def test_the_cap_stops_the_stage_and_a_higher_cap_sends_only_the_rest(tmp_path: Path) -> None:
    n_items, cap = 20, 0.05
    with FakeOpenAIServer() as server:
        ws = _workspace(tmp_path, server.api_base, n_items)
        _set_budget(ws, cap)
        first = _evaluate(ws)
        sent_first = server.hits
        record = _run_record(ws)
        predictions = pd.read_parquet(ws / OUT / "predictions.parquet")

        _set_budget(ws, 1.0)
        second = _evaluate(ws)
        prompts = Counter(json.dumps(r.messages, sort_keys=True) for r in server.records)

    assert first.returncode == 2, first.stderr
    lines = first.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: budget reached: "), first.stderr
    assert "of the $0.05 cap (spend.budget_usd)" in lines[0]
    held = n_items - sent_first
    assert f"{held} requests not sent (reason: budget)" in lines[0]
    # $0.01 a request, reserved before sending: exactly 5 fit under the cap, none lands after it
    assert sent_first == 5
    assert record["api"]["cache"]["not_sent_budget"] == held
    assert record["api"]["budget"]["spent_usd"] == pytest.approx(sent_first * PER_REQUEST_USD)
    assert len(predictions) == n_items  # what it has is written, the rest marked not sent
    unsent = predictions[predictions["error"].str.startswith("not sent: budget")]
    assert len(unsent) == held and (unsent["status"] == "error").all()

    assert second.returncode == 0, second.stderr
    assert server.hits == n_items  # the rerun sent only the held-back requests
    assert set(prompts.values()) == {1}  # and none twice


def test_a_cap_of_zero_sends_nothing(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        ws = _workspace(tmp_path, server.api_base, 4)
        _set_budget(ws, 0)
        done = _evaluate(ws)
        sent = server.hits
    assert done.returncode == 2 and "4 requests not sent (reason: budget)" in done.stderr
    assert sent == 0


def test_no_cap_by_default_and_a_bad_cap_is_named(tmp_path: Path) -> None:
    assert budget_from(OmegaConf.load(ROOT / "params.yaml")) is None
    with FakeOpenAIServer() as server:
        ws = _workspace(tmp_path, server.api_base, 3)
        _set_budget(ws, "lots")
        done = _evaluate(ws)
        sent = server.hits
    assert done.returncode == 2 and sent == 0
    assert done.stderr.strip() == (  # the params range check names it before any model call
        f"error: {ws / 'params.yaml'}: 'spend.budget_usd' = 'lots' is out of range "
        "(must be a number >= 0 or null)"
    )


def test_a_build_stage_stops_on_the_budget_like_on_a_tripped_breaker(tmp_path: Path) -> None:
    """The ID-MoCQA build's model calls (generator, judges) raise ApiStopped naming the budget."""
    requests = [
        GenerateRequest(messages=(Message("user", f"clue {i}"),), max_tokens=1) for i in range(6)
    ]
    with FakeOpenAIServer() as server:
        model = {
            "id": "judge", "backend": "litellm", "concurrency": CONCURRENCY,
            "options": {"litellm_model": "openai/judge", "api_base": server.api_base},
            "retry": FAST_RETRY,
            "price": {"input_per_token": 0.0, "output_per_token": PER_REQUEST_USD},
        }  # fmt: skip
        BUDGET.reset(0.02)
        try:
            with pytest.raises(ApiStopped, match=r"budget reached: .* \(spend.budget_usd\)"):
                run_models({"judge": (model, requests)}, tmp_path / "store.sqlite")
        finally:
            BUDGET.reset(None)
        sent = server.hits
    assert sent == 2


def _priced(record: Any, p_in: float, p_out: float) -> float:
    """What the fake server billed for one request: its own usage figures at the prices."""
    prompt = sum(len(str(m.get("content", "")).split()) for m in record.messages)
    return prompt * p_in + 1 * p_out  # every reply is "A": one completion token


def test_the_spend_never_passes_the_cap_at_concurrency_16(tmp_path: Path) -> None:
    """Reserve-then-settle: 16 requests in flight together still cannot pass a tiny cap.

    Before reservations a $0.05 cap at concurrency 16 spent $0.18: every request in flight when
    the cap was reached still landed. The line and run.json agree on what was not sent.
    """
    n_items, cap, p_in, p_out = 120, 0.05, 1e-5, 2e-4
    with FakeOpenAIServer(latency_s=0.05) as server:
        ws = make_api_workspace(ROOT, tmp_path / "ws", n_items, server.api_base, 16,
                                retry=FAST_RETRY)  # fmt: skip
        params = OmegaConf.load(ws / "params.yaml")
        params.model.price = {"input_per_token": p_in, "output_per_token": p_out}
        params.model.ramp_up_s = 0.0  # all 16 slots at once: the hardest case for the cap
        OmegaConf.save(params, ws / "params.yaml")
        _set_budget(ws, cap)
        done = _evaluate(ws)
        billed = [_priced(r, p_in, p_out) for r in server.records if r.outcome == "ok"]
        peak = server.max_in_flight
    record = _run_record(ws)
    assert done.returncode == 2, done.stderr
    assert peak > 1  # requests really overlapped
    assert sum(billed) <= cap  # the guarantee, from the server's side
    assert record["api"]["budget"]["spent_usd"] == pytest.approx(sum(billed))
    assert record["api"]["budget"]["over_estimate"] == 0
    # refused only once the next worst case (prompt bound + 8 completion tokens) no longer fit
    worst = max(record["api"]["budget"]["worst_usd"], 0.0)
    assert sum(billed) > cap - worst
    held = n_items - len(billed)
    assert held > 0
    summary = next(line for line in done.stdout.splitlines() if line.startswith("synthetic/"))
    assert f"; {held} not sent)" in summary, summary
    assert record["counts"]["not_sent"] == held
    assert record["api"]["cache"]["not_sent_budget"] == held
    assert f"{held} requests not sent (reason: budget)" in done.stderr


def test_reservations_keep_hundreds_of_concurrent_requests_under_the_cap() -> None:
    """The arithmetic alone: 500 requests race for a $1 cap with random worst cases and bills."""
    import asyncio
    import random

    from cultureqa.core.spend import Budget

    budget, rng = Budget(), random.Random(0)
    budget.reset(1.0)

    async def one() -> None:
        worst = rng.uniform(0.01, 0.1)
        if await budget.reserve(worst):
            await asyncio.sleep(rng.uniform(0.0, 0.002))
            budget.settle(worst, worst * rng.random())

    async def race() -> None:
        await asyncio.gather(*(one() for _ in range(500)))

    asyncio.run(race())
    assert budget.spent_usd <= 1.0
    assert budget.spent_usd > 1.0 - budget.worst_usd  # it stopped only when the next could not fit
    assert budget.reserved_usd == pytest.approx(0.0) and budget.over_estimate == 0


def test_a_cap_on_a_model_nobody_can_price_stops_before_any_request(tmp_path: Path) -> None:
    """litellm transport, a model litellm's table lacks, no configured price: no cap is keepable."""
    from cultureqa.llm.base import ModelConfigError

    requests = [GenerateRequest(messages=(Message("user", "q"),), max_tokens=1)]
    with FakeOpenAIServer() as server:
        model = {
            "id": "mystery", "backend": "litellm", "concurrency": 1,
            "options": {"litellm_model": "openai/mystery-model", "api_base": server.api_base,
                        "transport": "litellm"},
            "retry": FAST_RETRY, "price": None,
        }  # fmt: skip
        BUDGET.reset(1.0)
        try:
            with pytest.raises(ModelConfigError, match="litellm has no price for openai/mystery"):
                run_models({"judge": (model, requests)}, tmp_path / "store.sqlite")
        finally:
            BUDGET.reset(None)
        sent = server.hits
    assert sent == 0


def test_a_cap_below_one_requests_worst_case_says_so_and_what_to_change(tmp_path: Path) -> None:
    """Issue 33 item 2: not "budget reached … $0.0000", but what one request can cost."""
    with FakeOpenAIServer() as server:
        ws = _workspace(tmp_path, server.api_base, 4)
        params = OmegaConf.load(ws / "params.yaml")
        params.model.decoding.max_tokens = 64  # 64 × $0.01 = $0.64 of completion alone
        OmegaConf.save(params, ws / "params.yaml")
        _set_budget(ws, 0.05)
        done = _evaluate(ws)
        sent = server.hits
    record = _run_record(ws)
    worst = record["api"]["budget"]["unaffordable_usd"]
    assert sent == 0 and done.returncode == 2
    assert worst >= 64 * PER_REQUEST_USD
    assert done.stderr.strip() == (
        f"error: one request can cost up to ${worst:.4f} (its prompt, bounded from above, plus "
        "max_tokens, at the model's price), above the $0.05 cap (spend.budget_usd), so none was "
        "sent: 4 requests not sent (reason: budget); raise spend.budget_usd above "
        f"${worst:.4f}, or lower the model's decoding.max_tokens or the prompt's length"
    )
