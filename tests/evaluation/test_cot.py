"""prompt=cot on every benchmark: MCQ settings run with the CoT templates, completion settings are
skipped with their reason in run.json (never silently), and loglik backends score after a cue."""

from __future__ import annotations

import asyncio
import json
import runpy
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.core.config import run_stage
from cultureqa.core.records import Setting
from cultureqa.evaluation.engine import Decoding
from cultureqa.evaluation.prompts import TemplateError, find_template, style_skip_reason
from cultureqa.evaluation.runner import SettingPlan, run_setting
from cultureqa.llm.fake import ScriptedModel
from cultureqa.testing.composed import composed
from tests.conftest import make_item

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = sorted(p.stem for p in (ROOT / "conf" / "benchmark").glob("*.yaml"))
BASELINES = ["baselines.random", "baselines.first_option"]


def _stage(name: str) -> Callable[[list[str]], int]:
    return runpy.run_path(str(ROOT / "stages" / f"{name}.py"), run_name="stage")["main"]  # type: ignore[no-any-return]


@pytest.fixture
def cot_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace whose params are `-S prompt=cot` with every benchmark config added."""
    for folder in ("prompts", "expectations", "data/sources", "data/knowledge"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")  # validate checks sources are DVC deps
    extra = [b for b in BENCHMARKS if b != "indoculture"]
    overrides = ["prompt=cot", f"evaluate.benchmarks=[{','.join(BENCHMARKS)}]"]
    overrides += [f"+benchmark@benchmarks.{b}={b}" for b in extra]
    params = OmegaConf.create(composed(ROOT / "conf", overrides))
    params.evaluate.roster = BASELINES
    params.evaluate.progress = False
    OmegaConf.save(params, tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / ".cultureqa"))
    return tmp_path


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_cot_runs_every_benchmark_on_the_baselines(cot_workspace: Path, benchmark: str) -> None:
    params = OmegaConf.load(cot_workspace / "params.yaml")
    settings = list(params.benchmarks[benchmark].settings)
    # validate (templates are checked there too) must accept cot before evaluate runs
    assert run_stage(lambda: _stage("validate")(["--benchmark", benchmark])) == 0
    main = _stage("evaluate")
    for entry in BASELINES:
        assert run_stage(lambda e=entry: main(["--benchmark", benchmark, "--model", e])) == 0
        out = cot_workspace / "data" / "eval" / benchmark / entry
        run = json.loads((out / "run.json").read_text())
        preds = pd.read_parquet(out / "predictions.parquet")
        completion = {s for s in settings if s.startswith("completion-")}
        assert set(run["skipped"]) == completion
        for reason in run["skipped"].values():
            assert "does not apply to completion scoring" in reason
        assert set(preds["setting"]) == set(settings) - completion
        assert set(run["templates"]) == set(settings) - completion
        assert run["prompt"] == "cot"
    assert run_stage(lambda: _stage("analyze")(["--benchmark", benchmark])) == 0


def test_cot_template_scores_letters_after_the_answer_cue() -> None:
    """A scored model cannot reason: the cue of the item's language follows the CoT instruction."""
    template = find_template(ROOT, "indoculture", "mcq", "cot", "id")
    assert template.path.name == "cot.id.txt"
    model = ScriptedModel(loglik_fn=lambda r: [-2.0, -0.5, -1.0])
    plan = SettingPlan(Setting("mcq", "none", "id"), template)
    frame = asyncio.run(run_setting(model, [make_item(answer=1)], plan, _none, Decoding()))
    context = model.loglik_calls[0].context
    assert "langkah demi langkah" in context and context.endswith("\nJawaban:")
    assert frame["pred"][0] == "B"


def test_cot_reply_is_read_from_its_final_answer_line() -> None:
    reasoning = "Option A is a Javanese custom, and C is not given at weddings.\nAnswer: B"
    model = ScriptedModel(replies=[reasoning])
    template = find_template(ROOT, "default", "mcq", "cot", "en")
    plan = SettingPlan(Setting("mcq", "none", "en"), template)
    item = make_item(answer=1, language="en")
    frame = asyncio.run(run_setting(model, [item], plan, _none, Decoding(max_tokens=1024)))
    assert frame["pred"][0] == "B" and bool(frame["correct"][0])
    assert model.generate_calls[0].max_tokens == 1024


def test_a_style_that_does_not_apply_says_why_and_an_unknown_style_fails() -> None:
    assert style_skip_reason("zero_shot", "completion") is None
    assert style_skip_reason("cot", "mcq") is None
    reason = style_skip_reason("cot", "completion")
    assert reason is not None and "prompt=zero_shot" in reason
    with pytest.raises(TemplateError, match="unknown prompt style 'cto'"):
        style_skip_reason("cto", "mcq")


def test_cot_generation_budget_floor_reaches_a_chat_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chat model configured for 16-token letters gets the CoT floor (1024) to reason in."""
    from cultureqa.benchmarks.spec import BenchmarkSpec
    from cultureqa.core.config import select
    from cultureqa.evaluation.engine import RunSpec, evaluate
    from cultureqa.evaluation.task import McqFamily
    from cultureqa.llm import registry

    chat = ScriptedModel("chat", replies=["It is a Balinese rite.\nAnswer: A"])
    factory = lambda cfg: registry.BuiltModel(chat, {"t": 1}, chunk_size=8)  # noqa: E731
    monkeypatch.setitem(registry._FACTORIES, "scripted_chat_test", factory)
    params = OmegaConf.create(composed(ROOT / "conf", ["prompt=cot"]))
    spec = BenchmarkSpec.from_config(select(params, "benchmarks.indoculture"))
    model_cfg = {"id": "chat", "backend": "scripted_chat_test", "decoding": {"max_tokens": 16}}
    floor = int(params.prompt.min_max_tokens)
    family = McqFamily(spec, ROOT, "cot", floor)
    record, preds = evaluate(family, RunSpec("model", model_cfg, tmp_path / "r.sqlite", 0.1))
    assert {r.max_tokens for r in chat.generate_calls} == {1024}
    assert set(record.skipped) == {
        "completion-none-id",
        "completion-country-id",
        "completion-province-id",
    }
    assert (preds["status"] == "ok").all()


def _none(item, level):  # type: ignore[no-untyped-def]
    return ""


def test_skipped_settings_are_one_warning_per_reason(caplog: pytest.LogCaptureFixture) -> None:
    """Under cot, IndoCulture's 3 completion settings are one line, not three; all in the plan."""
    from cultureqa.benchmarks.spec import BenchmarkSpec
    from cultureqa.core.config import select
    from cultureqa.evaluation.engine import ModelView, Skip
    from cultureqa.evaluation.task import McqFamily

    params = OmegaConf.create(composed(ROOT / "conf", ["prompt=cot"]))
    spec = BenchmarkSpec.from_config(select(params, "benchmarks.indoculture"))
    with caplog.at_level("WARNING", logger="cultureqa.evaluation.task"):
        plan = list(McqFamily(spec, ROOT, "cot").plan(ModelView("m", True, Decoding())))
    skips = [p.label for p in plan if isinstance(p, Skip)]
    assert len(skips) == 3
    (line,) = [r.getMessage() for r in caplog.records if "skipping" in r.getMessage()]
    assert line.startswith(f"indoculture/m: skipping 3 of {len(spec.settings)} settings (")
    assert all(name in line for name in skips) and "does not apply to completion" in line
