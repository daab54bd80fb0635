"""Issue 34: the judge, verify and rebalance remove nothing in the default build, so this build
plants one defect of each kind and shows the check meant for it removing it, with its reason in
the stage's removal table and in the dataset card.

Planted after expand (what a generator could emit): a clue naming its province's historic polity
(Gowa) and one naming a regency (Gianyar), a question copying an option, a clue built on a fact
that is not unique in Indonesia (Yospan: Papua and West Papua), and a pair missing its Indonesian
side. A second build runs the LLM panel judge with three scripted judges (the fake
OpenAI-compatible server), one of which rates a marked item Significant.
"""

from __future__ import annotations

import dataclasses
import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.mocqa_build import runners
from cultureqa.mocqa_build.judge import JudgeConfig
from cultureqa.mocqa_build.pipeline import MocqaSettings, write_stage
from cultureqa.mocqa_build.stage import StageResult
from cultureqa.mocqa_shared.schema import as_options, dumps_evidence
from cultureqa.regions.judges.judging import CRITERIA

ROOT = Path(__file__).resolve().parents[2]
GOWA = {
    "en": "Think of the province where a fort of the Gowa kingdom stands on the waterfront.",
    "id": "Bayangkan provinsi tempat benteng Kerajaan Gowa berdiri di tepi laut.",
}
GIANYAR = {
    "en": "Think of the province whose regency of Gianyar is known for wood carving.",
    "id": "Bayangkan provinsi yang Kabupaten Gianyar-nya terkenal dengan ukiran kayu.",
}
YOSPAN = {
    "en": "Think of the province where the Yospan, a lively dance of friendship, is performed.",
    "id": "Bayangkan provinsi tempat tari Yospan, tarian pergaulan yang riang, dibawakan.",
}
MARK = "Think of the province"  # what the scripted Significant judge looks for


def _pair(frame: pd.DataFrame, province: str, clue_type: str) -> str:
    mask = (frame["province"] == province) & (frame["clue_type"] == clue_type)
    return str(frame.loc[mask, "pair_id"].iloc[0])


def _plant_clue(frame: pd.DataFrame, pair: str, clues: dict[str, str]) -> None:
    for index in frame.index[frame["pair_id"] == pair]:
        language = frame.at[index, "language"]
        old = frame.at[index, "clue"]
        frame.at[index, "question"] = frame.at[index, "question"].replace(old, clues[language])
        frame.at[index, "clue"] = clues[language]


def _expanded(settings: MocqaSettings, params: dict[str, Any]) -> pd.DataFrame:
    ingest = runners.run_ingest(settings, params["benchmarks"][settings.benchmark])
    write_stage(settings, "ingest", ingest)
    return runners.run_expand(settings).frame


def _finish(settings: MocqaSettings, frame: pd.DataFrame) -> dict[str, Any]:
    """Judge → verify → rebalance → finalize over a planted expand output, as the stages do."""
    expand = StageResult(frame, metrics={"stage": "expand", "input": len(frame)})
    write_stage(settings, "expand", expand)
    results = {}
    for step in ("judge", "verify", "rebalance"):
        results[step] = getattr(runners, f"run_{step}")(settings)
        write_stage(settings, step, results[step])
    metrics = {s: r.metrics for s, r in results.items()}
    final, card, markdown = runners.run_finalize(settings, metrics, "planted sample")
    removed = pd.concat([r.removed for r in results.values()], ignore_index=True)
    return {"removed": removed, "final": final.frame, "card": card, "markdown": markdown}


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, mocqa_helpers) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("planted")
    params = mocqa_helpers["compose"](tmp)
    settings: MocqaSettings = mocqa_helpers["settings_for"](params, tmp)
    frame = _expanded(settings, params)
    pairs = {
        "polity": _pair(frame, "South Sulawesi", "entity"),
        "regency": _pair(frame, "Bali", "geographical"),
        "copy": _pair(frame, "West Java", "entity"),
        "shared": _pair(frame, "Papua", "entity"),
        "language": _pair(frame, "Central Java", "temporal"),
    }
    _plant_clue(frame, pairs["polity"], GOWA)
    _plant_clue(frame, pairs["regency"], GIANYAR)
    for index in frame.index[frame["pair_id"] == pairs["copy"]]:
        option = as_options(frame.at[index, "options"])[0]
        frame.at[index, "question"] = f"{frame.at[index, 'question']} ({option})"
    _plant_clue(frame, pairs["shared"], YOSPAN)
    for index in frame.index[frame["pair_id"] == pairs["shared"]]:
        evidence = json.loads(frame.at[index, "clue_evidence"])
        evidence.update(fact_key="entity:dances:Yospan", name="Yospan", unique=True)
        frame.at[index, "clue_evidence"] = dumps_evidence(evidence)
        frame.at[index, "fact_key"] = "entity:dances:Yospan"
    language_row = frame.index[
        (frame["pair_id"] == pairs["language"]) & (frame["language"] == "id")
    ]
    frame = frame.drop(language_row).reset_index(drop=True)
    return {"pairs": pairs, "settings": settings, **_finish(settings, frame)}


