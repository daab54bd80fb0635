"""ID-MoCQA: an empty reply is wrong on both hops, counted as ``empty``, never a stage failure."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.core.runlog import read_run
from cultureqa.llm import registry
from cultureqa.llm.base import GenerateRequest
from cultureqa.llm.fake import ScriptedModel
from cultureqa.mocqa import metrics
from cultureqa.mocqa.report import run_metrics
from cultureqa.testing import FakeOpenAIServer
from tests.mocqa_eval.test_mocqa_eval_stages import (  # noqa: F401
    DATASET,
    _stage,
    _use_server,
    workspace,
)


def _scripted_model(dataset: pd.DataFrame) -> ScriptedModel:
    """Answers every item right, except temporal clues: an empty reply."""
    gold = dataset.set_index("item_id")

    def reply(request: GenerateRequest) -> str:
        found = re.search(r"\[(s\d+\.\w+\.\w+)\]", request.messages[0].content)
        assert found is not None
        item = gold.loc[found.group(1)]
        if item["clue_type"] == "temporal":
            return ""
        return json.dumps({"province": item["province"], "answer": item["answer"]})

    return ScriptedModel("scripted-model", reply)


def test_stage_scores_empty_replies_wrong_and_counts_them_toward_the_error_share(
    workspace: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dataset = pd.read_parquet(workspace / DATASET)
    model = _scripted_model(dataset)

    def factory(cfg: Any) -> registry.BuiltModel:
        return registry.BuiltModel(model, {"backend": "scripted"}, 1000)

    monkeypatch.setitem(registry._FACTORIES, "scripted", factory)
    params = OmegaConf.load(workspace / "params.yaml")
    params.model.backend = "scripted"
    params.mocqa_eval.max_error_share = 0.2  # the empty sixth is under it (issue 33: counted)
    OmegaConf.save(params, workspace / "params.yaml")

    assert _stage("mocqa_evaluate")(["--model", "model", "--prompt", "zero_shot"]) == 0

    out = workspace / "data/eval/mocqa/model/zero_shot"
    preds, run = read_run(out)
    temporal = preds["clue_type"] == "temporal"
    assert set(preds.loc[temporal, "status"]) == {"empty"}
    assert not preds.loc[temporal, ["correct", "province_correct"]].any().any()
    assert preds.loc[~temporal, "correct"].all()
    assert run["error_share"] == pytest.approx(1 / 6, abs=1e-6)
    assert run["error_causes"]["empty"]["items"] == int(temporal.sum())
    assert run["counts"] == {
        "items": len(preds), "ok": int((~temporal).sum()), "errors": 0, "parse_errors": 0,
        "empty": int(temporal.sum()), "not_sent": 0,
    }  # fmt: skip
    stage_metrics = json.loads((workspace / "metrics/mocqa/eval/model/zero_shot.json").read_text())
    assert stage_metrics["en"]["empty_rate"] == pytest.approx(1 / 6, abs=1e-6)
    assert stage_metrics["en"]["parse_error_rate"] == 0.0

    table = metrics.slice_table(preds, [])
    assert table["empty_rate"].tolist() == [pytest.approx(1 / 6)]
    assert table["parse_error_rate"].tolist() == [0.0]
    english = run_metrics(preds[preds["language"] == "en"])
    assert english["empty_rate"] == pytest.approx(1 / 6) and english["error_rate"] == 0.0


def test_empty_http_replies_over_two_replicas_end_to_end(workspace: Path) -> None:  # noqa: F811
    """Real client, two fake servers: empty content is retried, then scored `empty`.

    The pool retries it as the chat client does (``retry.empty_attempts``, 2 attempts).
    """
    dataset = pd.read_parquet(workspace / DATASET)
    gold = dataset.set_index("item_id")

    def responder(messages: list[dict[str, Any]]) -> str:
        found = re.search(r"\[(s\d+\.\w+\.\w+)\]", str(messages[-1]["content"]))
        assert found is not None
        item = gold.loc[found.group(1)]
        if item["clue_type"] == "temporal":
            return ""  # the server answers 200 with empty content, every time
        return json.dumps({"province": item["province"], "answer": item["answer"]})

    with FakeOpenAIServer(responder) as one, FakeOpenAIServer(responder) as two:
        _use_server(workspace, [one.api_base, two.api_base])  # type: ignore[arg-type]
        params = OmegaConf.load(workspace / "params.yaml")
        params.mocqa_eval.max_error_share = 0.2
        OmegaConf.save(params, workspace / "params.yaml")
        assert _stage("mocqa_evaluate")(["--model", "model", "--prompt", "zero_shot"]) == 0
        seen = {one.api_base: one.hits, two.api_base: two.hits}
    preds, run = read_run(workspace / "data/eval/mocqa/model/zero_shot")
    temporal = int((preds["clue_type"] == "temporal").sum())
    assert run["counts"]["empty"] == temporal and run["counts"]["errors"] == 0
    client = run["api"]["client"]
    assert client["empty"] == temporal
    assert client["retries_by_cause"] == {"empty": temporal}  # retry.empty_attempts: 2
    assert {b: r["sent"] for b, r in client["replicas"].items()} == seen
    assert sum(seen.values()) == len(preds) + temporal == run["model_calls"]
