"""Response store and caching wrapper: zero-call reruns, errors retried, order-independent keys."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from cultureqa.llm.base import GenerateRequest, GenerateResponse, LoglikRequest, Message
from cultureqa.llm.cached import CachedClient
from cultureqa.llm.fake import ScriptedModel
from cultureqa.llm.store import open_store, request_key


def _gen(n: int) -> list[GenerateRequest]:
    return [GenerateRequest(messages=(Message("user", f"q{i}"),)) for i in range(n)]


def test_key_ignores_dict_order_but_not_content() -> None:
    a = request_key({"m": 1, "b": 2}, {"x": [1, 2]})
    assert a == request_key({"b": 2, "m": 1}, {"x": [1, 2]})
    assert a != request_key({"b": 2, "m": 1}, {"x": [2, 1]})


def test_rerun_makes_zero_calls(tmp_path: Path) -> None:
    for expected in (4, 0):
        model = ScriptedModel(replies=["B"])
        store = open_store(tmp_path / "s.sqlite")
        client = CachedClient(model, store, {"backend": "fake"})
        out = asyncio.run(client.generate(_gen(4)))
        store.close()
        assert len(model.generate_calls) == expected
        assert [r.text for r in out] == ["B"] * 4
        assert all(r.cached for r in out) == (expected == 0)


def test_identity_change_misses(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s.sqlite")
    asyncio.run(CachedClient(ScriptedModel(), store, {"model": "a"}).generate(_gen(2)))
    other = ScriptedModel()
    asyncio.run(CachedClient(other, store, {"model": "b"}).generate(_gen(2)))
    assert len(other.generate_calls) == 2


def test_errors_are_recorded_but_retried_next_time(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s.sqlite")
    failing = ScriptedModel(replies=[GenerateResponse(None, status="error", error="boom")])
    out = asyncio.run(CachedClient(failing, store, {"m": 1}).generate(_gen(1)))
    assert out[0].status == "error" and store.count() == 1
    healed = ScriptedModel(replies=["C"])
    out = asyncio.run(CachedClient(healed, store, {"m": 1}).generate(_gen(1)))
    assert out[0].text == "C" and len(healed.generate_calls) == 1
    again = ScriptedModel(replies=["A"])
    out = asyncio.run(CachedClient(again, store, {"m": 1}).generate(_gen(1)))
    assert out[0].text == "C" and not again.generate_calls


def test_each_chunk_is_persisted_as_it_arrives(tmp_path: Path) -> None:
    """A crash after the first chunk keeps that chunk: the next run only asks for the rest."""
    store = open_store(tmp_path / "s.sqlite")

    class Crashing(ScriptedModel):
        async def generate(self, requests):  # type: ignore[no-untyped-def]
            if len(self.generate_calls) >= 2:
                raise ConnectionAbortedError("killed mid-run")
            return await super().generate(requests)

    with contextlib.suppress(ConnectionAbortedError):
        asyncio.run(CachedClient(Crashing(), store, {"m": 1}, chunk_size=2).generate(_gen(6)))
    assert store.count() == 2
    resumed = ScriptedModel()
    asyncio.run(CachedClient(resumed, store, {"m": 1}, chunk_size=2).generate(_gen(6)))
    assert len(resumed.generate_calls) == 4


def test_loglik_is_cached_too(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s.sqlite")
    req = [LoglikRequest("ctx", (" a", " b"))]
    first = ScriptedModel(loglik_fn=lambda r: [-1.0, -2.0])
    asyncio.run(CachedClient(first, store, {"m": 1}).loglik(req))
    second = ScriptedModel(loglik_fn=lambda r: [0.0, 0.0])
    out = asyncio.run(CachedClient(second, store, {"m": 1}).loglik(req))
    assert out[0].logprobs == (-1.0, -2.0) and not second.loglik_calls


def test_a_backend_missing_a_storage_method_cannot_be_built(tmp_path: Path) -> None:
    """The storage methods are abstract: a backend that skips one fails when built, not later."""
    from typing import Any

    from cultureqa.llm.store import ResponseStore
    from cultureqa.llm.store.sqlite import SqliteStore

    class LookupOnly(ResponseStore):
        def get_many_ok(self, keys: list[str]) -> dict[str, dict[str, Any]]:
            return {}

    with pytest.raises(TypeError, match=r"abstract methods .*claim.*leases"):
        LookupOnly()  # type: ignore[abstract]
    assert isinstance(open_store(tmp_path / "s.sqlite"), SqliteStore)


def test_a_batch_of_puts_stores_each_payload_as_json_dumps_would(tmp_path: Path) -> None:
    """One batch of several puts: each row's stored text is ``json.dumps``'s (sorted keys, non-ASCII
    kept), each gets one send with its cost, and only the owner's leases are released."""
    import json
    import os

    from cultureqa.llm.store import StoredResponse

    store = open_store(tmp_path / "s.sqlite")
    payloads = [
        {"text": "jawaban é", "usage": {"cost_usd": 0.25, "a": 1}, "b": [1.5, None]},
        {"text": None, "status": "error", "usage": None},
    ]
    rows = [StoredResponse(f"k{i}", "generate", "m", "ok", p) for i, p in enumerate(payloads)]
    store.claim(["k0", "k1"], "me", 0.0)
    store._put_groups([(rows[:1], "me"), (rows[1:], None)])
    stored = {r.key: r.payload for r in store.rows()}
    assert stored == {
        f"k{i}": json.dumps(p, sort_keys=True, ensure_ascii=False) for i, p in enumerate(payloads)
    }
    assert [(s.key, s.pid, s.cost_usd) for s in store.sends()] == [
        ("k0", os.getpid(), 0.25),
        ("k1", os.getpid(), 0.0),
    ]
    assert store.leases() == 1  # k1 was put without an owner: its lease stays
    store.close()


