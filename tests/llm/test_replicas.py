"""Replicas of one served model: routing, backing off a failing replica, per-replica counts."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from cultureqa.compose import compose_params
from cultureqa.core.spend import api_stats
from cultureqa.llm.api.replicas import ReplicaPool
from cultureqa.llm.api.retry import RetryConfig
from cultureqa.llm.base import GenerateRequest, Message, ModelConfigError
from cultureqa.llm.cached import CachedClient
from cultureqa.llm.fake import ScriptedModel
from cultureqa.llm.registry import build_model
from cultureqa.llm.store import open_store
from cultureqa.runs.tracking import api_metrics
from cultureqa.testing import FakeOpenAIServer, FaultPlan

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(autouse=True)
def _test_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CULTUREQA_TEST_KEY", "sk-test")


def _cfg(api_base: Any, concurrency: int = 4, attempts: int = 4) -> dict[str, Any]:
    return {
        "id": "served",
        "backend": "litellm",
        "concurrency": concurrency,
        "ramp_up_s": 0.0,
        "options": {
            "litellm_model": "openai/served-model",
            "api_base": api_base,
            "api_key_env": "CULTUREQA_TEST_KEY",
        },
        "retry": {"attempts": attempts, "initial_wait_s": 0.05, "max_wait_s": 0.4, "timeout_s": 5},
    }


def _requests(n: int) -> list[GenerateRequest]:
    return [GenerateRequest(messages=(Message("user", f"question {i}"),)) for i in range(n)]


def _run(cfg: dict[str, Any], n: int, tmp_path: Any) -> tuple[list[Any], dict[str, Any]]:
    """Generate ``n`` answers through the store, as a stage does (it bounds what is in flight)."""
    built = build_model(cfg)
    store = open_store(tmp_path / "store.sqlite")
    client = CachedClient(built.client, store, built.identity, built.chunk_size)

    async def go() -> list[Any]:
        try:
            return await client.generate(_requests(n))
        finally:
            await client.aclose()

    try:
        out = asyncio.run(go())
    finally:
        store.close()
    return out, api_stats(client)["client"]


def _refused_base() -> str:
    """An address where nothing listens: every connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_failing_replica_is_backed_off_and_its_requests_answered_elsewhere(tmp_path: Any) -> None:
    # the second replica answers 5 requests, then fails every one (a replica dying mid-run)
    faulty = FaultPlan(script=["ok"] * 5, server_error=1.0)
    with FakeOpenAIServer(latency_s=0.01) as good, FakeOpenAIServer(faults=faulty) as bad:
        out, stats = _run(_cfg([good.api_base, bad.api_base]), 60, tmp_path)
        seen = {good.api_base: good.hits, bad.api_base: bad.hits}
    assert [r.status for r in out] == ["ok"] * 60
    per = stats["replicas"]
    assert {base: per[base]["sent"] for base in seen} == seen
    assert per[bad.api_base]["ok"] == 5
    assert per[bad.api_base]["failed_by_cause"] == {"5xx": seen[bad.api_base] - 5}
    assert per[bad.api_base]["backoffs"] >= 1
    assert per[good.api_base]["failed_by_cause"] == {} and per[good.api_base]["backoffs"] == 0
    assert stats["sent"] == sum(seen.values()) and stats["ok"] == 60
    assert stats["retries"] == seen[bad.api_base] - 5  # each failure retried, none lost
    assert stats["failed_by_cause"] == {} and stats["stopped"] is None
    assert seen[bad.api_base] < 30  # backed off: far fewer than its even share


def test_refused_replica_never_trips_the_breaker(tmp_path: Any) -> None:
    dead = _refused_base()
    cfg = _cfg([dead, "placeholder"], concurrency=8)
    cfg["retry"]["breaker_after"] = 3  # a burst of refusals from one replica must not stop the run
    with FakeOpenAIServer() as good:
        cfg["options"]["api_base"] = [dead, good.api_base]
        out, stats = _run(cfg, 40, tmp_path)
        served = good.hits
    assert [r.text for r in out] == ["A"] * 40
    per = stats["replicas"]
    assert per[dead]["ok"] == 0 and per[dead]["backoffs"] >= 1
    assert sum(per[dead]["failed_by_cause"].values()) == per[dead]["sent"] >= 1
    assert per[good.api_base]["sent"] == served == 40
    assert stats["stopped"] is None


