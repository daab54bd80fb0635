"""ID-MoCQA evaluate → analyze → track through the stage scripts, in a scratch workspace.

The roster holds both baselines (log-likelihood scoring) and an API model served by the fake
OpenAI-compatible server (generation + parsing), exactly as DVC would run the matrix stages.
"""

from __future__ import annotations

import json
import re
import runpy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.compose import compose_params
from cultureqa.core.runlog import read_run
from cultureqa.testing import FakeOpenAIServer, FaultPlan

ROOT = Path(__file__).resolve().parents[2]
ROSTER = ["model", "baselines.random", "baselines.first_option"]
PROMPTS = ["zero_shot", "cot"]
DATASET = "data/build/twohop/indonesia/dataset.parquet"
FAST_RETRY = {"attempts": 3, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 5.0}


def _stage(name: str) -> Callable[[list[str]], int]:
    return runpy.run_path(str(ROOT / "stages" / f"{name}.py"), run_name="stage")["main"]  # type: ignore[no-any-return]


def _responder(dataset: pd.DataFrame) -> Callable[[list[dict[str, Any]]], str]:
    """A model whose reply format and correctness depend on the clue type (see the test)."""
    gold = dataset.set_index("item_id")

    def reply(messages: list[dict[str, Any]]) -> str:
        prompt = str(messages[-1]["content"])
        item = gold.loc[re.search(r"\[(s\d+\.\w+\.\w+)\]", prompt).group(1)]  # type: ignore[union-attr]
        right, wrong = item["answer"], "ABC"[("ABC".index(item["answer"]) + 1) % 3]
        other = "Bali" if item["province"] != "Bali" else "Papua"
        province = item["province"]
        text = {
            "entity": json.dumps({"province": province, "answer": right}),
            "geographical": f'```json\n{{"province": "{province}", "answer": "{wrong}"}}\n```',
            "temporal": f"Province: {other}\nAnswer: {right}",
            "commonsense": "Sorry, I cannot tell.",
            "comparison": json.dumps({"province": other, "answer": wrong}),
            "intersection": f"The clue fits {province}.\n"
            + json.dumps({"provinsi": province, "jawaban": right}),
        }[item["clue_type"]]
        cot = "step by step" in prompt or "langkah demi langkah" in prompt
        return f"Let me reason about the clue first.\n{text}" if cot else text

    return reply


@pytest.fixture
def workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_dataset: Callable[..., pd.DataFrame]
) -> Path:
    for folder in ("prompts", "data/knowledge", "tests/gold"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    (tmp_path / DATASET).parent.mkdir(parents=True)
    make_dataset(3).to_parquet(tmp_path / DATASET, index=False)
    params = OmegaConf.load(ROOT / "params.yaml")
    params.evaluate.roster = ROSTER
    params.evaluate.progress = False
    params.mocqa_eval = OmegaConf.load(ROOT / "conf" / "mocqa_eval" / "default.yaml")
    params.mocqa_eval.human_answers = "data/human"
    params.mocqa_eval.limit = None  # every item of the small fixture
    (tmp_path / "data" / "human").mkdir()
    pd.DataFrame(
        {"annotator": ["a1", "a2"], "item_id": ["s0.entity.en", "s0.entity.en"],
         "province": ["Aceh", "Sumut"], "answer": ["A", "A"]}
    ).to_csv(tmp_path / "data" / "human" / "sheet.csv", index=False)  # fmt: skip
    OmegaConf.save(
        OmegaConf.create(OmegaConf.to_container(params, resolve=True)), tmp_path / "params.yaml"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / ".cultureqa"))
    return tmp_path


def _use_server(workspace: Path, api_base: str) -> None:
    params = OmegaConf.load(workspace / "params.yaml")
    params.model = {
        "id": "api-model", "backend": "litellm", "batch_size": 1, "concurrency": 8,
        "decoding": {"temperature": 0.0, "max_tokens": 16, "seed": None},
        "options": {"litellm_model": "openai/api-model", "api_base": api_base,
                    "api_key_env": None, "drop_params": True},
        "retry": FAST_RETRY, "price": {"input_per_token": 1e-7, "output_per_token": 2e-7},
    }  # fmt: skip
    OmegaConf.save(params, workspace / "params.yaml")


