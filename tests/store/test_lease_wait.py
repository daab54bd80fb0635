"""A setting waiting on another process's leases gives up its turn: the next settings send.

The engine runs a stage's settings together through one cached client; the client lets one
setting send at a time, in plan order. Another process (here a second owner on the same SQLite
store, standing for a frozen machine) holds leases on two prompts of setting one: setting two
must send all its prompts while setting one waits, and the held prompts are never sent here.
``tests/store/test_pg_machines.py`` proves the same with two real stage processes, SIGSTOP and
PostgreSQL.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.evaluation.engine import Batch, run_settings
from cultureqa.llm.base import GenerateRequest, GenerateResponse, Message
from cultureqa.llm.cached import CachedClient, generate_to_payload, request_fields
from cultureqa.llm.fake import ScriptedModel
from cultureqa.llm.store import StoredResponse, open_store, request_key

IDENTITY = {"backend": "fake"}


def _requests(setting: str, n: int) -> list[GenerateRequest]:
    return [GenerateRequest(messages=(Message("user", f"{setting} q{i}"),)) for i in range(n)]


def _batch(label: str, requests: list[GenerateRequest]) -> Batch:
    def score(replies: Sequence[Any]) -> pd.DataFrame:
        return pd.DataFrame({"setting": label, "text": [r.text for r in replies]})

    return Batch(label, "generate", requests, score)


def _key(request: GenerateRequest) -> str:
    return request_key({**IDENTITY, "kind": "generate"}, request_fields(request))


def _asked(model: ScriptedModel) -> list[str]:
    return [r.messages[0].content for r in model.generate_calls]


def test_a_setting_waiting_on_leases_lets_the_next_settings_send(tmp_path: Path) -> None:
    one, two = _requests("one", 4), _requests("two", 4)
    store = open_store(tmp_path / "s.sqlite")
    frozen = store.claim([_key(one[0]), _key(one[1])], "frozen-machine", time.time())
    assert len(frozen.claimed) == 2
    model = ScriptedModel(replies=["B"])
    client = CachedClient(model, store, IDENTITY, poll_s=0.01)

    async def main() -> tuple[list[str], bool, list[pd.DataFrame]]:
        task = asyncio.create_task(run_settings(client, [_batch("one", one), _batch("two", two)]))
        deadline = time.monotonic() + 10
        while len(model.generate_calls) < 6 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        sent_while_held, waiting = _asked(model), not task.done()
        answer = GenerateResponse(text="C", status="ok")  # the frozen machine wakes and stores
        store.put(
            [StoredResponse(_key(r), "generate", "m", "ok", generate_to_payload(answer))
             for r in one[:2]],
            owner="frozen-machine",
        )  # fmt: skip
        return sent_while_held, waiting, await asyncio.wait_for(task, 10)

    sent_while_held, waiting, frames = asyncio.run(main())
    store.close()
    assert waiting, "setting one did not wait for the held prompts"
    assert sent_while_held == ["one q2", "one q3", "two q0", "two q1", "two q2", "two q3"]
    assert _asked(model) == sent_while_held  # the held prompts were never sent here
    assert list(frames[0]["text"]) == ["C", "C", "B", "B"] and list(frames[1]["text"]) == ["B"] * 4
    assert client.stats.answered_elsewhere == 2 and client.stats.lease_waits > 0


def test_without_leases_held_the_settings_send_in_plan_order(tmp_path: Path) -> None:
    """The turn keeps a stage's requests in the order of its settings (as one after another)."""
    one, two, three = _requests("one", 3), _requests("two", 3), _requests("three", 3)
    store = open_store(tmp_path / "s.sqlite")
    model = ScriptedModel(replies=["B"])
    client = CachedClient(model, store, IDENTITY)
    batches = [_batch("one", one), _batch("two", two), _batch("three", three)]
    frames = asyncio.run(run_settings(client, batches))
    store.close()
    assert _asked(model) == [r.messages[0].content for r in (*one, *two, *three)]
    assert [f["setting"].iloc[0] for f in frames] == ["one", "two", "three"]


def test_a_failing_setting_stops_the_others_and_raises_its_error(tmp_path: Path) -> None:
    """The first failure is the stage's error; the other settings are cancelled, and whatever
    they had sent is stored before the error leaves (nothing paid is lost)."""
    one, two = _requests("one", 2), _requests("two", 2)
    store = open_store(tmp_path / "s.sqlite")
    model = ScriptedModel(replies=["B"])
    client = CachedClient(model, store, IDENTITY)

    def broken(replies: Sequence[Any]) -> pd.DataFrame:
        raise ValueError("scoring failed")

    batches = [Batch("one", "generate", one, broken), _batch("two", two)]
    with pytest.raises(ValueError, match=r"^scoring failed$"):
        asyncio.run(run_settings(client, batches))
    store.close()
    with open_store(tmp_path / "s.sqlite") as reopened:
        assert reopened.count() == len(model.generate_calls) >= 2
        assert reopened.leases() == 0
