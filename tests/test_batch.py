"""Provider batches behind ``options.batch: true`` (issue 14 item 5), on the fake Batch API.

The evaluate stage runs as DVC runs it; the fake server answers batch lines through the same
responder and fault script as chat requests and logs every batch call (``batch_ops``). The run
stopped mid-batch is a real process (its exit code and one-line ``error:`` are the subject);
the other runs call the stage's ``main`` in-process (:mod:`cultureqa.testing.inprocess`): what
they check is what the stage wrote and sent, and a process would import litellm each time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.core.runlog import runlog_dir
from cultureqa.testing import FakeOpenAIServer, FaultPlan
from cultureqa.testing.inprocess import run_stage_inprocess
from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[1]
EVALUATE = [sys.executable, str(ROOT / "stages" / "evaluate.py"), "--benchmark", "synthetic"]
OUT = Path("data/eval/synthetic/model")
PRICE_IN, PRICE_OUT = 1e-7, 2e-7  # make_api_workspace's configured price
# litellm's afile_content runs its sync twin in an executor that hands back a coroutine; one the
# stage no longer awaits (a batch given up, the loop closed) is garbage-collected in this process
# now that the stage runs in-process, and Python warns about it here instead of at a process's exit.
pytestmark = pytest.mark.filterwarnings(
    "ignore:coroutine 'OpenAIFilesAPI.afile_content' was never awaited:RuntimeWarning"
)


def _workspace(tmp_path: Path, api_base: str, n: int, wait_s: float = 30.0) -> Path:
    ws = make_api_workspace(ROOT, tmp_path / "ws", n, api_base, 4, max_error_share=0.5)
    params = OmegaConf.load(ws / "params.yaml")
    params.model.options.batch = True
    params.model.options.batch_poll_s = 0.01
    params.model.options.batch_wait_s = wait_s
    OmegaConf.save(params, ws / "params.yaml")
    return ws


def _evaluate(ws: Path, process: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**stage_env(ws), "PYTHONPATH": str(ROOT / "src")}
    if not process:
        return run_stage_inprocess(Path(EVALUATE[1]), [*EVALUATE[2:], "--model", "model"], ws, env)
    return subprocess.run(
        [*EVALUATE, "--model", "model"], cwd=ws, env=env, capture_output=True, text=True
    )


def _client(ws: Path) -> dict[str, Any]:
    record = json.loads((runlog_dir(ws / OUT, ws) / "run.json").read_text()) | json.loads(
        (ws / OUT / "run.json").read_text()
    )
    return dict(record["api"]["client"])


def test_a_batch_answers_every_item_at_half_price_and_a_rerun_sends_nothing(
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer() as server:
        server.batch_polls = 2
        ws = _workspace(tmp_path, server.api_base, 6)
        first = _evaluate(ws)
        ops = [op for op, _ in server.batch_ops]
        client = _client(ws)
        again = _evaluate(ws)
        ops_after_rerun = len(server.batch_ops)
        chat_requests = server.hits
    assert first.returncode == 0, first.stderr
    assert ops.count("upload") == ops.count("create") == 1 and ops.count("retrieve") == 3
    assert chat_requests == 0  # nothing went the synchronous way
    assert client["sent"] == client["ok"] == 6 and client["batches_submitted"] == ["batch-2"]
    predictions = pd.read_parquet(ws / OUT / "predictions.parquet")
    assert (predictions["status"] == "ok").all()
    full = predictions["prompt_tokens"] * PRICE_IN + predictions["completion_tokens"] * PRICE_OUT
    assert predictions["cost_usd"].tolist() == pytest.approx((full * 0.5).tolist())
    assert again.returncode == 0 and ops_after_rerun == len(ops)  # answers came from the store


def test_a_stage_stopped_while_the_batch_runs_resumes_polling_it(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.batch_polls = 10**6  # never done while the first run waits
        ws = _workspace(tmp_path, server.api_base, 5, wait_s=0.2)
        first = _evaluate(ws, process=True)
        state_files = list((ws / ".cultureqa" / "batches").glob("*.json"))
        states = [json.loads(f.read_text()) for f in state_files]
        server.batch_polls = 0  # done at the next retrieval
        second = _evaluate(ws)
        ops = [op for op, _ in server.batch_ops]
    assert first.returncode == 2
    assert first.stderr.startswith("error: api-model: batch batch-2 is in_progress (")
    assert "rerun to resume polling it" in first.stderr and first.stderr.count("\n") == 1
    assert [state["batch_id"] for state in states] == ["batch-2"]
    assert second.returncode == 0, second.stderr
    assert ops.count("upload") == ops.count("create") == 1  # resumed, never submitted twice
    assert _client(ws)["batches_resumed"] == ["batch-2"]
    assert not state_files[0].exists()  # its answers are in the store now


def test_failed_batch_lines_are_item_errors_and_a_rerun_batches_only_those(
    tmp_path: Path,
) -> None:
    with FakeOpenAIServer(faults=FaultPlan(script=["ok", "400", "ok", "ok"])) as server:
        ws = _workspace(tmp_path, server.api_base, 4)
        first = _evaluate(ws)
        client = _client(ws)
        predictions = pd.read_parquet(ws / OUT / "predictions.parquet")
        second = _evaluate(ws)
        creates = [i for op, i in server.batch_ops if op == "create"]
        second_batch = server.batches[creates[-1]]
    assert first.returncode == 0, first.stderr  # 1 of 4 failed: under max_error_share 0.5
    assert client["failed_by_cause"] == {"batch HTTP 400": 1} and client["ok"] == 3
    failed = predictions[predictions["status"] == "error"]
    assert failed["error"].tolist() == ["batch HTTP 400: bad request"]
    assert second.returncode == 0
    assert len(creates) == 2 and second_batch["request_counts"]["total"] == 1


def test_batch_replies_without_usage_are_charged_by_counting(tmp_path: Path) -> None:
    """Issue 33 item 1 on the Batch API: no usage in the output file is never a $0 bill."""
    with FakeOpenAIServer(faults=FaultPlan(omit_usage=True)) as server:
        ws = _workspace(tmp_path, server.api_base, 5)
        done = _evaluate(ws)
        billed = [u["prompt_tokens"] * PRICE_IN + u["completion_tokens"] * PRICE_OUT
                  for u in server.billed]  # fmt: skip
    assert done.returncode == 0, done.stderr
    client = _client(ws)
    assert client["usage_estimated"] == 5 and client["usage_estimated_by"] == {"byte bound": 5}
    predictions = pd.read_parquet(ws / OUT / "predictions.parquet")
    assert predictions["cost_usd"].sum() >= sum(billed) * 0.5 > 0  # at least the batch bill