def test_every_replica_refusing_trips_the_breaker(tmp_path: Any) -> None:
    cfg = _cfg([_refused_base(), _refused_base()], attempts=3)
    cfg["retry"]["breaker_after"] = 2
    out, stats = _run(cfg, 30, tmp_path)
    assert all(r.status == "error" for r in out)
    assert stats["stopped"] and "no connection" in stats["stopped"]
    assert stats["not_sent"] > 0  # the rest was not sent once nothing answered anywhere


def test_a_rejected_key_on_every_replica_trips_the_breaker(tmp_path: Any) -> None:
    cfg = _cfg(["a", "b"])
    cfg["retry"]["breaker_after"] = 3
    plan = FaultPlan(fail_status=401)
    with FakeOpenAIServer(faults=plan) as one, FakeOpenAIServer(faults=plan) as two:
        cfg["options"]["api_base"] = [one.api_base, two.api_base]
        out, stats = _run(cfg, 30, tmp_path)
        seen = one.hits + two.hits
    assert all(r.status == "error" for r in out)
    assert stats["stopped"] and "HTTP 401" in stats["stopped"]
    assert "CULTUREQA_TEST_KEY" in stats["stopped"]  # the fix names the variable to set
    assert stats["retries"] == 0 and seen == stats["sent"] < 30  # never retried, stopped early
    assert all(r["backoffs"] == 0 for r in stats["replicas"].values())  # not a replica's fault


def test_an_empty_reply_is_retried_without_backing_the_replica_off(tmp_path: Any) -> None:
    # The wrapped client makes one attempt; an empty reply comes back as an EmptyReply error.
    with FakeOpenAIServer(faults=FaultPlan(script=["empty"])) as server:
        out, stats = _run(_cfg([server.api_base]), 1, tmp_path)
    assert [r.text for r in out] == ["A"]
    assert stats["retries_by_cause"] == {"empty": 1}
    assert stats["replicas"][server.api_base]["backoffs"] == 0


@pytest.mark.parametrize("transport", ["http", "litellm"])
def test_each_item_records_its_attempts_retries_and_waits_across_attempts(
    tmp_path: Any, transport: str
) -> None:
    """Per-item accounting through the pool: every attempt counted, retries by cause."""
    plan = FaultPlan(script=["429", "500", "empty"], retry_after_s=0.01)
    with FakeOpenAIServer(faults=plan, latency_s=0.05) as server:
        cfg = _cfg([server.api_base], attempts=5)
        cfg["options"]["transport"] = transport
        cfg["price"] = {"input_per_token": 0.0, "output_per_token": 0.0}
        (out,), stats = _run(cfg, 1, tmp_path)
        hits = server.hits
    assert out.text == "A" and hits == 4 == out.attempts
    assert dict(out.retries_by_cause) == {"429": 1, "5xx": 1, "empty": 1}
    assert stats["retries_by_cause"] == {"429": 1, "5xx": 1, "empty": 1}
    assert 0.05 <= out.server_latency_s < out.latency_s
    assert out.wait_s > 0 and out.wait_s + out.server_latency_s <= out.latency_s + 1e-6


def test_empty_after_every_attempt_comes_back_ok_and_empty_for_the_scorers(tmp_path: Any) -> None:
    with FakeOpenAIServer(faults=FaultPlan(empty=1.0)) as server:
        out, stats = _run(_cfg([server.api_base], attempts=3), 2, tmp_path)
        seen = server.hits
    assert [(r.status, r.text) for r in out] == [("ok", "")] * 2  # scored as `empty`, not errors
    # retried like the chat client retries it: retry.empty_attempts (2) per item, not attempts
    assert seen == 4 and stats["empty"] == 2 and stats["failed_by_cause"] == {}
    assert stats["replicas"][server.api_base]["backoffs"] == 0


@pytest.mark.parametrize(
    ("replies", "expected"), [(["", "B"], ("ok", "B")), ([" "], ("ok", ""))], ids=["then", "never"]
)
def test_a_client_returning_ok_without_text_is_retried_the_same_way(
    replies: list[str], expected: tuple[str, str]
) -> None:
    """Clients that report an empty reply as ``ok`` with no text get the same retries."""
    fast = RetryConfig(attempts=3, initial_wait_s=0.01, max_wait_s=0.02)
    pool = ReplicaPool("m", ["r1"], lambda base: ScriptedModel(replies=replies), fast)
    [reply] = asyncio.run(pool.generate(_requests(1)))
    assert (reply.status, reply.text) == expected
    assert pool.stats.as_dict()["empty"] == int(expected[1] == "")


