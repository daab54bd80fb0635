"""A cap that holds when replies carry no ``usage`` (issue 33 item 1), on both transports.

Older vLLM, llama.cpp's server, proxies and streams without ``stream_options`` send no usage.
Before, such a reply was charged $0 and the reservation released at $0: with a $0.05 cap every
request went out (the server billed 9.5× the cap) and the stage ended rc 0. Now each such reply
is charged by counting its tokens (here: bounded from above, the model being unknown to any
tokenizer), so the server's own bill stays under the cap and the stage stops on the budget.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from cultureqa.core.runlog import runlog_dir
from cultureqa.llm.api.chat_client import ChatClient, ChatConfig
from cultureqa.llm.api.transport import ChatReply
from cultureqa.llm.base import GenerateRequest, Message
from cultureqa.llm.pricing import BYTE_BOUND
from cultureqa.runs.tracking import api_metrics, metric_key
from cultureqa.testing import FakeOpenAIServer, FaultPlan
from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[1]
OUT = Path("data/eval/synthetic/model")
FAST_RETRY = {"attempts": 3, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 5.0}
CAP, P_IN, P_OUT = 0.05, 1e-5, 2e-4


def _run(tmp_path: Path, transport: str, concurrency: int, n_items: int) -> dict[str, Any]:
    with FakeOpenAIServer(latency_s=0.02, faults=FaultPlan(omit_usage=True)) as server:
        ws = make_api_workspace(ROOT, tmp_path / "ws", n_items, server.api_base, concurrency,
                                retry=FAST_RETRY, transport=transport)  # fmt: skip
        params = OmegaConf.load(ws / "params.yaml")
        params.model.price = {"input_per_token": P_IN, "output_per_token": P_OUT}
        params.model.ramp_up_s = 0.0  # every slot at once: the hardest case for the cap
        params.spend.budget_usd = CAP
        OmegaConf.save(params, ws / "params.yaml")
        env = {**stage_env(ws), "PYTHONPATH": str(ROOT / "src")}
        done = subprocess.run(
            [sys.executable, str(ROOT / "stages" / "evaluate.py"), "--benchmark", "synthetic",
             "--model", "model"], cwd=ws, env=env, capture_output=True, text=True,
        )  # fmt: skip
        billed = sum(u["prompt_tokens"] * P_IN + u["completion_tokens"] * P_OUT
                     for u in server.billed)  # fmt: skip
        replies = len(server.billed)
    record = json.loads((runlog_dir(ws / OUT, ws) / "run.json").read_text())
    return {"done": done, "billed": billed, "replies": replies, "record": record}


@pytest.mark.parametrize("transport", ["http", "litellm"])
@pytest.mark.parametrize("concurrency", [16, 256])
def test_replies_without_usage_are_charged_and_the_cap_holds(
    tmp_path: Path, transport: str, concurrency: int
) -> None:
    n_items = 300
    out = _run(tmp_path, transport, concurrency, n_items)
    done, record = out["done"], out["record"]
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: budget reached: "), done.stderr
    assert 0 < out["replies"] < n_items  # it sent some, then stopped
    assert out["billed"] <= CAP  # the guarantee, from the server's own count
    budget, client = record["api"]["budget"], record["api"]["client"]
    assert budget["spent_usd"] >= out["billed"] > 0  # charged at least what was billed
    assert budget["spent_usd"] <= CAP and budget["over_estimate"] == 0
    # every reply was estimated, and the record says how
    assert client["usage_estimated"] == out["replies"]
    assert client["usage_estimated_by"] == {BYTE_BOUND: out["replies"]}
    summary = next(line for line in done.stdout.splitlines() if line.startswith("synthetic/"))
    assert f"{out['replies']} replies without usage charged by counting their tokens" in summary
    metrics = api_metrics(record)  # what MLflow receives
    assert metrics["usage_estimated"] == out["replies"]
    assert metrics[metric_key("usage_estimated", BYTE_BOUND)] == out["replies"]


def _request(text: str = "Which dish is from Aceh? A. rendang B. mie aceh C. gudeg") -> Any:
    return GenerateRequest(messages=(Message("user", text),), max_tokens=8)


def test_a_known_model_is_counted_by_its_own_tokenizer() -> None:
    """gpt-4o is in litellm's table: its tokens are counted by tiktoken, and the record says so."""
    import litellm

    config = ChatConfig("m", "openai/gpt-4o", api_base="http://127.0.0.1:9/v1")
    client = ChatClient(config)
    usage = client._usage(ChatReply("B", None, None), _request())
    messages = [{"role": "user", "content": _request().messages[0].content}]
    assert usage.prompt_tokens == litellm.token_counter(model="openai/gpt-4o", messages=messages)
    assert usage.estimated_by == "tokenizer (tiktoken)" and usage.cost_usd > 0
    assert client.stats.as_dict()["usage_estimated_by"] == {"tokenizer (tiktoken)": 1}


def test_an_unknown_model_is_bounded_from_above_never_charged_zero() -> None:
    config = ChatConfig("m", "openai/x", "http://127.0.0.1:9/v1", transport="http",
                        input_cost_per_token=P_IN, output_cost_per_token=P_OUT)  # fmt: skip
    usage = ChatClient(config)._usage(ChatReply("B", None, None), _request())
    request = _request()
    assert usage.estimated_by == BYTE_BOUND
    assert usage.prompt_tokens >= len(request.messages[0].content.split())  # an upper bound
    assert usage.completion_tokens == request.max_tokens or usage.completion_tokens >= 1
    assert usage.cost_usd == pytest.approx(
        usage.prompt_tokens * P_IN + usage.completion_tokens * P_OUT
    )
    # a reply that states its usage is charged as stated, and nothing is counted as estimated
    stated = ChatClient(config)
    assert stated._usage(ChatReply("B", 12, 1), request).estimated_by == ""
    assert stated.stats.usage_estimated == {}
