"""The cross-cultural pipeline end to end through its stage scripts, with the baselines.

A scratch workspace gets params.yaml with conf/cases/default.yaml composed under ``cases`` (what
the defaults line ``- cases: default`` does) and runs ingest → annotate → construct → shuffle →
validate → evaluate → analyze → report → track the way DVC would (cwd = workspace, DVC_ROOT
set). The local model stays out: it takes minutes, the baselines take milliseconds.
"""

from __future__ import annotations

import json
import runpy
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import yaml
from omegaconf import OmegaConf

from cultureqa.core.runlog import read_run, runlog_dir

ROOT = Path(__file__).resolve().parents[2]
ROSTER = ["baselines.random", "baselines.first_option"]
BUILD = ("cases_ingest", "cases_weird", "cases_annotate", "cases_construct", "cases_shuffle")


def _stage(name: str) -> Callable[..., int]:
    return runpy.run_path(str(ROOT / "stages" / f"{name}.py"), run_name="stage")["main"]  # type: ignore[no-any-return]


def compose_cases_params(overrides: dict[str, object] | None = None) -> OmegaConf:
    """params.yaml plus the ``cases`` group, as Hydra composes it (defaults list dropped)."""
    group = OmegaConf.load(ROOT / "conf" / "cases" / "default.yaml")
    group.pop("defaults")
    params = OmegaConf.merge(OmegaConf.load(ROOT / "params.yaml"), {"cases": group})
    for key, value in (overrides or {}).items():
        OmegaConf.update(params, key, value, merge=False)
    OmegaConf.resolve(params)
    return params  # type: ignore[return-value]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for folder in ("prompts", "expectations", "data/sources", "data/knowledge", "conf/cases"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    params = compose_cases_params(
        {
            "cases.roster": ROSTER,
            "cases.evaluate.progress": False,
            "cases.evaluate.limit": None,  # the whole case bank: the planted defects are in it
            "cases.analysis.include_baselines": True,
            "cases.analysis.sensitivity_without": "random",
        }
    )
    OmegaConf.save(params, tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / ".cultureqa"))
    return tmp_path