def _rows(planted: dict[str, Any], kind: str) -> pd.DataFrame:
    removed = planted["removed"]
    return removed[removed["pair_id"] == planted["pairs"][kind]]


@pytest.mark.parametrize(
    ("kind", "stage", "reason", "detail"),
    [
        ("polity", "judge", "a judge rated it Significant", "names its province: Gowa (polity"),
        (
            "regency",
            "judge",
            "a judge rated it Significant",
            "names its province: Gianyar (regency",
        ),
        ("copy", "judge", "a judge rated it Significant", "copies an option"),
        ("shared", "judge", "a judge rated it Significant", "clue claim not verified"),
    ],
)
def test_each_planted_defect_is_removed_by_the_judge_with_its_reason(
    planted: dict[str, Any], kind: str, stage: str, reason: str, detail: str
) -> None:
    rows = _rows(planted, kind)
    assert set(rows["language"]) == {"en", "id"}, rows
    assert set(rows["stage"]) == {stage} and rows["reason"].eq(reason).all()
    assert rows["detail"].str.contains(detail, regex=False).all(), rows["detail"].tolist()
    assert not planted["final"]["pair_id"].eq(planted["pairs"][kind]).any()


def test_the_shared_fact_fails_on_its_national_claim_alone(planted: dict[str, Any]) -> None:
    """Yospan is Papua's alone in the eleven-province KB; only the national table (Papua and
    West Papua) makes the clue ambiguous, so that is the check that removed it."""
    from cultureqa.mocqa_build.facts import name_owners

    settings = planted["settings"]
    assert name_owners(settings.kb(), "Yospan") == ["Papua"]
    verdict = settings.clue_facts().verdict("Papua", "entity:dances:Yospan")
    assert not verdict.unique
    assert len(_rows(planted, "shared")) == 2


def test_a_pair_missing_a_language_is_removed_by_rebalance(planted: dict[str, Any]) -> None:
    rows = _rows(planted, "language")
    assert list(rows["language"]) == ["en"] and list(rows["stage"]) == ["rebalance"]
    assert (
        rows["reason"].iloc[0] == "counterpart language missing (template mode does not translate)"
    )
    assert rows["detail"].iloc[0] == "no id version"


def test_the_card_names_every_check_that_removed_something(planted: dict[str, Any]) -> None:
    card, markdown = planted["card"], planted["markdown"]
    stages = (
        {s["stage"]: s for s in card["stages"]}
        if isinstance(card["stages"], list)
        else card["stages"]
    )
    assert stages["judge"]["removed"] == 8 and stages["rebalance"]["removed"] == 1
    funnel = markdown.split("## Stages")[1].split("\n## ")[0]
    assert "| judge | " in funnel and "a judge rated it Significant (8)" in funnel
    assert "counterpart language missing (template mode does not translate) (1)" in funnel
    examples = markdown.split("## Examples of removed items")[1].split("\n## ")[0]
    assert "names its province" in examples or "copies an option" in examples


def _verdict(category: str) -> str:
    score = 0 if category == "Significant" else 2
    return json.dumps(
        {"scores": dict.fromkeys(CRITERIA, score), "category": category, "rationale": category}
    )


