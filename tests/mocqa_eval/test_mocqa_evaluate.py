"""The ID-MoCQA family on the engine: scripted generator and scorer, random baseline."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.analysis.stats import wilson_ci
from cultureqa.evaluation.engine import Result, RunSpec, evaluate
from cultureqa.knowledge.provinces import load_knowledge_base
from cultureqa.llm import registry
from cultureqa.llm.base import GenerateRequest, GenerateResponse, LoglikRequest, LoglikResponse
from cultureqa.llm.fake import ScriptedModel
from cultureqa.mocqa.evaluate import PREDICTION_COLUMNS, EvalConfig, MocqaFamily

ROOT = Path(__file__).resolve().parents[2]
KB = load_knowledge_base(ROOT / "data" / "knowledge" / "provinces")
RANDOM = {
    "id": "random",
    "backend": "random",
    "decoding": {"max_tokens": 1},
    "options": {"seed": 13},
}


def evaluate_mocqa(
    dataset: pd.DataFrame, model_cfg: dict[str, Any], cfg: EvalConfig, store: Path, entry: str
) -> Result:
    return evaluate(MocqaFamily(dataset, cfg, ROOT, KB), RunSpec(entry, model_cfg, store, 1.0))


def _item_id(text: str) -> str:
    found = re.search(r"\[(s\d+\.\w+\.\w+)\]", text)
    assert found, text
    return found.group(1)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Callable[[ScriptedModel], dict[str, Any]]:
    """Register a backend that hands out a given ScriptedModel; returns its model config."""

    def install(model: ScriptedModel) -> dict[str, Any]:
        def factory(cfg: Any) -> registry.BuiltModel:
            return registry.BuiltModel(model, {"backend": "scripted", "id": cfg["id"]}, 1000)

        monkeypatch.setitem(registry._FACTORIES, "scripted", factory)
        return {"id": model.model_id, "backend": "scripted", "decoding": {"max_tokens": 8}}

    return install


def test_generation_rows_parse_errors_and_model_errors(
    tmp_path: Path, make_dataset: Callable[..., pd.DataFrame], scripted: Any
) -> None:
    dataset = make_dataset(2)
    gold = dataset.set_index("item_id")

    def reply(request: GenerateRequest) -> str | GenerateResponse:
        item = gold.loc[_item_id(request.messages[0].content)]
        if item["clue_type"] == "temporal":
            return "I am not sure."
        if item["clue_type"] == "comparison":
            return GenerateResponse(text=None, status="error", error="RateLimitError")
        province = "Sumut" if item["province"] == "North Sumatra" else item["province"]
        return json.dumps({"province": province, "answer": item["answer"]})

    model = ScriptedModel("gen", reply)
    cfg = scripted(model)
    outcome, preds = evaluate_mocqa(
        dataset,
        cfg,
        EvalConfig("cot", min_max_tokens=1024),
        tmp_path / "s.sqlite",
        "model",
    )
    assert list(preds.columns) == list(PREDICTION_COLUMNS)
    assert len(preds) == 24 and outcome.model_calls == 24
    assert {r.max_tokens for r in model.generate_calls} == {1024}  # CoT budget floor
    assert {r.template_version for r in model.generate_calls} == set(outcome.templates.values())
    by_clue = preds.set_index("clue_type")
    assert by_clue.loc["temporal", "status"].eq("parse_error").all()
    assert by_clue.loc["temporal", "parse_error"].eq("province,answer").all()
    assert by_clue.loc["comparison", "status"].eq("error").all()
    assert outcome.error_share == pytest.approx(8 / 24)  # failed calls and unparsable replies
    answered = preds[preds["status"] == "ok"]
    assert answered["correct"].all() and answered["province_correct"].all()
    assert not preds.loc[preds["status"] != "ok", ["correct", "province_correct"]].any().any()
    assert set(preds["scoring"]) == {"generate"} and set(preds["prompt"]) == {"cot"}

    again = evaluate_mocqa(
        dataset,
        cfg,
        EvalConfig("cot", min_max_tokens=1024),
        tmp_path / "s.sqlite",
        "model",
    )
    assert (
        again.record.model_calls == 4
    )  # only the failed calls are retried; parse errors are answers


def test_loglik_scores_letters_and_province_names_in_the_item_language(
    tmp_path: Path, make_dataset: Callable[..., pd.DataFrame], scripted: Any
) -> None:
    dataset = make_dataset(1)

    def scores(request: LoglikRequest) -> list[float]:
        if request.context.endswith(("Answer:", "Jawaban:")):
            return [-1.0, -0.5, -2.0]  # always B
        # per-token normalisation: "Bali" sums higher, but East Nusa Tenggara wins per token
        return [
            -1.5 if "Bali" in c else (-4.0 if "Nusa" in c else -9.0) for c in request.continuations
        ]

    model = ScriptedModel("scorer", loglik_fn=scores)
    preds = evaluate_mocqa(
        dataset, scripted(model), EvalConfig("zero_shot"), tmp_path / "s.sqlite", "m"
    ).predictions
    assert set(preds["answer_pred"]) == {"B"} and set(preds["scoring"]) == {"loglik"}
    contexts = {c.context.rsplit("\n", 1)[-1] for c in model.loglik_calls}
    assert contexts == {"Answer:", "Jawaban:", "Province:", "Provinsi:"}
    id_names = next(c.continuations for c in model.loglik_calls if c.context.endswith("Provinsi:"))
    assert " Sumatera Utara" in id_names and " Nusa Tenggara Timur" in id_names
    assert set(preds["province_pred"]) == {"Bali"}  # no token counts reported: plain sums

    class CountingScorer(ScriptedModel):
        """Reports one token per word, as a real backend reports token counts."""

        async def loglik(self, requests: Sequence[LoglikRequest]) -> list[LoglikResponse]:
            return [
                LoglikResponse(tuple(scores(r)), tuple(len(c.split()) for c in r.continuations))
                for r in requests
            ]

    counted = CountingScorer("scorer2", loglik_fn=scores)
    preds = evaluate_mocqa(
        dataset, scripted(counted), EvalConfig("zero_shot"), tmp_path / "t.sqlite", "m"
    ).predictions
    # Bali: -1.5 / 1 token; Nusa Tenggara Timur: -4.0 / 3 tokens = -1.33 -> wins per token
    assert set(preds.loc[preds["language"] == "id", "province_pred"]) == {"East Nusa Tenggara"}
    assert set(preds.loc[preds["language"] == "id", "province_raw"]) == {"Nusa Tenggara Timur"}


def test_random_baseline_is_at_chance_on_600_items(
    tmp_path: Path, make_dataset: Callable[..., pd.DataFrame]
) -> None:
    dataset = make_dataset(50)
    assert len(dataset) == 600
    preds = evaluate_mocqa(
        dataset,
        RANDOM,
        EvalConfig("zero_shot"),
        tmp_path / "s.sqlite",
        "baselines.random",
    ).predictions
    low, high = wilson_ci(int(preds["correct"].sum()), len(preds))
    assert low <= 1 / 3 <= high
    low, high = wilson_ci(int(preds["province_correct"].sum()), len(preds))
    assert low <= 1 / 11 <= high
    assert preds["answer_pred"].nunique() == 3 and preds["province_pred"].nunique() == 11


def test_limit_and_empty_languages(
    tmp_path: Path, make_dataset: Callable[..., pd.DataFrame]
) -> None:
    dataset = make_dataset(3)
    preds = evaluate_mocqa(
        dataset, RANDOM, EvalConfig("cot", limit=5), tmp_path / "s.sqlite", "r"
    ).predictions
    assert preds.groupby("language").size().to_dict() == {"en": 5, "id": 5}
    with pytest.raises(ValueError, match="no items"):
        evaluate_mocqa(
            make_dataset(1, ("en",)),
            RANDOM,
            EvalConfig("cot", ("id",)),
            tmp_path / "x",
            "r",
        )


def test_limit_takes_a_balanced_paired_subset() -> None:
    from cultureqa.mocqa.evaluate import balanced_subset

    clue_types = ["entity", "geographical", "temporal", "commonsense", "comparison", "intersection"]
    rows = [
        {"source_id": f"s{i}", "clue_type": c, "language": lang, "item_id": f"s{i}-{c}-{lang}"}
        for i in range(20)
        for c in clue_types
        for lang in ("en", "id")
    ]
    subset = balanced_subset(pd.DataFrame(rows), 12)
    assert subset.groupby("language").size().to_dict() == {"en": 12, "id": 12}
    assert set(subset.groupby("clue_type").size()) == {4}  # 2 pairs × 2 languages per type
    pairs = subset.groupby(["source_id", "clue_type"])["language"].apply(frozenset)
    assert set(pairs) == {frozenset({"en", "id"})}
    assert subset["source_id"].nunique() > 2  # spread over source items, not the first few
    assert balanced_subset(pd.DataFrame(rows), None).shape[0] == len(rows)