def test_the_last_round_hook_fires_after_a_reply_once_the_rest_fits_in_flight(
    tmp_path: Path,
) -> None:
    """The engine warms its tail at this hook, so it must never come while much is unsent.

    Two calls share the client (as a stage's settings do): while the second waits for its turn,
    the first call's last round is not the client's; once the second has sent all but what fits
    in flight, the hook comes at each reply, and never before the first reply lands.
    """

    class InFlight(ScriptedModel):
        max_in_flight = 4
        started = 0

        async def generate(self, requests):  # type: ignore[no-untyped-def]
            self.started += len(requests)
            await asyncio.sleep(0.001)
            return await super().generate(requests)

    model = InFlight()
    client = CachedClient(model, open_store(tmp_path / "s.sqlite"), {"m": 1})
    seen: list[tuple[int, int]] = []  # (requests started, replies landed) at each call
    client.on_last_round = lambda: seen.append((model.started, len(model.generate_calls)))

    async def both() -> None:
        first = [GenerateRequest(messages=(Message("user", f"a{i}"),)) for i in range(10)]
        await asyncio.gather(client.generate(first), client.generate(_gen(10)))

    asyncio.run(both())
    assert seen, "the hook never came"
    assert all(started >= 10 + 10 - 4 for started, _ in seen), seen  # second call's last round
    assert all(replies >= 1 for _, replies in seen)
    one_call = CachedClient(InFlight(), open_store(tmp_path / "t.sqlite"), {"m": 1})
    calls: list[int] = []
    one_call.on_last_round = lambda: calls.append(1)
    asyncio.run(one_call.generate(_gen(3)))  # fewer than the limit: still only after a reply
    assert calls


def test_a_claim_failing_behind_a_failed_write_reports_the_writes_failure(
    tmp_path: Path,
) -> None:
    """The store's server goes away while a write and the next claim are both queued on it.

    The write fails with the cause; the claim, next on the broken connection, fails with an
    error that names none (PostgreSQL's "cannot exit pipeline mode while busy"). The stage's
    one line is built from the failure raised here, so it must be the write's.
    """

    class InFlight(ScriptedModel):
        max_in_flight = 2

        async def generate(self, requests):  # type: ignore[no-untyped-def]
            if requests[0].messages[0].content == "q1":  # lands after q0's refill has claimed
                await asyncio.sleep(0.05)
            return await super().generate(requests)

    cause = ConnectionError("server closed the connection unexpectedly")
    store = open_store(tmp_path / "s.sqlite")
    client = CachedClient(InFlight(), store, {"m": 1})
    real_claim, real_put = store.claim_async, store.put_async
    write_failed = asyncio.Event()
    claims = puts = 0

    async def claim_async(keys, owner, since):  # type: ignore[no-untyped-def]
        nonlocal claims
        claims += 1
        if claims == 1:
            return await real_claim(keys, owner, since)
        await write_failed.wait()  # queued behind the write that fails
        raise RuntimeError("sending query failed: cannot exit pipeline mode while busy")

    async def put_async(rows, owner=None):  # type: ignore[no-untyped-def]
        nonlocal puts
        puts += 1
        if puts == 1:
            return await real_put(rows, owner=owner)
        await asyncio.sleep(0)  # the claim is waiting on the store by now
        write_failed.set()
        raise cause

    store.claim_async, store.put_async = claim_async, put_async  # type: ignore[method-assign]
    with pytest.raises(ConnectionError) as raised:
        asyncio.run(client.generate(_gen(6)))
    assert raised.value is cause and claims == 2
    store.close()
