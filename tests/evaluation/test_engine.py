"""One engine, one run record: every family on a tiny fixture with the scripted fake model.

The contract: whatever the family, :func:`evaluate` returns the same :class:`RunRecord` schema,
counts that add up to the predictions, per-item accounting copied from the replies, and the
same error-share verdict when half of the items fail.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.cases.construct import TYPES
from cultureqa.cases.evaluate import CasesFamily, load_prompt
from cultureqa.cases.shuffle import shuffle_items
from cultureqa.core.config import select
from cultureqa.core.runlog import CALL_COLUMNS, read_run, write_run
from cultureqa.evaluation.engine import Family, RunSpec, evaluate, exit_code
from cultureqa.evaluation.record import RunRecord, accounting
from cultureqa.evaluation.task import McqFamily
from cultureqa.knowledge.provinces import load_knowledge_base
from cultureqa.llm import registry
from cultureqa.llm.base import GenerateRequest, GenerateResponse, LoglikRequest
from cultureqa.llm.fake import ScriptedModel
from cultureqa.mocqa.evaluate import EvalConfig, MocqaFamily
from tests.mocqa_eval.conftest import synthetic_dataset

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ("indoculture", "mocqa", "cases")
RECORD_KEYS = [
    "benchmark", "roster_entry", "model", "model_sha", "prompt", "settings", "skipped",
    "templates", "counts", "error_share", "max_error_share", "details", "provenance",
    "model_calls", "api", "timings", "error_causes",
]  # fmt: skip
COUNT_KEYS = ["items", "ok", "errors", "parse_errors", "empty", "not_sent"]


def _cases_items(seed: int, n: int = 8) -> pd.DataFrame:
    typed = pd.DataFrame(
        {"case_id": f"c{i}", "question": f"Why does case {i} happen?", "country": "Japan",
         "narrative": f"Narrative {i}.", **{f"type_{t}": f"{t} text {i}" for t in TYPES}}
        for i in range(n)
    )  # fmt: skip
    return shuffle_items(typed, seed=seed)


def make_family(name: str) -> Family:
    """Each family on its smallest offline fixture."""
    if name == "indoculture":
        params = OmegaConf.load(ROOT / "params.yaml")
        spec = BenchmarkSpec.from_config(select(params, "benchmarks.indoculture"))
        return McqFamily(spec, ROOT, "zero_shot", 16)
    if name == "mocqa":
        kb = load_knowledge_base(ROOT / "data" / "knowledge" / "provinces")
        return MocqaFamily(synthetic_dataset(1), EvalConfig("zero_shot"), ROOT, kb)
    items = {seed: _cases_items(seed) for seed in (60, 40)}
    return CasesFamily(items, {}, load_prompt(ROOT), ROOT, 64)


def _pick(text: str) -> str:
    """A deterministic reply per prompt: a letter, JSON, or something unparsable."""
    replies = ("A", '{"province": "Bali", "answer": "B"}', '{"selection": "C"}', "no idea")
    return replies[int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(replies)]


def _scores(request: LoglikRequest) -> list[float]:
    return [-float(len(c)) for c in request.continuations]


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Callable[[ScriptedModel], dict[str, Any]]:
    """Serve a ScriptedModel through the registry, so the engine builds it like any backend."""

    def install(model: ScriptedModel) -> dict[str, Any]:
        built = registry.BuiltModel(model, {"backend": "scripted", "id": model.model_id}, 64)
        monkeypatch.setitem(registry._FACTORIES, "scripted", lambda cfg: built)
        return {"id": model.model_id, "backend": "scripted", "decoding": {"max_tokens": 8}}

    return install


def _generator() -> ScriptedModel:
    return ScriptedModel("gen", lambda r: _pick(r.messages[-1].content))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("loglik", [False, True], ids=["generate", "loglik"])
def test_every_family_returns_the_same_run_record(
    family: str, loglik: bool, scripted: Any, tmp_path: Path
) -> None:
    model = ScriptedModel("scorer", loglik_fn=_scores) if loglik else _generator()
    run = RunSpec("model", scripted(model), tmp_path / "r.sqlite", 0.1, "zero_shot")
    record, preds = evaluate(make_family(family), run)

    assert isinstance(record, RunRecord) and record.benchmark == family
    assert list(record.as_dict()) == RECORD_KEYS
    assert list(record.as_dict()["counts"]) == COUNT_KEYS
    json.dumps(record.as_dict())  # JSON-ready as it stands
    counts = record.counts
    assert counts.items == len(preds) > 0
    assert counts.ok + counts.errors + counts.parse_errors + counts.empty == len(preds)
    assert record.settings and set(record.templates) and record.roster_entry == "model"
    assert record.model_calls == len(model.loglik_calls) + len(model.generate_calls)
    for column in ("latency_s", "cached", "prompt_tokens", "completion_tokens", "cost_usd"):
        assert column in preds.columns, column
    assert not preds["cached"].any()
    if not loglik:
        assert set(preds["status"]) >= {"ok", "parse_error"}  # "no idea" is never guessed

    again, _ = evaluate(make_family(family), run)  # the response store answers everything
    assert again.model_calls == 0 and again.counts == record.counts


@pytest.mark.parametrize("family", FAMILIES)
def test_record_splits_into_stable_run_json_and_the_run_log(
    family: str, scripted: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run = RunSpec("model", scripted(_generator()), tmp_path / "r.sqlite", 0.1)
    record, preds = evaluate(make_family(family), run)
    out = tmp_path / "out"
    write_run(out, preds, record.as_dict(), ROOT)
    stable = json.loads((out / "run.json").read_text())
    assert not {"model_calls", "api", "timings"} & set(stable)  # volatile: run log only
    assert stable["counts"] == dataclasses.asdict(record.counts)
    _, joined = read_run(out)
    assert joined["timings"]["wall_s"] >= 0 and joined["model_calls"] == record.model_calls


@pytest.mark.parametrize("family", FAMILIES)
def test_half_the_items_failing_fails_every_family_alike(
    family: str, scripted: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Planted: the model errors on every other request, so 50% of items fail (limit 10%)."""
    sent: list[GenerateRequest] = []

    def flaky(request: GenerateRequest) -> str | GenerateResponse:
        sent.append(request)
        if len(sent) % 2 == 0:
            return GenerateResponse(None, status="error", error="InternalServerError: 500")
        return _pick(request.messages[-1].content)

    run = RunSpec("model", scripted(ScriptedModel("flaky", flaky)), tmp_path / "r.sqlite", 0.1)
    record, preds = evaluate(make_family(family), run)
    counts = record.counts
    assert counts.errors == len(preds) // 2  # unparsable replies count toward the share too
    unusable = (counts.errors + counts.parse_errors + counts.empty) / counts.items
    assert record.error_share == pytest.approx(unusable) and record.error_share >= 0.5
    assert (preds.loc[preds["status"] == "error", "error"] == "InternalServerError: 500").all()
    capsys.readouterr()
    assert exit_code(record, tmp_path / "predictions.parquet") == 1
    line = capsys.readouterr().err
    assert f"error: {unusable:.1%} of items have no usable answer (limit 10.0%" in line
    assert "50.0% failed calls, e.g. 'InternalServerError: 500'" in line