def test_evaluate_analyze_track_with_baselines_and_an_api_model(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = pd.read_parquet(workspace / DATASET)
    with FakeOpenAIServer(responder=_responder(dataset)) as server:
        _use_server(workspace, server.api_base)
        params = OmegaConf.load(workspace / "params.yaml")
        params.mocqa_eval.max_error_share = 0.2  # a sixth is planted unparsable; it counts
        OmegaConf.save(params, workspace / "params.yaml")
        for entry in ROSTER:
            for prompt in PROMPTS:
                assert _stage("mocqa_evaluate")(["--model", entry, "--prompt", prompt]) == 0
        assert server.hits == 2 * len(dataset)  # one request per item × prompt
        assert _stage("mocqa_evaluate")(["--model", "model", "--prompt", "cot"]) == 0
        assert server.hits == 2 * len(dataset)  # the rerun came from the store
    _, rerun = read_run(workspace / "data/eval/mocqa/model/cot")
    assert rerun["model_calls"] == 0 and set(rerun["templates"]) == {"en", "id"}

    api = pd.read_parquet(workspace / "data/eval/mocqa/model/zero_shot/predictions.parquet")
    by_clue = api.groupby("clue_type")[["correct", "province_correct"]].mean()
    assert by_clue["correct"].to_dict() == {
        "entity": 1.0, "geographical": 0.0, "temporal": 1.0,
        "commonsense": 0.0, "comparison": 0.0, "intersection": 1.0,
    }  # fmt: skip
    assert by_clue["province_correct"].sum() == 3.0  # entity, geographical, intersection
    assert (api["status"] == "parse_error").mean() == pytest.approx(1 / 6)
    assert api["tokens"].gt(0).all() and api["cost_usd"].gt(0).all()
    fixed = pd.read_parquet(
        workspace / "data/eval/mocqa/baselines.first_option/cot/predictions.parquet"
    )
    assert set(fixed["answer_pred"]) == {"A"} and set(fixed["province_pred"]) == {"Aceh"}
    assert fixed["correct"].tolist() == (fixed["gold"] == "A").tolist()
    metrics = json.loads((workspace / "metrics/mocqa/eval/model/cot.json").read_text())
    assert metrics["en"]["multi_hop"] == 0.5 and metrics["id"]["parse_error_rate"] == pytest.approx(
        1 / 6, abs=1e-6
    )

    assert _stage("mocqa_analyze")([]) == 0
    reports = workspace / "reports" / "mocqa"
    main = pd.read_csv(reports / "main_multi_hop.csv")
    assert set(zip(main["model"], main["prompt"], strict=True)) == {
        *((m, p) for m in ("api-model", "random", "first-option") for p in PROMPTS),
        ("human", "human"),
    }
    assert list(main.columns)[2:5] == ["en.entity", "en.geographical", "en.temporal"]
    assert main.set_index("model").loc["api-model", "overall"].tolist() == [0.5, 0.5]
    deltas = pd.read_csv(reports / "cot_deltas.csv")
    assert set(deltas["model"]) == {"api-model", "random", "first-option"}
    assert deltas.loc[deltas["model"] == "api-model", "multi_hop_delta"].eq(0).all()
    assert "## Multi-hop accuracy (%)" in (reports / "tables.md").read_text()
    for png in (
        "breakdown_zero_shot",
        "breakdown_cot",
        "cot_delta_heatmap",
        "multi_hop_by_province",
    ):
        assert (reports / f"{png}.png").stat().st_size > 5000
    summary = json.loads((workspace / "metrics/mocqa/analysis/summary.json").read_text())
    taggers = json.loads((workspace / "metrics/mocqa/analysis/question_taggers.json").read_text())
    assert set(taggers) == {"en", "id"} and taggers["id"]["heldout_accuracy"] > 0.9
    assert taggers["en"]["gold_agreement"]["questions"] == 20  # hand-tagged built questions
    assert set(taggers["id"]["gold_agreement"]["verbs"]) >= {"bias_pct", "exact_share"}
    assert summary["api-model"]["cot"]["all"]["first_hop"] == 0.5
    headline = json.loads((workspace / "metrics/mocqa/headline.json").read_text())["multi_hop"]
    assert set(headline) == {"model", "baselines.first_option", "baselines.random", "human"}
    assert headline["model"] == {"cot": 0.5, "zero_shot": 0.5}
    plot = pd.read_csv(workspace / "metrics/mocqa/analysis/multi_hop_by_clue.csv")
    assert plot["panel"].iloc[0] == "model · cot" and plot["cell"].iloc[0] == "entity · en"
    assert summary["human"]["human"]["all"]["n"] == 2

    # A queued experiment whose evaluations DVC restored from cache is still tagged as itself.
    monkeypatch.setenv("DVC_EXP_NAME", "queued-exp")
    for entry in ROSTER:
        for prompt in PROMPTS:
            assert _stage("track")(["--only", f"mocqa/{entry}/{prompt}"]) == 0
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["cultureqa/mocqa"])
    parents = runs[runs["tags.cultureqa.group"].notna()]
    assert parents["tags.cultureqa.group"].tolist() == ["exp:queued-exp"]
    runs = runs[runs["tags.mlflow.parentRunId"].notna()]
    assert len(runs) == len(ROSTER) * len(PROMPTS) * 2  # × languages
    wanted = {"metrics.slice.acc.entity.en", "metrics.slice.first_hop.entity.id"}
    assert wanted | {"metrics.multi_hop"} <= set(runs)
    api_en = runs[
        (runs["tags.model"] == "api-model")
        & (runs["tags.prompt"] == "cot")
        & (runs["tags.language"] == "en")
    ]
    assert api_en["metrics.slice.acc.entity.en"].tolist() == [1.0]
    assert api_en["tags.mlflow.runName"].tolist() == ["api-model · cot · en"]
    assert api_en["metrics.parse_error_rate"].tolist() == [0.1667]  # 4 significant digits
    assert api_en["params.prompt.template_sha256"].tolist() == [rerun["templates"]["en"]]
    assert set(runs["tags.dvc.exp_name"]) == {"queued-exp"}


