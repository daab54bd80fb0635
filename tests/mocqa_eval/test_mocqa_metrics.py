"""Metrics on a hand-built prediction table: every number below is worked out by hand."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from cultureqa.analysis.roster import key_by_roster
from cultureqa.analysis.stats import wilson_ci
from cultureqa.mocqa import metrics as m
from cultureqa.mocqa.report import run_metrics

ITEMS = {  # item: (clue type, language, province, topic, gold)
    "i1": ("entity", "en", "Aceh", "food", "A"),
    "i2": ("entity", "id", "Aceh", "food", "B"),
    "i3": ("temporal", "en", "Bali", "art", "C"),
    "i4": ("temporal", "id", "Bali", "art", "A"),
}
# (model, backend, prompt): {item: (province right?, answer letter[, status, parse_error])}
PE = (1, "", "parse_error", "answer")
PLAN = {
    ("m1", "api", "zero_shot"): {"i1": (1, "A"), "i2": (1, "A"), "i3": (0, "C"), "i4": (0, "B")},
    ("m1", "api", "cot"): {"i1": (1, "A"), "i2": (1, "B"), "i3": (1, "C"), "i4": PE},
    ("m2", "api", "zero_shot"): {"i1": (0, "B"), "i2": (1, "A"), "i3": (0, "C"), "i4": (0, "B")},
    ("m2", "api", "cot"): {"i1": (0, "", "error"), "i2": (1, "B"), "i3": (1, "C"), "i4": (0, "B")},
    ("r", "random", "zero_shot"): {"i1": (0, "B"), "i2": (0, "C"), "i3": (0, "A"), "i4": (0, "B")},
}  # fmt: skip


def _row(model: str, backend: str, prompt: str, item: str, plan: tuple[Any, ...]) -> dict[str, Any]:
    clue, language, province, topic, gold = ITEMS[item]
    province_ok, answer, status, parse = (*plan, *(None, None, "ok", "")[len(plan) :])
    return {
        "model": model, "roster_entry": model, "backend": backend, "model_sha": model,
        "prompt": prompt, "item_id": item, "source_id": item, "clue_type": clue,
        "language": language, "province": province, "topic": topic, "gold": gold,
        "province_pred": province if province_ok else "Papua",
        "province_correct": bool(province_ok),
        "answer_pred": answer, "correct": answer == gold, "status": status, "parse_error": parse,
        "prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.001, "latency_s": 1.0,
    }  # fmt: skip


@pytest.fixture
def preds() -> pd.DataFrame:
    rows = [
        _row(model, backend, prompt, item, plan)
        for (model, backend, prompt), answers in PLAN.items()
        for item, plan in answers.items()
    ]
    return pd.DataFrame(rows)


def test_overall_table_has_both_hops_breakdown_rates_and_wilson_cis(preds: pd.DataFrame) -> None:
    table = m.slice_table(preds, []).set_index(["model", "prompt"])
    expected = {  # multi-hop, first-hop, (both, province only, answer only, both wrong)
        ("m1", "zero_shot"): (0.5, 0.5, (0.25, 0.25, 0.25, 0.25)),
        ("m1", "cot"): (0.75, 1.0, (0.75, 0.25, 0.0, 0.0)),
        ("m2", "zero_shot"): (0.25, 0.25, (0.0, 0.25, 0.25, 0.5)),
        ("m2", "cot"): (0.5, 0.5, (0.5, 0.0, 0.0, 0.5)),
    }
    for key, (multi, first, shares) in expected.items():
        row = table.loc[key]
        assert (row["multi_hop"], row["first_hop"]) == (multi, first)
        assert tuple(row[list(m.OUTCOMES)]) == shares
        assert sum(shares) == 1.0
    m1_cot = table.loc[("m1", "cot")]
    assert (m1_cot["parse_error_rate"], m1_cot["answer_parse_error_rate"]) == (0.25, 0.25)
    assert m1_cot["province_parse_error_rate"] == 0.0
    assert table.loc[("m2", "cot"), "error_rate"] == 0.25
    assert (table.loc[("m1", "zero_shot"), ["multi_hop_ci_low", "multi_hop_ci_high"]].tolist()
            == pytest.approx(wilson_ci(2, 4)))  # fmt: skip
    assert table.loc[("m1", "cot"), "first_hop_ci_low"] == pytest.approx(wilson_ci(4, 4)[0])


def test_main_table_is_laid_out_like_the_paper(preds: pd.DataFrame) -> None:
    human = pd.DataFrame([_row("human", "human", "human", "i1", (1, "A"))])
    table = m.main_table(pd.concat([preds, human], ignore_index=True))
    assert list(table.columns) == [
        "model", "prompt", "en.entity", "en.temporal", "en.overall",
        "id.entity", "id.temporal", "id.overall", "overall",
    ]  # fmt: skip
    row = table.set_index(["model", "prompt"]).loc[("m1", "zero_shot")]
    assert row.tolist() == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.5]
    human_row = table.set_index(["model", "prompt"]).loc[("human", "human")]
    assert human_row["en.entity"] == 1.0 and pd.isna(human_row["id.entity"])
    first = m.main_table(preds, "first_hop").set_index(["model", "prompt"])
    assert first.loc[("m1", "cot"), "overall"] == 1.0


def test_cot_deltas_per_model_clue_type_language(preds: pd.DataFrame) -> None:
    deltas = m.cot_deltas(preds).set_index(["model", "clue_type", "language"])
    assert set(deltas.index.get_level_values("model")) == {"m1", "m2"}  # r has no CoT run
    multi = deltas["multi_hop_delta"]
    assert multi[("m1", "entity", "id")] == 1.0 and multi[("m1", "entity", "en")] == 0.0
    assert multi[("m1", "all", "id")] == 0.5 and multi[("m2", "entity", "id")] == 1.0
    assert multi[("m2", "temporal", "id")] == 0.0
    assert deltas.loc[("m1", "temporal", "en"), "first_hop_delta"] == 1.0
    assert deltas.loc[("m1", "entity", "id"), "multi_hop_zero_shot"] == 0.0
    assert len(deltas) == 2 * 3 * 2  # models × (2 clue types + all) × languages


def test_cot_deltas_carry_paired_intervals_and_mcnemar_p(monkeypatch: pytest.MonkeyPatch) -> None:
    """CoT right on every item zero-shot missed: the interval excludes 0, tiny p; ties do not."""
    rows = []
    for i in range(30):
        item = f"x{i}"
        monkeypatch.setitem(ITEMS, item, ("entity", "en", "Aceh", "food", "A"))
        rows.append(_row("better", "api", "zero_shot", item, (0, "B")))
        rows.append(_row("better", "api", "cot", item, (1, "A")))
        answer = "A" if i % 2 else "B"
        rows.append(_row("same", "api", "zero_shot", item, (1, answer)))
        rows.append(_row("same", "api", "cot", item, (1, "B" if i % 2 else "A")))
    deltas = m.cot_deltas(pd.DataFrame(rows), 500, 7).set_index(["model", "clue_type"])
    better, same = deltas.loc[("better", "entity")], deltas.loc[("same", "entity")]
    assert better["n"] == 30 and better["multi_hop_delta"] == 1.0
    assert (better["multi_hop_delta_ci_low"], better["multi_hop_delta_ci_high"]) == (1.0, 1.0)
    assert better["multi_hop_p"] < 1e-6 and better["first_hop_delta"] == 1.0
    # half the items flip each way: the same accuracy, an interval around 0, p = 1
    assert same["multi_hop_delta"] == 0.0 and same["multi_hop_p"] == pytest.approx(1.0)
    assert same["multi_hop_delta_ci_low"] < 0 < same["multi_hop_delta_ci_high"]
    again = m.cot_deltas(pd.DataFrame(rows), 500, 7).set_index(["model", "clue_type"])
    assert again.loc[("same", "entity"), "multi_hop_delta_ci_low"] == same["multi_hop_delta_ci_low"]


def test_cot_deltas_read_three_ways_and_never_none_from_a_wide_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """30 items: CoT right where zero-shot missed is a difference; half flipping each way is
    inconclusive (its interval covers 0, and that alone is no "no difference"), with the n that
    would decide it; 400 items answered alike by both styles show no difference beyond 5 points."""
    rows = []
    for i in range(400):
        item = f"y{i}"
        monkeypatch.setitem(ITEMS, item, ("entity", "en", "Aceh", "food", "A"))
        if i < 30:
            rows.append(_row("better", "api", "zero_shot", item, (0, "B")))
            rows.append(_row("better", "api", "cot", item, (1, "A")))
            answer = "A" if i % 2 else "B"
            rows.append(_row("flips", "api", "zero_shot", item, (1, answer)))
            rows.append(_row("flips", "api", "cot", item, (1, "B" if i % 2 else "A")))
        answer = "A" if i % 3 else "C"
        rows.append(_row("alike", "api", "zero_shot", item, (1, answer)))
        rows.append(_row("alike", "api", "cot", item, (1, answer)))
    deltas = m.cot_deltas(pd.DataFrame(rows), 200, 7, margin=0.05)
    deltas = deltas.set_index(["model", "clue_type"])
    assert deltas.loc[("better", "entity"), "multi_hop_reading"] == "difference"
    flips = deltas.loc[("flips", "entity")]
    assert flips["multi_hop_reading"] == "inconclusive" and flips["multi_hop_n_to_decide"] > 30
    alike = deltas.loc[("alike", "entity")]
    assert alike["multi_hop_reading"] == "no difference beyond the margin"
    assert pd.isna(alike["multi_hop_n_to_decide"])
    assert (deltas["multi_hop_p_holm"] >= deltas["multi_hop_p"] - 1e-12).all()


def test_the_report_shows_intervals_in_tables_and_plots(preds: pd.DataFrame, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cultureqa.mocqa.report import ReportPaths, write_report

    paths = ReportPaths(metrics=tmp_path / "metrics", reports=tmp_path / "reports")
    write_report(preds, paths, bootstrap=(200, 1))
    text = (paths.reports / "tables.md").read_text(encoding="utf-8")
    assert "with Wilson 95% intervals" in text and "multi-hop Δ [95% CI]" in text
    assert "100.0 [" in text  # m1 CoT first hop on entity: 100% with its interval
    deltas = pd.read_csv(paths.reports / "cot_deltas.csv")
    assert {"multi_hop_delta_ci_low", "multi_hop_delta_ci_high", "multi_hop_p"} <= set(deltas)
    assert {"multi_hop_reading", "multi_hop_p_equivalence_holm"} <= set(deltas)
    assert "multi-hop reading" in text and "Tango TOST" in text
    for png in ("cot_delta_heatmap", "accuracy_by_clue_type"):
        assert (paths.reports / f"{png}.png").stat().st_size > 5000


def test_best_worst_clue_type_range(preds: pd.DataFrame) -> None:
    ranges = m.clue_type_range(preds).set_index(["model", "prompt", "language"])
    row = ranges.loc[("m1", "cot", "all")]
    assert (row["best_clue_type"], row["best"], row["worst_clue_type"], row["worst"]) == (
        "entity", 1.0, "temporal", 0.5,
    )  # fmt: skip
    assert row["range"] == 0.5
    assert ranges.loc[("m2", "zero_shot", "all"), "best_clue_type"] == "temporal"
    assert ranges.loc[("m2", "zero_shot", "all"), "range"] == 0.5
    assert ranges.loc[("m1", "zero_shot", "all"), "range"] == 0.0  # a tie
    assert ranges.loc[("m1", "zero_shot", "en"), "range"] == 0.0


def test_shared_errors_leave_baselines_out(preds: pd.DataFrame) -> None:
    shared = m.shared_errors(preds)
    assert shared.items[["prompt", "item_id", "shared_pred", "gold"]].values.tolist() == [
        ["zero_shot", "i2", "A", "B"],
        ["zero_shot", "i4", "B", "A"],
    ]
    assert set(shared.items["n_models"]) == {2}
    topic = shared.by_topic.set_index(["prompt", "topic"])
    assert topic.loc[("zero_shot", "food")].tolist() == [2, 1, 0.5]
    assert topic.loc[("cot", "art"), "shared_errors"] == 0  # a parse error picks no option
    assert (
        shared.by_province.set_index(["prompt", "province"]).loc[("zero_shot", "Bali"), "share"]
        == 0.5
    )
    with_baseline = m.shared_errors(preds, exclude_backends=())
    assert with_baseline.items["item_id"].tolist() == ["i4"]  # r also picks B on i4 only
    assert m.shared_errors(preds, min_models=3).items.empty


def test_roster_entries_sharing_a_model_id(preds: pd.DataFrame) -> None:
    twin = preds[preds["model"] == "r"].assign(roster_entry="model")
    split = key_by_roster(pd.concat([preds, twin], ignore_index=True))
    assert len(split) == len(preds) + len(twin)  # same config, still its own result
    assert {"r [model]", "r [r]"} <= set(split["model"])
    assert len(m.all_slices(split)["overall"]) > len(m.all_slices(preds)["overall"])


def test_summary_and_mlflow_metric_names(preds: pd.DataFrame) -> None:
    summary = m.summary(m.all_slices(preds))
    assert summary["m1"]["cot"]["all"]["multi_hop"] == 0.75
    assert summary["m1"]["cot"]["id"]["first_hop"] == 1.0
    part = preds[(preds["model"] == "m1") & (preds["prompt"] == "zero_shot")]
    metrics = run_metrics(part[part["language"] == "en"])
    assert metrics["slice.acc.entity.en"] == 1.0 and metrics["slice.first_hop.temporal.en"] == 0.0
    assert metrics["breakdown.answer_only"] == 0.5 and metrics["slice.n.entity.en"] == 1.0
    assert metrics["slice.acc.province.Aceh"] == 1.0 and metrics["slice.acc.topic.art"] == 1.0
    assert metrics["tokens.prompt"] == 20.0 and metrics["cost_usd"] == pytest.approx(0.002)
