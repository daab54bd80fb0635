"""LLM mode end to end: generator, panel, repair, review and translation through the real
ChatClient against fake OpenAI-compatible servers with scripted (and malformed) replies."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.mocqa_build import runners
from cultureqa.mocqa_build.pipeline import MocqaSettings, write_stage
from cultureqa.testing import FakeOpenAIServer, model_config
from tests.regions.fakes import start_servers

PROVINCES = ("Aceh", "West Java")
ENTITY = {
    "Aceh": "the Rencong, a curved dagger worn at the waist",
    "West Java": "the Kujang, a blade with a curved notch",
}
STEM = {"en": "In that province, {stem} …?", "id": "Di provinsi tersebut, {stem} …?"}
COMPARISON = {
    "Aceh": (  # true among the KB's three Sumatran provinces, false over all of Sumatra
        "Aceh has the smallest population of the provinces on Sumatra",
        "Aceh = 5,274,871; North Sumatra = 14,799,361; West Sumatra = 5,534,472",
    ),
    "West Java": (
        "West Java is the most populous province of Indonesia",
        "West Java = 48,274,162; East Java = 40,665,696",
    ),
}
S1 = {"West Java": "West Java; Central Java"}  # only two: breaks the S1 >= 3 rule
JUDGES: dict[tuple[str, str, str], dict[str, str | None]] = {
    ("Aceh", "entity", "English"): {"judge_c": "Significant"},
    ("Aceh", "geographical", "Indonesian"): {"judge_b": None, "judge_c": "Moderate"},
    ("West Java", "temporal", "English"): {"judge_b": None},
    ("West Java", "geographical", "English"): {"judge_a": None, "judge_b": None},
}
DEFAULT_VOTES = {"judge_a": "OK", "judge_b": "Minor", "judge_c": "OK"}


def _field(text: str, label: str) -> str:
    found = re.search(rf"^{re.escape(label)}:\s*(.*)$", text, re.MULTILINE)
    return found.group(1).strip() if found else ""


def _statement(user: str, language: str) -> str:
    """The source statement in one language, as the bilingual prompt lists it."""
    block = user.split("Statement (incomplete; one option completes it):")[1].split("Options:")[0]
    return _field(block, language)


def _generate(user: str, revised: bool) -> str:
    """One reply with the clue and question in every requested language (one request)."""
    province = _field(user, "Province (never write it)")
    clue_type = _field(user, "Clue type").lower()
    asked = re.search(r"Write the clue and the question in (.+?), in one answer", user)
    languages = asked.group(1).split(" and ") if asked else []
    clue = {
        "entity": f"Think of the province whose people are known for {ENTITY[province]}.",
        "geographical": "Consider the province that lies at one end of a large island.",
        "temporal": "Think of the province where a sultanate began a long war in a famous year.",
        "commonsense": "Suppose you are a guest at a customary feast with a long communal meal.",
        "comparison": "Consider the province singled out by a population statistic.",
        "intersection": "Several provinces share a coastline; only one meets a second condition.",
    }[clue_type]
    if clue_type == "temporal" and province == "Aceh" and not revised:
        return "Sorry, I cannot help with that."  # no QUESTION lines: revised once, then usable
    reply = ""
    for language in languages:
        lang = "en" if language == "English" else "id"
        question = f"{clue} {STEM[lang].format(stem=_statement(user, language))}"
        if clue_type == "commonsense" and province == "Aceh" and lang == "en":
            question = question.replace("In that province", "In Banda Aceh, in that province")
        reply += f"CLUE_{lang.upper()}: {clue}\nQUESTION_{lang.upper()}: {question}\n"
    if clue_type == "comparison":
        claim, data = COMPARISON[province]
        unique = "YES" if revised else "NO"
        reply += (
            f"VERIFY:\nclaim: {claim}\ndata: {data}\nsource: BPS\nyear: 2020\nunique: {unique}\n"
        )
    if clue_type == "intersection":
        s1 = S1.get(province, f"{province}; North Sumatra; West Sumatra; Central Java")
        reply += f"S1: has a coastline\nS1_PROVINCES: {s1}\nS2: a second condition\n"
        reply += f"INTERSECTION: {province}\n"
    return reply


def generator_responder(messages: list[dict[str, Any]]) -> str:
    user = messages[1]["content"]
    if "Translate this question" in user:
        target = "en" if "into English" in user else "id"
        return (
            f"CLUE: A translated clue.\nQUESTION: A translated clue about a culture. "
            f"{STEM[target].format(stem='the translated statement')}"
        )
    if "in two steps" in user:
        question = user.split("Question:")[1]
        if "Kujang" in question and "Di provinsi tersebut" in question:  # MAJOR_REVIEW
            return "[NEEDS MAJOR REVISION] the clue does not single out one province."
        return "VERDICT: OK"
    if "has these problems" in user:
        question = user.split("Question:\n")[1].split("\n\nOptions:")[0]
        return "QUESTION: " + question.replace(
            "In Banda Aceh, in that province", "In that province"
        )
    return _generate(user, revised=len(messages) > 2)


def _model(name: str, server: FakeOpenAIServer, temperature: float) -> dict[str, Any]:
    return model_config(name, server, temperature)


def _sample(tmp: Path, root: Path) -> Path:
    frame = pd.read_csv(
        root / "data/sources/indoculture/sample.csv", dtype=str, keep_default_na=False
    )
    picked = pd.concat(
        [
            frame[(frame["province"] == p) & (frame["is_province_specific"] == "True")].head(1)
            for p in PROVINCES
        ]
    )
    path = tmp / "two_items.csv"
    picked.to_csv(path, index=False)
    return path


def _run(settings: MocqaSettings, params: dict[str, Any], steps: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for step in steps:
        if step == "ingest":
            out[step] = runners.run_ingest(settings, params["benchmarks"]["indoculture"])
        else:
            out[step] = getattr(runners, f"run_{step}")(settings)
        write_stage(settings, step, out[step])
    return out


@pytest.fixture(scope="module")
def llm_build(tmp_path_factory: pytest.TempPathFactory, mocqa_helpers):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("mocqa_llm")
    compose, settings_for = mocqa_helpers["compose"], mocqa_helpers["settings_for"]
    mp = pytest.MonkeyPatch()
    mp.setenv("CULTUREQA_STATE_DIR", str(tmp / "state"))
    mp.setenv("CULTUREQA_TEST_KEY", "sk-test")
    servers = start_servers(
        generator_responder, "Intended province (hop 1 answer)", JUDGES, DEFAULT_VOTES
    )
    params = compose(tmp, ["generator=llm", "judge=panel"])
    params["benchmarks"]["indoculture"]["source"]["path"] = str(_sample(tmp, mocqa_helpers["root"]))
    params["generator"]["model"] = _model("fake-gen", servers["gen"], 1.0)
    params["judge"]["judges"] = {j: _model(j, servers[j], 0.0) for j in DEFAULT_VOTES}
    settings = settings_for(params, tmp)
    results = _run(settings, params, ("ingest", "expand", "judge", "verify", "rebalance"))
    results["finalize"] = runners.run_finalize(settings, {}, "two items")[0]
    yield settings, results, servers, params
    for server in servers.values():
        server.stop()
    mp.undo()


def test_generation_revises_and_rejects_with_reasons(llm_build) -> None:  # type: ignore[no-untyped-def]
    _, results, servers, _ = llm_build
    expand = results["expand"]
    assert expand.metrics["input"] == 2 * 6 * 2
    removed = dict(zip(expand.removed["variant_id"], expand.removed["detail"], strict=True))
    aceh, wj = results["ingest"].frame["source_id"]
    # one reply carries both languages, so a rejected reply removes the whole pair
    assert set(removed) == {
        f"{aceh}.comparison.en",
        f"{aceh}.comparison.id",
        f"{wj}.intersection.en",
        f"{wj}.intersection.id",
    }
    # the national table knows Bengkulu, which the model left out of its VERIFY data
    assert "Bengkulu" in removed[f"{aceh}.comparison.id"]
    assert "S1 lists 2 known provinces" in removed[f"{wj}.intersection.en"]
    first_round = [
        r
        for r in servers["gen"].records
        if "Clue type:" in r.messages[-1]["content"]
        and not any(m["role"] == "assistant" for m in r.messages)
    ]
    assert len(first_round) == 2 * 6  # one request per item and clue type, not per language
    assert all("English and Indonesian" in r.messages[-1]["content"] for r in first_round)
    revisions = [
        r for r in servers["gen"].records if any(m["role"] == "assistant" for m in r.messages)
    ]
    assert revisions  # "revise until unique" and the unusable temporal reply went back
    frame = expand.frame.set_index("variant_id")
    evidence = json.loads(frame.loc[f"{wj}.comparison.en", "clue_evidence"])
    assert (
        evidence["kb_check"] == "agrees"
        and evidence["unique"]
        and evidence["data"]["West Java"] == 48274162
        and "of Indonesia" in evidence["kb_note"]
    )
    assert (
        frame.loc[f"{wj}.comparison.id", "clue_evidence"]
        == frame.loc[f"{wj}.comparison.en", "clue_evidence"]
    )  # the pair shares one VERIFY block
    entity = json.loads(frame.loc[f"{aceh}.entity.id", "clue_evidence"])
    assert entity["kb_check"] == "agrees"
    assert set(expand.frame["generator"]) == {"llm:fake-gen"}


def test_panel_applies_the_rule_and_records_malformed_replies(llm_build) -> None:  # type: ignore[no-untyped-def]
    settings, results, _, _ = llm_build
    judge = results["judge"]
    table = judge.tables["judgements"]
    assert len(table) == 3 * judge.metrics["input"]
    malformed = table[table["status"] == "malformed"]
    assert len(malformed) == 4 and malformed["raw"].str.contains("cannot produce JSON").all()
    assert judge.metrics["reply_status_by_judge"]["judge_b"]["malformed"] == 3
    aceh, wj = results["ingest"].frame["source_id"]
    removed = dict(zip(judge.removed["variant_id"], judge.removed["reason"], strict=True))
    assert removed == {
        f"{aceh}.entity.en": "a judge rated it Significant",
        f"{aceh}.geographical.id": "too few judges rated it Acceptable",
        f"{wj}.geographical.en": "too few judges rated it Acceptable",
    }
    assert f"{wj}.temporal.en" in set(judge.frame["variant_id"])  # 2 of 3 despite a malformed reply
    written = pd.read_parquet(settings.out_dir("judge") / "judgements.parquet")
    assert len(written) == len(table)


def test_verify_rewrites_the_leak_and_removes_major_revisions(llm_build) -> None:  # type: ignore[no-untyped-def]
    _, results, _, _ = llm_build
    verify = results["verify"]
    aceh, wj = results["ingest"].frame["source_id"]
    fixed = verify.frame.set_index("variant_id").loc[f"{aceh}.commonsense.en", "question"]
    assert "Banda Aceh" not in fixed and verify.metrics["repaired"] == 1
    assert list(verify.removed["variant_id"]) == [f"{wj}.entity.id"]
    assert verify.removed["reason"].iloc[0] == "[NEEDS MAJOR REVISION]"


def test_rebalance_translates_every_missing_side(llm_build) -> None:  # type: ignore[no-untyped-def]
    _, results, _, _ = llm_build
    rebalance = results["rebalance"]
    assert rebalance.metrics["translated"] == 4 and rebalance.removed.empty
    counts = rebalance.frame.groupby("pair_id")["language"].agg(sorted)
    assert len(counts) == 10 and all(c == ["en", "id"] for c in counts)
    translated = rebalance.frame[rebalance.frame["generator"].str.endswith("+translate")]
    assert len(translated) == 4 and all(len(o) == 3 for o in translated["options"])
    final = results["finalize"].frame
    assert len(final) == 20 and final.groupby("language")["answer"].value_counts().max() <= 4


def test_rerun_makes_no_model_calls(llm_build) -> None:  # type: ignore[no-untyped-def]
    settings, _, servers, params = llm_build
    before = {k: s.hits for k, s in servers.items()}
    _run(settings, params, ("expand", "judge"))
    assert {k: s.hits for k, s in servers.items()} == before


def test_a_refused_key_stops_the_llm_build_with_the_cause(  # type: ignore[no-untyped-def]
    llm_build, mocqa_helpers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """The expand stage's guard: a 401 on every request is ApiStopped (rc 2), not 12 rejected
    variants, and the counters of the stopped run reach the run log."""
    import copy
    import shutil

    from cultureqa.config import run_stage
    from cultureqa.runlog import runlog_dir
    from cultureqa.spend import API_LOG, build_guard
    from cultureqa.testing import FaultPlan

    settings, _, _, params = llm_build
    monkeypatch.chdir(tmp_path)  # the run log lives under the working directory
    with FakeOpenAIServer(faults=FaultPlan(fail_status=401)) as refusing:
        params = copy.deepcopy(params)
        params["generator"]["model"] = _model("refused-gen", refusing, 1.0)
        refused = mocqa_helpers["settings_for"](params, tmp_path)
        shutil.copytree(settings.out_dir("ingest"), refused.out_dir("ingest"))

        def stage() -> int:
            with build_guard(refused.out_dir("expand")):
                write_stage(refused, "expand", runners.run_expand(refused))
            return 0

        capsys.readouterr()
        assert run_stage(stage) == 2
        sent = refusing.hits
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: refused-gen: stopped after 10 consecutive failures")
    assert "(HTTP 401)" in err[-1]
    assert 10 <= sent <= 12  # the breaker opens after 10 consecutive refusals
    assert not refused.out_dir("expand").exists()  # nothing half-built was written
    logged = json.loads((runlog_dir(refused.out_dir("expand")) / API_LOG).read_text())
    client = logged["api"]["generator"]["client"]
    assert client["sent"] == sent and "HTTP 401" in client["stopped"]
    assert "fix: set a valid key in CULTUREQA_TEST_KEY" in client["stopped"]


def test_an_empty_generator_reply_is_named_empty_not_a_failed_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from cultureqa.evaluation.parsing import EMPTY_ERROR
    from cultureqa.llm.base import GenerateRequest, GenerateResponse, Message
    from cultureqa.mocqa_build.llm import generator as llm_generator
    from cultureqa.regions.llm import ask as ask_module

    def run_models(jobs: dict[str, Any], store_path: object) -> dict[str, list[GenerateResponse]]:
        return {"generator": [GenerateResponse(""), GenerateResponse(None, "error", "Timeout")]}

    monkeypatch.setattr(ask_module, "run_models", run_models)
    request = GenerateRequest((Message("user", "write a clue"),))
    jobs = [
        llm_generator._Job(pd.Series({"province": "Aceh"}), "entity", ("en",), request)
        for _ in range(2)
    ]
    llm_generator._ask(jobs, SimpleNamespace(model={"id": "g"}), Path("unused"))  # type: ignore[arg-type]
    assert [llm_generator._problem(j) for j in jobs] == [EMPTY_ERROR, "model call failed: Timeout"]
