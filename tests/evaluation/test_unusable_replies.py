"""Runs where the model gives nothing usable fail, naming the cause (issue 33 items 3 and 7).

Before, all-empty replies passed with accuracy 0.0 and 72 % of letters outside the options
passed below chance: ``max_error_share`` counted failed calls only. Now empty and unparsable
replies count toward it, each under its own cause in the run record and MLflow, and the line
that fails the run names the cause and quotes a reply. An all-429 run names the 429s and the
server's ``Retry-After``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from cultureqa.core.runlog import runlog_dir
from cultureqa.runs.tracking import api_metrics
from cultureqa.testing import FakeOpenAIServer, FaultPlan
from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[2]
OUT = Path("data/eval/synthetic/model")
PREDICTIONS = OUT / "predictions.parquet"
FAST_RETRY = {"attempts": 3, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 5.0}
N_ITEMS = 25


def _evaluate(tmp_path: Path, server: FakeOpenAIServer, **retry: Any) -> tuple[Any, Path]:
    ws = make_api_workspace(ROOT, tmp_path / "ws", N_ITEMS, server.api_base, 4,
                            retry={**FAST_RETRY, **retry})  # fmt: skip
    params = OmegaConf.load(ws / "params.yaml")
    params.model.ramp_up_s = 0.0
    OmegaConf.save(params, ws / "params.yaml")
    env = {**stage_env(ws), "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "stages" / "evaluate.py"), "--benchmark", "synthetic",
         "--model", "model"], cwd=ws, env=env, capture_output=True, text=True,
    )  # fmt: skip
    return done, ws


def _record(ws: Path) -> dict[str, Any]:
    stable = json.loads((ws / OUT / "run.json").read_text())
    return stable | json.loads((runlog_dir(ws / OUT, ws) / "run.json").read_text())


def _error_line(done: Any) -> str:
    lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_all_empty_replies_fail_the_run_naming_empty_replies(tmp_path: Path) -> None:
    with FakeOpenAIServer(faults=FaultPlan(empty=1.0)) as server:
        done, ws = _evaluate(tmp_path, server)
    assert done.returncode == 1, done.stderr
    assert _error_line(done) == (
        "error: 100.0% of items have no usable answer (limit 10.0%, max_error_share): 100.0% "
        f"empty replies (no text); see {ws / PREDICTIONS} columns 'status', 'error' and 'raw'"
    )
    record = _record(ws)
    assert record["error_causes"] == {"empty": {"items": N_ITEMS, "share": 1.0, "example": ""}}
    metrics = api_metrics(record)
    assert metrics["unusable.empty"] == N_ITEMS and metrics["error_share"] == 1.0


def _outside_the_options(messages: list[dict[str, Any]]) -> str:
    """72 % of the items (18 of 25) get a letter the three options do not have."""
    number = int(re.search(r"Synthetic question (\d+)\?", messages[-1]["content"]).group(1))  # type: ignore[union-attr]
    return "D" if number < 18 else "A"


def test_letters_outside_the_options_fail_the_run_quoting_one(tmp_path: Path) -> None:
    with FakeOpenAIServer(_outside_the_options) as server:
        done, ws = _evaluate(tmp_path, server)
    assert done.returncode == 1, done.stderr
    assert _error_line(done) == (
        "error: 72.0% of items have no usable answer (limit 10.0%, max_error_share): 72.0% "
        f"unparsable replies (no option to read: no_letter 18), e.g. 'D'; see {ws / PREDICTIONS} "
        "columns 'status', 'error' and 'raw'"
    )
    record = _record(ws)
    assert record["counts"]["parse_errors"] == 18 and record["error_share"] == 0.72
    assert record["error_causes"]["unparsable"] == {
        "items": 18, "share": 0.72, "example": "D", "by_cause": {"no_letter": 18},
    }  # fmt: skip
    metrics = api_metrics(record)
    assert metrics["unusable.unparsable"] == 18 and metrics["unusable.unparsable.no_letter"] == 18
    env = {**stage_env(ws), "PYTHONPATH": str(ROOT / "src")}
    analyzed = subprocess.run(
        [sys.executable, str(ROOT / "stages" / "analyze.py"), "--benchmark", "synthetic"],
        cwd=ws, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert analyzed.returncode == 0, analyzed.stderr
    report = (ws / "reports" / "synthetic" / "tables.md").read_text(encoding="utf-8")
    accounting = report.split("## Run accounting", 1)[1]
    assert "| model | 25 | 7 | 0 | 18 | 0 | 0 | 0.720 | 0.100 | 0 | 0 |" in accounting
    assert "- model: unparsable: 18 items (no_letter 18), e.g. 'D'" in accounting


def test_an_all_429_run_names_the_429s_and_the_servers_retry_after(tmp_path: Path) -> None:
    """Retry-After 2 s against retry.max_wait_s 0.1 s: cut short, said once, counted."""
    plan = FaultPlan(rate_limit=1.0, retry_after_s=2.0)
    with FakeOpenAIServer(faults=plan) as server:
        done, ws = _evaluate(tmp_path, server)
        sent = server.hits
    assert done.returncode == 1, done.stderr
    client = _record(ws)["api"]["client"]
    assert client["failed_by_cause"] == {"429": N_ITEMS}
    assert client["retry_after_max_s"] == 2.0 and client["retry_after_capped"] == sent
    assert _error_line(done) == (
        "error: 100.0% of items have no usable answer (limit 10.0%, max_error_share): 100.0% "
        f"failed calls ({N_ITEMS} HTTP 429 (rate limited), each after up to 3 attempts); the "
        "server asked to wait up to 2 s (Retry-After), longer than retry.max_wait_s = 0.1 s, so "
        f"retries came early ({sent} times): raise retry.max_wait_s to at least 2, or lower the "
        f"model's concurrency; see {ws / PREDICTIONS} columns 'status', 'error' and 'raw'"
    )
    said = [line for line in done.stderr.splitlines() if "longer than retry.max_wait_s" in line]
    assert len(said) == 2  # the warning, once per run, and the error line