def test_accounting_sums_an_items_requests_into_the_call_columns() -> None:
    """An item scored from two requests: attempts, retries by cause and times are summed."""
    replies = [
        GenerateResponse("A", latency_s=0.5, attempts=1, server_latency_s=0.4, cached=True),
        GenerateResponse(
            "B", latency_s=1.25, attempts=3, retries_by_cause={"429": 2}, wait_s=0.75,
            server_latency_s=0.5,
        ),
    ]  # fmt: skip
    columns = accounting(replies, per_item=2)
    assert list(columns) == ["prompt_tokens", "completion_tokens", "cost_usd", *CALL_COLUMNS]
    assert columns["latency_s"] == [1.75] and columns["attempts"] == [4]
    assert columns["server_latency_s"] == [0.9] and columns["wait_s"] == [0.75]
    assert columns["cached"] == [False] and columns["retries_by_cause"] == ['{"429": 2}']
    assert accounting(replies, per_item=1)["attempts"] == [1, 3]


@pytest.mark.parametrize("frozen_before", [False, True], ids=["unfrozen", "caller-frozen"])
def test_the_requests_run_with_fewer_collections_and_gc_is_restored_after(
    frozen_before: bool, scripted: Any, tmp_path: Path
) -> None:
    import gc

    seen: list[tuple[tuple[int, int, int], int]] = []

    def generate(request: GenerateRequest) -> str:
        if not seen:  # once: get_freeze_count walks the frozen heap, a worker's whole suite
            seen.append((gc.get_threshold(), gc.get_freeze_count()))
        return _pick(request.messages[-1].content)

    gc.unfreeze()  # the suite's conftest freezes at start; it is frozen again below
    try:
        if frozen_before:
            gc.freeze()
        threshold = gc.get_threshold()
        run = RunSpec("model", scripted(ScriptedModel("gen", generate)), tmp_path / "r.sqlite", 0.1)
        evaluate(make_family("indoculture"), run)
        assert seen, "the model was called"
        assert seen[0][0][0] >= 20_000 and seen[0][0][1:] == threshold[1:]
        assert seen[0][1] > 0  # what existed before the loop is out of the collector's reach
        assert gc.get_threshold() == threshold  # as it was, after the run
        assert (gc.get_freeze_count() > 0) is frozen_before  # a caller's freeze is left alone
    finally:
        gc.freeze()


def test_the_model_calls_run_on_uvloops_event_loop(scripted: Any, tmp_path: Path) -> None:
    """Every stage's requests run on the one loop of :mod:`cultureqa.llm.event_loop` (uvloop)."""
    import asyncio

    loops: set[str] = set()

    def generate(request: GenerateRequest) -> str:
        loops.add(type(asyncio.get_running_loop()).__module__)
        return _pick(request.messages[-1].content)

    run = RunSpec("model", scripted(ScriptedModel("gen", generate)), tmp_path / "r.sqlite", 0.1)
    evaluate(make_family("indoculture"), run)
    assert loops == {"uvloop"}, loops