def _json(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_defaults_compose_offline() -> None:
    cases = compose_cases_params().cases
    assert cases.construct.model is None and list(cases.seeds) == [60, 40]
    assert cases.analysis.primary_seed == 60 and cases.analysis.human_seed == 60
    params = OmegaConf.load(ROOT / "params.yaml")
    assert all(OmegaConf.select(params, entry) is not None for entry in cases.roster)


def test_pipeline_end_to_end_with_baselines(workspace: Path) -> None:
    for name in BUILD:
        assert _stage(name)() == 0, name
    assert _stage("cases_validate")() == 0
    for entry in ROSTER:
        assert _stage("cases_evaluate")(["--model", entry]) == 0
    assert _stage("cases_analyze")() == 0
    assert _stage("cases_report")() == 0
    for entry in ROSTER:
        assert _stage("track")(["--only", f"cases/{entry}"]) == 0

    annotate = _json(workspace / "metrics/cases/annotate.json")
    assert len(annotate["continent_corrections"]) == 13  # the planted wrong labels
    # every UN member has a bin (cases_weird), so no case of the sample lacks indicators
    assert annotate["excluded_without_indicators"] == []
    validate = _json(workspace / "metrics/cases/validate.json")
    assert set(validate) == {"annotated", "items_seed60", "items_seed40"}
    assert all(r["success"] and not r["crashes"] for r in validate.values())

    first = pd.read_parquet(
        workspace / "data/eval/cases/baselines.first_option/predictions.parquet"
    )
    # 79 cases: the Cuban one included (Cuba's I is a proxy from its HDR GNI per capita)
    assert sorted(first["seed"].unique()) == [40, 60] and len(first) == 2 * 79
    assert (first["pred"] == "A").all()  # the fixed baseline always takes position A
    for _, part in first.groupby("seed"):  # so its accuracy is the share of gold A
        assert part["correct"].mean() == pytest.approx((part["gold"] == "A").mean())
    typed = first[~first["correct"]]
    assert typed["pred_type"].isin(list("ABCDE")).all()

    summary = _json(workspace / "metrics/cases/summary.json")
    assert set(summary["models"]) == {"random", "first-option"}
    seeds = summary["models"]["first-option"]["seeds"]
    assert seeds["60"]["accuracy"] == pytest.approx(13 / 79, abs=1e-6)
    assert {"max_gap_pp", "robust"} <= set(summary["models"]["random"]["robustness"])
    across = pd.read_parquet(workspace / "data/build/cases/analyze/across_models_by_domain.parquet")
    assert {"mean_accuracy", "sd_accuracy", "small_n", "delta_pp"} <= set(across.columns)
    # a cell with fewer than small_cell_n (10) cases is flagged: every domain of the sample but
    # customs (11 cases)
    assert (across["small_n"] == (across["n"] < 10)).all()
    assert set(across.loc[~across["small_n"], "domain"]) == {"customs"}

    tables_md = (workspace / "reports/cases/tables.md").read_text(encoding="utf-8")
    titles = ("Countries and cases per WEIRD bin", "Error-type shares by continent",
              "trends over WEIRD bins, pooled", "Trends per WEIRD dimension",
              "Logistic odds ratios per dimension, pooled, continent fixed effects")  # fmt: skip
    for title in titles:
        assert title in tables_md, title
    pngs = {p.name for p in (workspace / "reports/cases").glob("*.png")}
    assert {"error_types_by_model.png", "continent_domain_mean_accuracy.png",
            "continent_domain_sd_accuracy.png", "weird_bins.png"} <= pngs  # fmt: skip
    # every image dvc.yaml lists exists, also when every roster entry is a baseline
    listed = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["plots"]
    images = [p for p in listed if isinstance(p, str) and p.startswith("reports/cases/")]
    assert images and [p for p in images if not (workspace / p).exists()] == []

    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{workspace / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["cultureqa/cases"])
    parent = runs[runs["tags.cultureqa.group"].notna()]["run_id"].tolist()
    runs = runs[runs["tags.mlflow.parentRunId"].notna()]
    assert len(runs) == len(ROSTER) * 2  # one run per (model, seed)
    figures = mlflow.artifacts.list_artifacts(run_id=parent[0], artifact_path="figures")
    assert {f.path for f in figures} >= {"figures/weird_bins.png", "figures/accuracy.png"}
    assert {"metrics.accuracy", "metrics.macro_accuracy", "metrics.error_share.C"} <= set(runs)
    assert set(runs["tags.seed"]) == {"60", "40"}

    # A rerun answers from the response store.
    assert _stage("cases_evaluate")(["--model", ROSTER[0]]) == 0
    _, run = read_run(workspace / "data/eval/cases/baselines.random")
    assert run["model_calls"] == 0


def test_validate_stops_on_skewed_positions(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in BUILD:
        assert _stage(name)() == 0, name
    path = workspace / "data/build/cases/shuffle/items_seed40.parquet"
    items = pd.read_parquet(path)
    rows = []
    for row in items.to_dict("records"):  # move every answer to position A, consistently
        gold, types = row["answer"], json.loads(row["letter_types"])
        row["option_A"], row[f"option_{gold}"] = row[f"option_{gold}"], row["option_A"]
        types["A"], types[gold] = types[gold], types["A"]
        rows.append(row | {"answer": "A", "letter_types": json.dumps(types, sort_keys=True)})
    items = pd.DataFrame(rows)
    items.to_parquet(path, index=False)
    assert _stage("cases_validate")() == 1
    err = capsys.readouterr().err
    assert "breaks its invariants" in err and "expect_column_value_shares_to_be_uniform" in err
    assert "CRASHED" not in err


def _fake_llm(api_base: str) -> dict[str, object]:
    return {
        "id": "fake-llm", "backend": "litellm", "batch_size": 1, "concurrency": 4,
        "decoding": {"temperature": 0.0, "max_tokens": 64, "seed": None},
        "options": {"litellm_model": "openai/fake-llm", "api_base": api_base,
                    "api_key_env": None, "drop_params": True},
        "retry": {"attempts": 1, "initial_wait_s": 0.01, "max_wait_s": 0.1, "timeout_s": 10},
        "price": None,
    }  # fmt: skip


def _responder(messages: list[dict[str, object]]) -> str:
    """Construction requests get one valid item; evaluation requests answer "C" as JSON."""
    if messages[0]["role"] == "system":
        return (
            'Thinking done. {"comparison": {"foreign": "Tips are not expected.", '
            '"china": "Tips are uncommon too."}, "selection": "C"}'
        )
    options = {t: f"Option of type {t}, a specific explanation of this behaviour." for t in "ABCDE"}
    options["F"] = "The local institution and its norms make people act this way for good reasons."
    return json.dumps({"question": "Why does this happen here?", "options": options})


def test_llm_construction_and_chat_evaluation(workspace: Path) -> None:
    from cultureqa.testing import FakeOpenAIServer

    with FakeOpenAIServer(responder=_responder) as server:
        params = OmegaConf.load(workspace / "params.yaml")
        OmegaConf.update(params, "cases.construct.model", _fake_llm(server.api_base), merge=False)
        OmegaConf.update(params, "fake_llm", _fake_llm(server.api_base), merge=False)
        OmegaConf.save(params, workspace / "params.yaml")
        for name in BUILD:
            assert _stage(name)() == 0, name
        assert _stage("cases_validate")() == 0
        assert _stage("cases_evaluate")(["--model", "fake_llm"]) == 0
        requests = server.hits

    construct = _json(workspace / "metrics/cases/construct.json")
    calls = _json(runlog_dir(workspace / "data/build/cases/construct") / "construct.json")
    assert (construct["origin"], construct["items"], calls["model_calls"]) == ("llm", 79, 79)
    assert "model_calls" not in construct  # a rerun from the store must not change this file
    preds = pd.read_parquet(workspace / "data/eval/cases/fake_llm/predictions.parquet")
    assert requests == 79 + 2 * 79 and (preds["status"] == "ok").all()
    assert (preds["pred"] == "C").all() and (preds["kind"] == "model").all()
    assert (preds["comparison_china"] == "Tips are uncommon too.").all()
    shown = pd.read_parquet(workspace / "data/build/cases/shuffle/items_seed60.parquet")
    expected = {r["case_id"]: json.loads(r["letter_types"])["C"] for _, r in shown.iterrows()}
    seed60 = preds[preds["seed"] == 60]
    assert list(seed60["pred_type"]) == [expected[c] for c in seed60["case_id"]]
    assert preds["correct"].mean() == pytest.approx((preds["gold"] == "C").mean())
