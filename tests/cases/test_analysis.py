"""Cross-cultural analysis on a hand-built prediction table whose numbers are known.

Eight cases, two models (m1, m2) and a baseline, seeds 60 (primary) and 40. The selected error
type per case is written out below, so every expected share, accuracy and gap can be checked by
hand; the trend and regression tests check the wiring against direct calls of the statistics.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cultureqa.analysis import stats
from cultureqa.cases.analysis import (
    POOLED,
    AnalysisOptions,
    analyze,
    error_shares,
    prepare,
    weird_trends,
)
from cultureqa.cases.report import human_predictions, summary, write_plots
from cultureqa.core.io import SourceError

#        case   domain     continent  bin  m1@60 m1@40 m2@60 m2@40 base (both seeds)
CASES = [
    ("c1", "law", "Europe", 5, "F", "F", "F", "F", "F"),
    ("c2", "law", "Europe", 5, "F", "F", "B", "B", "B"),
    ("c3", "customs", "Asia", 0, "A", "A", "F", "F", "B"),
    ("c4", "customs", "Asia", 0, "A", "F", "C", "C", "B"),
    ("c5", "customs", "Africa", 1, "C", "C", "F", "F", "B"),
    ("c6", "customs", "Africa", 1, "E", "E", "E", "E", "B"),
    ("c7", "customs", "Africa", 1, "F", "F", "A", "A", "B"),
    ("c8", "customs", "Africa", 2, "", "", "F", "F", "B"),  # m1 gave no readable selection
]
COLUMNS = {("m1", 60): 4, ("m1", 40): 5, ("m2", 60): 6, ("m2", 40): 7, ("base", 60): 8}


def _row(case: tuple[object, ...], model: str, seed: int, kind: str) -> dict[str, object]:
    case_id, domain, continent, weird_bin = case[:4]
    chosen = str(case[COLUMNS.get((model, seed), 8)])
    topics = ["food", "law"] if case_id in {"c1", "c2", "c3", "c4"} else ["food"]
    return {
        "model": model, "kind": kind, "seed": seed, "case_id": case_id, "domain": domain,
        "continent": continent, "country": f"{continent}-land", "weird_bin": weird_bin,
        "weird_score": float(weird_bin) + 0.5 * (weird_bin < 5),
        "W": int(continent == "Europe"), "E": int(weird_bin) % 3, "I": int(weird_bin) % 4,
        "R": int(weird_bin) % 4, "D": int(weird_bin) % 3,
        "topic_categories": json.dumps(topics), "pred_type": chosen,
        "correct": chosen == "F", "status": "ok" if chosen else "parse_error",
    }  # fmt: skip


def predictions() -> pd.DataFrame:
    kinds = {"m1": "model", "m2": "model", "base": "baseline"}
    rows = [_row(c, m, s, k) for m, k in kinds.items() for s in (60, 40) for c in CASES]
    return pd.DataFrame(rows)


OPTIONS = AnalysisOptions(
    primary_seed=60, min_topic_n=5, small_cell_n=10, sensitivity_without="m2", dimensions=("W",)
)


@pytest.fixture(scope="module")
def result():  # type: ignore[no-untyped-def]
    return analyze(predictions(), OPTIONS)


def test_error_type_shares_are_errors_of_type_over_all_errors() -> None:
    primary = prepare(predictions()).query("seed == 60")
    by_model = error_shares(primary, [], ["m1", "m2"]).set_index("model")
    m1 = by_model.loc["m1"]
    assert (m1["n"], m1["n_wrong"], m1["n_untyped"], m1["n_errors"]) == (8, 5, 1, 4)
    assert [m1[f"share_{t}"] for t in "ABCDE"] == [0.5, 0.0, 0.25, 0.0, 0.25]
    pooled = by_model.loc[POOLED]  # m1 and m2, not the baseline: A,A,C,E + B,C,E,A
    assert pooled["n_errors"] == 8
    assert [pooled[f"share_{t}"] for t in "ABCDE"] == [3 / 8, 1 / 8, 2 / 8, 0.0, 2 / 8]
    by_continent = error_shares(primary, ["continent"], ["m1"]).set_index(["model", "continent"])
    assert math.isnan(by_continent.loc[("m1", "Europe"), "share_A"])  # no errors, no share
    assert by_continent.loc[("m1", "Asia"), "share_A"] == 1.0
    africa = by_continent.loc[("m1", "Africa")]
    assert (africa["share_C"], africa["share_E"], africa["n_untyped"]) == (0.5, 0.5, 1)


def test_accuracy_macro_accuracy_and_wilson(result) -> None:  # type: ignore[no-untyped-def]
    overall = result.tables["overall"].set_index(["model", "seed"])
    m1 = overall.loc[("m1", 60)]
    assert m1["accuracy"] == 3 / 8
    # the paper's definition divides by all ten declared domains; eight are missing (flagged)
    assert m1["macro_accuracy"] == pytest.approx((2 / 2 + 1 / 6) / 10)  # law 2/2, customs 1/6
    assert m1["macro_accuracy_present"] == pytest.approx((2 / 2 + 1 / 6) / 2)
    assert m1["macro_definition"] == "all_declared"
    assert m1["missing_domains"].split(", ")[:2] == ["architecture", "language and writing"]
    assert m1["n_domains"] == 2 and m1["parse_error_rate"] == 1 / 8
    assert (m1["ci_low"], m1["ci_high"]) == pytest.approx(stats.wilson_ci(3, 8))
    assert overall.loc[("m2", 60), "macro_accuracy"] == pytest.approx(0.1)
    present = analyze(predictions(), dataclasses.replace(OPTIONS, macro="present_domains"))
    m2 = present.tables["overall"].set_index(["model", "seed"]).loc[("m2", 60)]
    assert m2["macro_accuracy"] == pytest.approx(0.5) and m2["macro_definition"] != "all_declared"
    with pytest.raises(ValueError, match="macro definition"):
        analyze(predictions(), dataclasses.replace(OPTIONS, macro="mean"))


def test_robustness_gap_against_two_pp(result) -> None:  # type: ignore[no-untyped-def]
    table = result.tables["robustness"].set_index("model")
    assert table.loc["m1", "accuracy_pp_seed_60"] == 37.5
    assert table.loc["m1", "max_gap_pp"] == pytest.approx(12.5)  # c4 right only under seed 40
    assert not table.loc["m1", "robust"]
    assert table.loc["m2", "max_gap_pp"] == 0 and table.loc["m2", "robust"]
    assert (table["threshold_pp"] == 2.0).all()


def test_across_models_mean_sd_flags_and_sensitivity(result) -> None:  # type: ignore[no-untyped-def]
    assert result.aggregate_models == ("m1", "m2")  # baselines are not "models"
    law = result.tables["across_models_by_domain"].set_index("domain").loc["law"]
    assert law["mean_accuracy"] == 0.75 and law["sd_accuracy"] == pytest.approx(
        np.std([1, 0.5], ddof=1)
    )
    assert (law["n_models"], law["n"], bool(law["small_n"])) == (2, 2, True)
    assert law["mean_accuracy_without"] == 1.0 and law["delta_pp"] == pytest.approx(-25.0)
    grid = result.tables["across_models_by_continent_domain"]
    assert len(grid) == 3 and grid["small_n"].all()


def test_topics_below_the_threshold_stay_out(result) -> None:  # type: ignore[no-untyped-def]
    by_topic = result.tables["accuracy_by_topic"]
    assert set(by_topic["topic_category"]) == {"food"}  # "law" has 4 cases < min_topic_n 5
    assert by_topic.set_index("model").loc["m1", "n"] == 8


def test_trend_wiring_matches_direct_cochran_armitage(result) -> None:  # type: ignore[no-untyped-def]
    trends = result.tables["weird_trends"].query("scope == 'model'")
    m1 = trends[trends["model"] == "m1"].set_index("error_type")
    # m1 on seed 60 per bin 0..5: answers 2,3,1,0,0,2; correct 0,1,0,0,0,2; errors 2,2,0,0,0,0
    acc = stats.cochran_armitage_trend([0, 1, 0, 0, 0, 2], [2, 3, 1, 0, 0, 2], list(range(6)))
    assert m1.loc["", "z"] == pytest.approx(acc.z) and m1.loc["", "delta_pp"] == 100.0
    share_a = stats.cochran_armitage_trend([2, 0, 0, 0, 0, 0], [2, 2, 0, 0, 0, 0], list(range(6)))
    assert m1.loc["A", "p_value"] == pytest.approx(share_a.p_value)
    assert m1.loc["A", "delta_pp"] == pytest.approx(share_a.endpoint_delta_pp)  # bins 0 → 1 here
    models = trends[~trends["chance"]]  # the baseline "base" is a reference, not a test
    for measure, family in models.groupby("measure"):  # BH within each family, not across
        _, q = stats.bh_fdr(family["p_value"].to_numpy())
        np.testing.assert_allclose(family["q_value"].to_numpy(), q, equal_nan=True)
        assert len(family) == (2 if measure == "accuracy" else 10)
    base = trends[trends["model"] == "base"]
    assert base["chance"].all() and base["q_value"].isna().all() and not base["reject"].any()
    per_model = weird_trends(
        prepare(predictions()).query("seed == 60"), dataclasses.replace(OPTIONS, fdr_by=("model",))
    )
    assert set(per_model["scope"]) == {"model"}  # no models to pool → no pooled rows
    m1_family = per_model[per_model["model"] == "m1"]
    _, q = stats.bh_fdr(m1_family["p_value"].to_numpy())
    np.testing.assert_allclose(m1_family["q_value"].to_numpy(), q, equal_nan=True)


def test_logit_wiring_matches_direct_fit(result) -> None:  # type: ignore[no-untyped-def]
    logits = result.tables["dimension_logits"]
    # (3 models + pooled) × dimensions × error types × (none, continent)
    assert len(logits) == 4 * 1 * 5 * 2
    row = logits.query("model == 'm2' and error_type == 'A' and fixed_effects == 'none'").iloc[0]
    errors = prepare(predictions()).query("seed == 60 and model == 'm2' and is_error")
    direct = stats.logit_odds_ratio(
        errors.assign(y=(errors["pred_type"] == "A").astype(int)), "y", "W"
    )
    assert row["n"] == direct.n == 4
    assert row["note"] == direct.note


def test_human_sheets_become_prediction_rows(tmp_path: Path) -> None:
    items = pd.DataFrame(
        {
            "case_id": ["c1", "c2", "c3"],
            "shuffle_seed": 60,
            "domain": "law",
            "letter_types": json.dumps({k: k for k in "ABCDEF"}),
        }
    )
    sheet = tmp_path / "answers.csv"
    sheet.write_text(
        "respondent_group,case_id,selection\nstudents,c1,F\nstudents,c2,a\nstudents,c3,\n"
    )
    rows = human_predictions([sheet], items)
    assert list(rows["model"].unique()) == ["human:students"] and (rows["kind"] == "human").all()
    assert list(rows["correct"]) == [True, False, False]
    assert list(rows["pred_type"]) == ["F", "A", ""]
    assert list(rows["status"]) == ["ok", "ok", "parse_error"]
    sheet.write_text("respondent_group,case_id,selection\nstudents,c1,F\nstudents,c9,B\n")
    with pytest.raises(SourceError, match=r"row 2, column 'case_id'.*c9"):
        human_predictions([sheet], items)


def test_summary_is_json_and_plots_are_written(result, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    tree = summary(result)
    json.dumps(tree, allow_nan=False)
    assert set(tree["models"]) == {"m1", "m2", "base"}
    assert tree["pooled_error_type_shares"]["A"] == 0.375
    plots = write_plots(result, tmp_path)
    assert {p.name for p in plots} >= {"error_types_by_model.png", "weird_bins.png"}


def test_an_empty_weird_bins_panel_says_why(result, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Planted: no pooled rows (a roster of baselines only): the right panel names the reason."""
    from cultureqa.cases import report

    shown: dict[str, list[str]] = {}

    def capture(fig, target, dpi):  # type: ignore[no-untyped-def]
        shown[Path(target).name] = [t.get_text() for ax in fig.axes for t in ax.texts]
        return Path(target)

    monkeypatch.setattr(report, "save_png", capture)
    report._bin_lines(result, tmp_path / "weird_bins.png")
    assert shown["weird_bins.png"] == []  # both panels drawn: no notice
    shares = result.tables["error_types_by_weird_bin"]
    tables = {**result.tables, "error_types_by_weird_bin": shares[shares["model"] != POOLED]}
    baselines = dataclasses.replace(
        result, tables=tables, notes={"pooled": "no roster entry of kind 'model'"}
    )
    report._bin_lines(baselines, tmp_path / "weird_bins.png")
    assert shown["weird_bins.png"] == ["nothing to draw: no roster entry of kind 'model'"]