def test_a_panel_judge_rating_an_item_significant_removes_it_and_the_card_says_so(
    tmp_path: Path, mocqa_helpers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three scripted judges rate everything OK, except that the strict one rates the items
    whose clue starts "Think of the province" Significant: one such vote removes the item (the
    paper's keep rule), and rebalance drops its other-language side."""
    from cultureqa.testing import FakeOpenAIServer

    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / "state"))  # private response store
    params = mocqa_helpers["compose"](tmp_path)
    settings: MocqaSettings = mocqa_helpers["settings_for"](params, tmp_path)
    frame = _expanded(settings, params)
    frame = frame[frame["province"].isin(["Aceh", "Bali"])].reset_index(drop=True)
    marked = frame["question"].str.contains(MARK, regex=False)
    assert 0 < marked.sum() < len(frame)

    def respond(strict: bool) -> Any:
        def reply(messages: list[dict[str, Any]]) -> str:
            question = str(messages[-1]["content"])
            return _verdict("Significant" if strict and MARK in question else "OK")

        return reply

    names = ("lenient", "fair", "strict")
    with ExitStack() as stack:
        servers = {
            n: stack.enter_context(FakeOpenAIServer(responder=respond(n == "strict")))
            for n in names
        }

        def judge(name: str) -> dict[str, Any]:
            return {
                "id": name, "backend": "litellm", "batch_size": 1, "concurrency": 8,
                "decoding": {"temperature": 0.0, "max_tokens": 256, "seed": None},
                "options": {"litellm_model": f"openai/{name}",
                            "api_base": servers[name].api_base, "api_key_env": None,
                            "drop_params": True},
                "retry": {"attempts": 1, "initial_wait_s": 0.01, "max_wait_s": 0.05,
                          "timeout_s": 5},
            }  # fmt: skip

        panel = JudgeConfig(
            "panel", 2, judges={n: judge(n) for n in names},
            prompt=ROOT / "prompts/mocqa/judge/panel.en.txt",
        )  # fmt: skip
        settings = dataclasses.replace(settings, judge=panel)
        result = _finish(settings, frame)
        hits = {n: servers[n].hits for n in names}
    assert all(h >= len(frame) for h in hits.values()), hits  # every judge saw every item
    removed = result["removed"]
    judged_out = removed[removed["stage"] == "judge"]
    assert len(judged_out) == marked.sum()
    assert judged_out["reason"].eq("a judge rated it Significant").all()
    assert judged_out["detail"].str.startswith("2/3 acceptable, 1 significant").all()
    assert not result["final"]["question"].str.contains(MARK, regex=False).any()
    assert "a judge rated it Significant" in result["markdown"].split("## Stages")[1]


def test_verify_removes_what_it_cannot_repair_and_repairs_the_rest(planted) -> None:
    """Defects planted after the judge reach verify: with no repair rounds left a polity leak
    and a copied option are removed with their issues, a stub question as a major structure
    problem; with the template repairer the polity leak gets the next fact instead."""
    from cultureqa.mocqa_build.verify import MAJOR, template_repairer, verify_variants

    settings = planted["settings"]
    judged = settings.read("judge")
    pairs = {
        "polity": _pair(judged, "South Sulawesi", "geographical"),
        "copy": _pair(judged, "Aceh", "entity"),
        "stub": _pair(judged, "Bali", "temporal"),
    }
    _plant_clue(judged, pairs["polity"], GOWA)
    for index in judged.index[judged["pair_id"] == pairs["copy"]]:
        option = as_options(judged.at[index, "options"])[0]
        judged.at[index, "question"] = f"{judged.at[index, 'question']} ({option})"
    for index in judged.index[judged["pair_id"] == pairs["stub"]]:
        judged.at[index, "question"] = "Which one?"
    strict = dataclasses.replace(settings.verify, repair_attempts=0)
    result = verify_variants(judged, strict, None)
    removed = result.removed.set_index("pair_id")
    assert removed.loc[pairs["polity"], "reason"].str.startswith("not repaired: clue names").all()
    assert removed.loc[pairs["polity"], "detail"].str.contains("Gowa (polity", regex=False).all()
    assert removed.loc[pairs["copy"], "reason"].str.contains("cop").all()
    assert removed.loc[pairs["stub"], "reason"].eq(MAJOR).all()
    assert set(removed.index) == set(pairs.values()) and len(removed) == 6
    repairer = template_repairer(settings.read("ingest"), runners._template_generator(settings))
    repaired = verify_variants(judged, settings.verify, repairer)
    assert pairs["polity"] not in set(repaired.removed["pair_id"])
    kept = repaired.frame[repaired.frame["pair_id"] == pairs["polity"]]
    assert len(kept) == 2 and not kept["question"].str.contains("Gowa").any()