def test_stage_errors_are_one_readable_line(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cultureqa.core.config import run_stage

    main = _stage("mocqa_evaluate")
    english_only = pd.read_parquet(workspace / DATASET).query("language == 'en'")
    english_only.to_parquet(workspace / DATASET, index=False)
    assert run_stage(lambda: main(["--model", "baselines.random", "--prompt", "cot"])) == 2
    err = capsys.readouterr().err
    assert "column 'language': no items in language(s) ['id']" in err and DATASET in err
    (workspace / DATASET).unlink()
    assert run_stage(lambda: main(["--model", "baselines.random", "--prompt", "cot"])) == 2
    assert "build ID-MoCQA first" in capsys.readouterr().err


def test_stage_fails_past_the_error_threshold(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(faults=FaultPlan(bad_request=0.2, seed=1)) as server:
        _use_server(workspace, server.api_base)
        assert _stage("mocqa_evaluate")(["--model", "model", "--prompt", "zero_shot"]) == 1
    assert "items have no usable answer (limit 10.0%" in capsys.readouterr().err
    preds = pd.read_parquet(workspace / "data/eval/mocqa/model/zero_shot/predictions.parquet")
    errors = preds[preds["status"] == "error"]
    assert len(errors) > 0 and not errors["correct"].any()
    assert errors["error"].str.contains("BadRequest").all()


def test_config_composes_with_the_defaults_line(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    text = (conf / "config.yaml").read_text()
    if "- mocqa_eval:" not in text:
        text = text.replace("  - _self_\n", "  - mocqa_eval: default\n  - _self_\n", 1)
        (conf / "config.yaml").write_text(text)
    params = compose_params(conf)
    cfg = params["mocqa_eval"]
    assert cfg["roster"] == params["evaluate"]["roster"] and cfg["prompts"] == PROMPTS
    for style in cfg["prompts"]:
        for language in cfg["languages"]:
            assert (ROOT / "prompts/mocqa/evaluate" / f"{style}.{language}.txt").exists()
    assert compose_params(conf, ["mocqa_eval.prompts=[cot]"])["mocqa_eval"]["prompts"] == ["cot"]
