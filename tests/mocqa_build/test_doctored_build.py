"""Issue 11 "done when": a build from a doctored source repairs or removes each planted defect
with its reason, and the GX suite fails on a finalized file that still holds one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.knowledge.provinces import load_knowledge_base
from cultureqa.mocqa_build import claims, runners
from cultureqa.mocqa_build.pipeline import MocqaSettings, write_stage
from cultureqa.mocqa_build.verify import STATEMENT_LEAK, template_repairer, verify_variants
from cultureqa.mocqa_shared.schema import dumps_evidence

SUITE = Path(__file__).resolve().parents[2] / "expectations" / "mocqa_dataset.json"
RUMOH = {
    "en": "Think of the province that is home to Rumoh Aceh, a timber house on round pillars",
    "id": "Bayangkan provinsi tempat Rumoh Aceh, rumah kayu panggung bertiang bulat",
}
SMALLEST = {
    "en": "Among the provinces on the island of Sumatra, one has the smallest land area",
    "id": "Di antara provinsi di Pulau Sumatra, ada satu yang wilayahnya paling kecil",
}
BATAK = {
    "en": "At a Batak wedding, the bride's parents drape over the couple's shoulders a",
    "id": "Dalam pesta pernikahan adat Batak, orang tua pengantin perempuan menyelimutkan",
}


def _plant_clue(frame: pd.DataFrame, pair: str, clues: dict[str, str], evidence: Any) -> None:
    for index in frame.index[frame["pair_id"] == pair]:
        language = frame.at[index, "language"]
        old = frame.at[index, "clue"]
        frame.at[index, "question"] = frame.at[index, "question"].replace(old, clues[language])
        frame.at[index, "clue"] = clues[language]
        if evidence is not None:
            frame.at[index, "clue_evidence"] = dumps_evidence(evidence)


def _pair(frame: pd.DataFrame, province: str, clue_type: str) -> str:
    mask = (frame["province"] == province) & (frame["clue_type"] == clue_type)
    return str(frame.loc[mask, "pair_id"].iloc[0])


@pytest.fixture(scope="module")
def doctored(tmp_path_factory: pytest.TempPathFactory, mocqa_helpers) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("doctored")
    params = mocqa_helpers["compose"](tmp)
    settings: MocqaSettings = mocqa_helpers["settings_for"](params, tmp)
    ingest = runners.run_ingest(settings, params["benchmarks"][settings.benchmark])
    items = ingest.frame
    batak_item = items.index[items["province"] == "North Sumatra"][-1]
    for language, column in (("en", "context_en"), ("id", "context_id")):
        items.at[batak_item, column] = BATAK[language]
    write_stage(settings, "ingest", ingest)
    expand = runners.run_expand(settings)
    frame = expand.frame
    rumoh, false_claim = _pair(frame, "Aceh", "entity"), _pair(frame, "West Sumatra", "comparison")
    _plant_clue(frame, rumoh, RUMOH, None)
    kb = load_knowledge_base()
    benchmark_only = claims.comparison_evidence(kb, "area_km2", "min1", "Sumatra")
    _plant_clue(frame, false_claim, SMALLEST, benchmark_only)
    write_stage(settings, "expand", expand)
    results = {"expand": expand}
    for step in ("judge", "verify", "rebalance"):
        results[step] = getattr(runners, f"run_{step}")(settings)
        write_stage(settings, step, results[step])
    metrics = {s: r.metrics for s, r in results.items()}
    final, _, markdown = runners.run_finalize(settings, metrics, "doctored sample")
    removed = pd.concat([r.removed for r in results.values()], ignore_index=True)
    return {
        "settings": settings,
        "items": items,
        "batak": str(items.at[batak_item, "source_id"]),
        "rumoh": rumoh,
        "false_claim": false_claim,
        "expand": frame,
        "judged": results["judge"].frame,
        "removed": removed,
        "final": final.frame,
        "markdown": markdown,
        "metrics": metrics,
    }


def test_planted_rumoh_aceh_clue_is_removed_by_the_judge_with_its_reason(doctored) -> None:
    removed = doctored["removed"].set_index("variant_id")
    rows = removed[removed["pair_id"] == doctored["rumoh"]]
    assert set(rows["language"]) == {"en", "id"} and set(rows["stage"]) == {"judge"}
    assert rows["reason"].eq("a judge rated it Significant").all()
    assert rows["detail"].str.contains("names its province: Aceh").all()


def test_planted_false_comparison_is_removed_because_it_fails_nationally(doctored) -> None:
    removed = doctored["removed"]
    rows = removed[removed["pair_id"] == doctored["false_claim"]]
    assert set(rows["language"]) == {"en", "id"} and set(rows["stage"]) == {"judge"}
    assert rows["detail"].str.contains("clue claim not verified").all()


def test_planted_batak_statement_is_rewritten_and_counted(doctored) -> None:
    final = doctored["final"]
    kept = final[final["source_id"] == doctored["batak"]]
    assert len(kept) == 12  # every clue type in both languages survives: repaired, not lost
    assert not kept["question"].str.contains("Batak").any()
    assert kept.loc[kept["language"] == "en", "question"].str.contains("local wedding").all()
    assert kept.loc[kept["language"] == "id", "question"].str.contains("adat setempat").all()
    evidence = json.loads(kept["clue_evidence"].iloc[0])
    assert any(t.startswith("Batak") for t in evidence["stem_terms_rewritten"])
    assert doctored["metrics"]["expand"]["statements_rewritten"]["en: people"] >= 6


def test_verify_repairs_a_leak_planted_after_the_judge(doctored) -> None:
    """Verify phase 1 on its own: a clue leak gets another fact, a statement leak is rewritten
    with the same clue; both are logged as repairs with their issues."""
    settings = doctored["settings"]
    judged = doctored["judged"].copy()
    clue_pair = _pair(judged, "Aceh", "geographical")
    _plant_clue(judged, clue_pair, RUMOH, None)
    statement_row = judged.index[
        (judged["province"] == "North Sumatra") & (judged["language"] == "en")
    ][0]
    judged.at[statement_row, "question"] += " Batak people say so."
    repairer = template_repairer(doctored["items"], runners._template_generator(settings))
    result = verify_variants(judged, settings.verify, repairer)
    assert result.removed.empty and len(result.frame) == len(judged)
    log = result.tables["repairs"]
    assert log["resolved"].all()
    clue_log = log[log["variant_id"].str.startswith(clue_pair.split(".")[0])]
    assert clue_log["issues"].str.contains("clue names its province: Aceh").any()
    statement_log = log[log["issues"].str.contains(STATEMENT_LEAK, regex=False)]
    assert statement_log["issues"].str.contains("Batak").any()
    before = judged.at[statement_row, "fact_key"]
    fixed = result.frame.set_index("variant_id")
    after = fixed.at[judged.at[statement_row, "variant_id"], "fact_key"]
    assert before == after  # the clue was fine: only the statement was rebuilt


def test_language_balance_and_uniform_gold_still_hold(doctored) -> None:
    report = _suite(doctored["final"])
    assert report.success, report.message()


def _suite(frame: pd.DataFrame) -> Any:
    import cultureqa.validation.mocqa_expectations  # noqa: F401 - registers the custom types
    from cultureqa.validation import run_suite

    report = run_suite(SUITE, frame.reset_index(drop=True))
    assert report.crashes == [], report.message()
    return report


@pytest.mark.parametrize("defect", ["rumoh", "batak", "false_claim"])
def test_gx_fails_on_a_finalized_file_that_still_holds_a_planted_defect(
    doctored, defect: str
) -> None:
    final = doctored["final"].copy()
    if defect == "rumoh":
        row = final.index[(final["province"] == "Aceh") & (final["language"] == "en")][0]
        final.at[row, "question"] = RUMOH["en"] + ". " + final.at[row, "question"]
        expected = "expect_questions_to_not_name_own_province"
    elif defect == "batak":
        row = final.index[(final["province"] == "North Sumatra") & (final["language"] == "id")][0]
        final.at[row, "question"] += " " + BATAK["id"]
        expected = "expect_questions_to_not_name_own_province"
    else:
        row = final.index[final["province"] == "West Sumatra"][0]
        kb = load_knowledge_base()
        evidence = claims.comparison_evidence(kb, "area_km2", "min1", "Sumatra")
        final.at[row, "clue_evidence"] = dumps_evidence(evidence)
        expected = "expect_claims_to_hold_nationally"
    report = _suite(final)
    failed = {f["expectation"] for f in report.failures}
    assert failed == {expected}, report.message()