def test_least_outstanding_sends_more_to_the_faster_replica(tmp_path: Any) -> None:
    with FakeOpenAIServer(latency_s=0.01) as fast, FakeOpenAIServer(latency_s=0.25) as slow:
        out, stats = _run(_cfg([slow.api_base, fast.api_base], concurrency=2), 80, tmp_path)
        fast_n, slow_n = fast.hits, slow.hits
    assert [r.status for r in out] == ["ok"] * 80
    assert fast_n + slow_n == 80 and slow_n >= 2  # both used
    assert fast_n > 2 * slow_n
    assert stats["replicas"][fast.api_base]["sent"] == fast_n


def test_a_replica_list_override_composes_into_a_pool() -> None:
    overrides = ["model=llama_3_3_70b", "model.options.api_base=[http://g1:8000/v1,http://g2/v1]"]
    params = OmegaConf.create(compose_params(ROOT / "conf", overrides))  # as stages load it
    built = build_model(params.model)
    assert isinstance(built.client, ReplicaPool)
    assert list(built.client.stats.replicas) == ["http://g1:8000/v1", "http://g2/v1"]


def test_store_identity_names_the_served_model_not_the_hosts() -> None:
    one = build_model(_cfg(["http://h1:8000/v1", "http://h2:8000/v1"]))
    other = build_model(_cfg(["http://h3:8000/v1"]))
    single = build_model(_cfg("http://h1:8000/v1"))
    assert isinstance(one.client, ReplicaPool) and isinstance(other.client, ReplicaPool)
    assert one.identity == other.identity
    assert "h1" not in str(one.identity)
    assert single.identity["api_base"] == "http://h1:8000/v1"  # a string stays one client
    assert not isinstance(single.client, ReplicaPool)


@pytest.mark.parametrize(
    ("bases", "message"), [([], "empty list"), (["http://a/v1", "http://a/v1"], "repeats")]
)
def test_bad_replica_lists_are_config_errors(bases: list[str], message: str) -> None:
    with pytest.raises(ModelConfigError, match=message):
        build_model(_cfg(bases))


def test_replica_counts_reach_mlflow_metrics() -> None:
    api = {
        "client": {
            "sent": 3, "ok": 2, "retries": 1, "retries_by_cause": {"Timeout": 1},
            "failed_by_cause": {}, "not_sent": 0, "stopped": None,
            "replicas": {
                "http://h1:8000/v1": {"sent": 2, "ok": 2, "failed_by_cause": {},
                                      "backoffs": 0, "backoff_s": 0.0},
                "http://h2:8000/v1": {"sent": 1, "ok": 0, "failed_by_cause": {"Timeout": 1},
                                      "backoffs": 1, "backoff_s": 0.5},
            },
        }
    }  # fmt: skip
    metrics = api_metrics({"api": api})
    assert metrics["replica.h1_8000.sent"] == 2
    assert metrics["replica.h2_8000.failed.Timeout"] == 1
    assert metrics["replica.h2_8000.backoffs"] == 1


@pytest.mark.parametrize("faults", ["429", "400"])
def test_the_client_and_the_pool_count_the_same_failures_alike(tmp_path: Any, faults: str) -> None:
    """Issue 33 item 9: one loop, one set of counters, by cause (not by exception class)."""
    plan = FaultPlan(rate_limit=1.0, retry_after_s=0.01) if faults == "429" else None
    plan = plan or FaultPlan(fail_status=400)
    counted = {}
    for kind, base in (("client", str), ("pool", lambda b: [b])):
        with FakeOpenAIServer(faults=plan) as server:
            cfg = _cfg(base(server.api_base), attempts=3)
            cfg["retry"]["breaker_after"] = 100  # count every item's failure, no early stop
            _, stats = _run(cfg, 6, tmp_path / kind)
        shared = ("sent", "ok", "empty", "retries", "retries_by_cause", "failed_by_cause")
        counted[kind] = {k: stats[k] for k in shared}
    assert counted["client"] == counted["pool"]
    if faults == "429":
        assert counted["pool"]["failed_by_cause"] == {"429": 6}
        assert counted["pool"]["retries_by_cause"] == {"429": 12} and counted["pool"]["sent"] == 18
    else:
        assert counted["pool"]["failed_by_cause"] == {"400": 6}
        assert counted["pool"]["retries"] == 0 and counted["pool"]["sent"] == 6
