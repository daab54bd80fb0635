"""Dry run (``cultureqa cost``, issue 14 item 5): counts match a real run; prices come from
litellm or the config, and an unknown price is unknown, never zero."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cultureqa.cli import main
from cultureqa.cost import Group
from cultureqa.dryrun import expand_sweep, plan
from cultureqa.testing import FakeOpenAIServer
from cultureqa.testing.workspace import make_api_workspace, stage_env, write_synthetic_benchmark

ROOT = Path(__file__).resolve().parents[1]
EVALUATE = [sys.executable, str(ROOT / "stages" / "evaluate.py"), "--benchmark", "synthetic"]
PRICE_IN, PRICE_OUT = 1e-7, 2e-7  # make_api_workspace's configured price
MAX_TOKENS = 8  # and its decoding.max_tokens


def _evaluate(ws: Path) -> None:
    env = {**stage_env(ws), "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [*EVALUATE, "--model", "model"], cwd=ws, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def _dry_run(ws: Path) -> Group:
    groups, _ = plan(ws, (), ("evaluate",))
    assert [g.entry for g in groups] == ["model"]
    return groups[0]


@pytest.fixture
def in_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(ws / ".cultureqa"))
    monkeypatch.setenv("DVC_ROOT", str(ws))
    return ws


def test_dry_run_counts_are_the_requests_a_real_run_sends(in_workspace: Path) -> None:
    ws = in_workspace
    with FakeOpenAIServer() as server:
        make_api_workspace(ROOT, ws, 8, server.api_base, 4)
        before = _dry_run(ws)
        assert server.hits == 0  # a dry run sends nothing
        assert not (ws / ".cultureqa" / "responses.sqlite").exists()  # and creates no store
        _evaluate(ws)
        first_run = server.hits

        write_synthetic_benchmark(ws / "data" / "synthetic.jsonl", 12)  # 4 new items
        after = _dry_run(ws)
        _evaluate(ws)
        second_run = server.hits - first_run

    assert (before.requests, before.stored, before.to_send) == (8, 0, 8)
    assert first_run == before.to_send
    assert (after.requests, after.stored, after.to_send) == (12, 8, 4)
    assert second_run == after.to_send
    assert after.typical_from == "store (n=8)"  # measured on the stored replies
    assert after.price_from == "configured price"
    assert after.completion_tokens_max == 4 * MAX_TOKENS
    expected = after.prompt_tokens * PRICE_IN + after.completion_tokens_max * PRICE_OUT
    assert after.cost_max_usd == pytest.approx(expected)
    assert after.cost_without_store_usd is not None and after.cost_max_usd is not None
    assert after.cost_without_store_usd > after.cost_max_usd  # the 8 stored answers are free


def test_a_sweep_expands_like_dvc_exp_run_queue() -> None:
    assert expand_sweep(["model=gpt_4o,gpt_5_mini", "prompt=zero_shot,cot"]) == [
        ["model=gpt_4o", "prompt=zero_shot"],
        ["model=gpt_4o", "prompt=cot"],
        ["model=gpt_5_mini", "prompt=zero_shot"],
        ["model=gpt_5_mini", "prompt=cot"],
    ]
    assert expand_sweep([]) == [[]]
    with pytest.raises(ValueError, match=r"only params\.yaml overrides"):
        expand_sweep(["other.yaml:a=1"])


def test_litellm_prices_a_known_model_and_an_unknown_price_stays_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import litellm

    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path))  # an empty store
    sets = ["model=gpt_4o,claude_3_7_sonnet", "prompt=zero_shot,cot"]
    groups, _ = plan(ROOT, sets, ("evaluate",))
    by = {(g.model, g.experiment.split()[1]): g for g in groups if g.entry == "model"}
    assert sorted(by) == [
        ("claude-3-7-sonnet", "prompt=cot"), ("claude-3-7-sonnet", "prompt=zero_shot"),
        ("gpt-4o", "prompt=cot"), ("gpt-4o", "prompt=zero_shot"),
    ]  # fmt: skip
    gpt = by[("gpt-4o", "prompt=zero_shot")]
    assert gpt.tokens_by == "litellm: tiktoken (exact)" and gpt.price_from == "litellm price table"
    p, c = litellm.cost_per_token(
        model="openai/gpt-4o",
        prompt_tokens=gpt.prompt_tokens,
        completion_tokens=gpt.completion_tokens_max,
    )
    assert gpt.cost_max_usd == pytest.approx(p + c)  # gpt-4o's price is linear
    assert gpt.cost_typical_usd is not None and 0 < gpt.cost_typical_usd < gpt.cost_max_usd
    cot = by[("gpt-4o", "prompt=cot")]
    assert cot.requests == gpt.requests > 0  # the same MCQ settings; completion settings skipped
    assert cot.completion_tokens_typical > gpt.completion_tokens_typical
    claude = by[("claude-3-7-sonnet", "prompt=zero_shot")]
    assert claude.cost_max_usd is None and claude.price_from.startswith("unknown: ")
    assert "set price.input_per_token" in claude.price_from


def test_cli_prints_json_and_a_table_and_names_bad_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path))
    args = ["--root", str(ROOT), "cost", "-S", "model=llama_3_3_70b", "--stage", "evaluate"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (group,) = out["groups"]  # chance baselines make no model calls: not listed
    assert group["model"] == "llama-3.3-70b" and group["price_from"] == "configured price"
    assert group["cost_max_usd"] == 0.0 and group["to_send"] == group["requests"] > 0
    assert out["totals"]["to_send"] == group["to_send"]

    assert main(args) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].startswith("experiment") and "llama-3.3-70b" in table
    assert f"total: {group['requests']} requests, 0 in the response store" in table

    # a key one experiment of the sweep sends is in the store when a later one runs: free there
    sweep = ["model=llama_3_3_70b", "evaluate.max_error_share=0.1,0.2"]  # same requests twice
    first, second = plan(ROOT, sweep, ("evaluate",))[0]
    assert (first.earlier, first.to_send) == (0, first.requests)
    assert (second.earlier, second.to_send) == (second.requests, 0)

    assert main(["--root", str(ROOT), "cost", "-S", "model=nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cost: override 'model=nope': 'nope' is not an option of model")


def test_llm_build_stages_are_named_not_estimated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path))
    _, notes = plan(ROOT, ["generator=llm", "judge=panel"], ())
    assert notes == [
        "twohop_build (LLM generator) uses a model: not estimated (its requests depend "
        "on earlier replies)",
        "twohop_build (judge panel) uses a model: not estimated (its requests depend on earlier "
        "replies)",
    ]
    _, offline = plan(ROOT, [], ())
    assert offline == []


def test_the_fake_server_speaks_the_batch_api_litellm_calls() -> None:
    """Groundwork for provider batches (half price): upload, create, poll, per-line failures."""
    import asyncio

    import litellm

    from cultureqa.testing import FaultPlan

    def line(i: int) -> str:
        body = {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}], "max_tokens": 4}
        return json.dumps({"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
                           "body": body})  # fmt: skip

    async def run(api_base: str) -> tuple[list[str], list[str], list[str]]:
        kw = {"custom_llm_provider": "openai", "api_base": api_base, "api_key": "sk-none"}
        data = "".join(line(i) + "\n" for i in range(3)).encode()
        upload = await litellm.acreate_file(file=("batch.jsonl", data), purpose="batch", **kw)
        batch = await litellm.acreate_batch(
            completion_window="24h", endpoint="/v1/chat/completions", input_file_id=upload.id, **kw
        )
        statuses = [batch.status]
        while batch.status != "completed":
            batch = await litellm.aretrieve_batch(batch_id=batch.id, **kw)
            statuses.append(batch.status)
        out = await litellm.afile_content(file_id=batch.output_file_id, **kw)
        err = await litellm.afile_content(file_id=batch.error_file_id, **kw)
        return statuses, out.content.decode().splitlines(), err.content.decode().splitlines()

    with FakeOpenAIServer(faults=FaultPlan(script=["ok", "400", "ok"])) as server:
        server.batch_polls = 2
        statuses, out, err = asyncio.run(run(server.api_base))
        ops = [op for op, _ in server.batch_ops]
    assert statuses == ["in_progress", "in_progress", "in_progress", "completed"]
    assert [json.loads(x)["custom_id"] for x in out] == ["r0", "r2"]
    body = json.loads(out[0])["response"]["body"]
    assert body["choices"][0]["message"]["content"] == "A"
    assert [
        (json.loads(x)["custom_id"], json.loads(x)["response"]["status_code"]) for x in err
    ] == [("r1", 400)]
    assert ops[:2] == ["upload", "create"] and ops.count("retrieve") == 3
    assert server.hits == 0  # no chat request: everything went through the batch


def test_a_batch_model_is_priced_at_the_batch_price(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import litellm

    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path))
    sync, batch = (
        plan(ROOT, ["model=gpt_4o", f"model.options.batch={flag}"], ("evaluate",))[0][0]
        for flag in ("false", "true")
    )
    info = litellm.get_model_info("openai/gpt-4o")
    assert batch.price_from == "litellm batch prices" and sync.price_from == "litellm price table"
    expected = (
        batch.prompt_tokens * info["input_cost_per_token_batches"]
        + batch.completion_tokens_max * info["output_cost_per_token_batches"]
    )
    assert batch.cost_max_usd == pytest.approx(expected)
    assert sync.cost_max_usd is not None and batch.cost_max_usd < sync.cost_max_usd
