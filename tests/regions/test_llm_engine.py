"""The engine's model-backed steps end to end: the LLM generator (its claims decided by the
tables), the three-model panel and translation of missing languages, through the real chat
client against fake OpenAI-compatible servers with scripted, wrong and malformed replies.

The region set is the invented one (five lands, two languages); Lumeth's question has no
Indonesian version, so its pairs need a translation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.regions.config import RegionSet
from cultureqa.regions.generation.generate_llm import (
    CONTRADICTED,
    NOT_IN_TABLES,
    NOT_UNIQUE,
    UNUSABLE,
    LlmClueConfig,
)
from cultureqa.regions.judges.checks import CheckConfig
from cultureqa.regions.judges.panel import SIGNIFICANT_REASON, TOO_FEW_REASON, PanelConfig
from cultureqa.regions.models import ModelSteps
from cultureqa.regions.pipeline import BuildResult, card_markdown, run_build
from cultureqa.regions.translate import FAILED_REASON, OFFLINE_REASON
from cultureqa.testing import FakeOpenAIServer, model_config
from cultureqa.testing.composed import composed
from tests.regions.fakes import field, start_servers
from tests.regions.invented import write_invented
from tests.regions.test_invented_set import _holds

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = ROOT / "prompts/twohop"


def _reply(en: str, claims: list[str], id_: str | None = None) -> str:
    lines = [f"CLUE_EN: {en}", f"CLUE_ID: {id_ or 'negeri yang ' + en}", "CLAIMS:"]
    return "\n".join(lines + [f"- {c}" for c in claims])


NORTH = "fact: zone = Northern Zone"
# (region, clue type) → (first reply, revised reply); regions and types not here get no claims
SCRIPT: dict[tuple[str, str], tuple[str, str]] = {
    ("Dravenna", "comparison"): (
        _reply("the land of the Northern Zone whose rainfall lies between Quintar's and "
               "Veloria's", [NORTH, "between: rain | Quintar | Veloria"]),
    ) * 2,
    ("Veloria", "comparison"): (  # names its capital, then revised
        _reply("the land around Castelmar with more rain than Dravenna",
               [NORTH, "between: rain | Dravenna | Ostrabia"]),
        _reply("the land of the Northern Zone whose rainfall lies between Dravenna's and "
               "Ostrabia's", [NORTH, "between: rain | Ostrabia | Dravenna"]),
    ),
    ("Quintar", "comparison"): ("Sorry, I cannot help with that.",) * 2,
    ("Ostrabia", "comparison"): (  # Ostrabia has the most rain: the tables contradict it
        _reply("the land whose rainfall lies between Dravenna's and Veloria's",
               [NORTH, "between: rain | Dravenna | Veloria"]),
    ) * 2,
    ("Lumeth", "geographical"): (_reply("the land of the Southern Zone",
                                        ["fact: zone = Southern Zone"]),) * 2,
    ("Veloria", "geographical"): (  # Ostrabia too lies north with a sea coast
        _reply("the northern land on the sea", [NORTH, "fact: coast = sea"]),
    ) * 2,
    ("Dravenna", "geographical"): (_reply("the tropical land", ["fact: climate = tropical"]),) * 2,
    ("Lumeth", "intersection"): (
        _reply("the southern land where people drink the most tea",
               ["fact: zone = Southern Zone", "range: tea | 5 | -"]),
    ) * 2,
    ("Dravenna", "intersection"): (
        _reply("the northern land with moderate rain and tea",
               [NORTH, "range: rain | 600 | 1100", "range: tea | 2.5 | 3.5"]),
    ) * 2,
}  # fmt: skip
# (region, clue type, language) → judge → category (None: a malformed reply)
VOTES: dict[tuple[str, str, str], dict[str, str | None]] = {
    ("Dravenna", "comparison", "English"): {"judge_c": "Significant"},
    ("Veloria", "comparison", "Indonesian"): {"judge_b": None, "judge_c": "Moderate"},
}
DEFAULT_VOTES = {"judge_a": "OK", "judge_b": "Minor", "judge_c": "OK"}


def _translation(user: str) -> str:
    clue = user.split("Clue (a noun phrase):\n")[1].split("\n")[0]
    question = "Why does the host ask the guest to take off the hat before going in?"
    if "tea" in clue:  # Lumeth's intersection: the translation is no question
        question = "The host asks the guest to take off the hat."
    options = [
        "Hats are taxed here", "Bakers dislike wool", "It is about the heat", "A rule on fire",
        "For luck", "A covered head indoors means the guest will leave soon",
    ]  # fmt: skip
    lines = [f"CLUE: {clue} (translated)", "BACKGROUND: Mira visits the fair in spring.",
             f"QUESTION: {question}"]  # fmt: skip
    return "\n".join(lines + [f"OPTION_{x}: {o}" for x, o in zip("ABCDEF", options, strict=True)])


def generator_responder(messages: list[dict[str, Any]]) -> str:
    user = messages[1]["content"]
    if "Translate this item" in user:
        return _translation(user)
    key = (field(user, "Region (never write it)"), field(user, "Clue type"))
    first, *rest = SCRIPT.get(key, ("CLUE_EN: a land",))
    revised = len(messages) > 2
    return (rest[0] if rest else first) if revised else first


def _model(name: str, server: FakeOpenAIServer) -> dict[str, Any]:
    return model_config(name, server)


def _invented_without_an_indonesian_lumeth(root: Path) -> RegionSet:
    raw = write_invented(root)
    path = root / "data/questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    kept = [r for r in rows if not (r["region"] == "LUM" and r["language"] == "id")]
    path.write_text("\n".join(json.dumps(r) for r in kept) + "\n", encoding="utf-8")
    return RegionSet.from_params(raw, root)


@pytest.fixture(scope="module")
def llm_run(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("engine_llm")
    mp = pytest.MonkeyPatch()
    mp.setenv("CULTUREQA_TEST_KEY", "sk-test")
    servers = start_servers(
        generator_responder, "Intended land (hop 1 answer)", VOTES, DEFAULT_VOTES
    )
    rs = _invented_without_an_indonesian_lumeth(tmp)
    steps = ModelSteps(
        generator=LlmClueConfig(_model("fake-gen", servers["gen"]), PROMPTS / "generate.en.txt", 1),
        panel=PanelConfig(
            "panel", 2, {j: _model(j, servers[j]) for j in DEFAULT_VOTES},
            PROMPTS / "judge/panel.en.txt",
        ),
        translate_prompt=PROMPTS / "translate.en.txt",
        store_path=tmp / "responses.sqlite",
    )  # fmt: skip
    result = run_build(rs, tmp, 13, CheckConfig(), steps)
    yield rs, tmp, steps, result, servers
    for server in servers.values():
        server.stop()
    mp.undo()


def _refused(result: BuildResult) -> dict[tuple[str, str], str]:
    return {(r.target, r.clue_type): r.reason for r in result.refused.itertuples()}


def test_the_model_writes_the_clue_and_the_tables_decide_its_claims(llm_run) -> None:  # type: ignore[no-untyped-def]
    _, root, _, result, servers = llm_run
    refused = _refused(result)
    assert refused[("QUI", "comparison")] == UNUSABLE
    assert refused[("OST", "comparison")] == CONTRADICTED
    assert refused[("VEL", "geographical")] == NOT_UNIQUE
    assert refused[("DRA", "geographical")] == NOT_IN_TABLES
    data = result.dataset
    assert set(data["clue_evidence"].map(lambda e: json.loads(e)["generator"])) == {"llm:fake-gen"}
    for item in data.to_dict("records"):  # every claim holds for exactly its land, read apart
        conditions = json.loads(item["clue_evidence"])["conditions"]
        holders = [r for r in ("VEL", "QUI", "OST", "LUM", "DRA") if all(
            _holds(c, r, root) for c in conditions)]  # fmt: skip
        assert holders == [item["region"]], item["item_id"]
    velo = json.loads(data.set_index("item_id").at["Q01.comparison.en", "clue_evidence"])
    assert velo["revisions"] == 1  # the clue naming the capital went back once
    assert velo["conditions"][1] == {
        "kind": "between", "indicator": "rain", "low_region": "DRA", "high_region": "OST",
    }  # fmt: skip
    clue_id = data.set_index("item_id").at["Q05.intersection.id", "clue"]
    assert clue_id == "negeri yang the northern land with moderate rain and tea"
    revised = [
        r for r in servers["gen"].records if any(m["role"] == "assistant" for m in r.messages)
    ]
    assert any("names Castelmar" in r.messages[-1]["content"] for r in revised)


def test_the_panel_keeps_by_the_papers_rule_and_records_every_verdict(llm_run) -> None:  # type: ignore[no-untyped-def]
    *_, result, _ = llm_run
    removed = result.removed[result.removed["stage"] == "judge"]
    assert dict(zip(removed["item_id"], removed["reason"], strict=True)) == {
        "Q05.comparison.en": SIGNIFICANT_REASON,
        "Q01.comparison.id": TOO_FEW_REASON,
    }
    table = result.judgements
    panel = table[table["judge"] != "rules"]
    assert len(panel[panel["status"] == "malformed"]) == 1
    assert set(table[table["judge"] == "rules"]["category"]) <= {"OK", "Significant"}
    models = result.metrics["models"]
    assert (
        models["judge"] == "panel" and models["reply_status_by_judge"]["judge_b"]["malformed"] == 1
    )
    # the judged variants: the panel's rejections with the text it read, not the translation
    # that later took Q01.comparison.id's place in the dataset
    judged = result.judged.set_index("item_id")
    out = judged[~judged["judge_keep"]]
    assert dict(out.loc[out["judge"] == "panel", "judge_reason"]) == {
        "Q05.comparison.en": SIGNIFICANT_REASON, "Q01.comparison.id": TOO_FEW_REASON,
    }  # fmt: skip
    published = result.dataset.set_index("item_id")
    assert (
        judged.loc["Q01.comparison.id", "narrative"]
        != published.loc["Q01.comparison.id", "narrative"]
    )
    assert result.metrics["judged"]["published_without_verdict"] == 3  # the translated sides


def test_missing_languages_are_translated_and_rejudged(llm_run) -> None:  # type: ignore[no-untyped-def]
    *_, result, _ = llm_run
    data = result.dataset
    assert result.metrics["rebalance"] == {
        "incomplete_pairs": 4,
        "translated": 3,
        "dropped_items": 1,
    }
    pairs = data.groupby(["source_id", "clue_type"])["language"].agg(sorted)
    assert all(p == ["en", "id"] for p in pairs) and len(pairs) == 4
    translated = data[data["clue_evidence"].str.contains("translated_from")]
    assert sorted(translated["item_id"]) == [
        "Q01.comparison.id", "Q04.geographical.id", "Q05.comparison.en",
    ]  # fmt: skip
    gone = result.removed[result.removed["stage"] == "rebalance"]
    assert set(gone["reason"]) == {FAILED_REASON, "structure: not a question of enough words"}
    assert set(gone["item_id"]) == {"Q04.intersection.en", "Q04.intersection.id"}
    assert "rebalance" in json.dumps(result.metrics) and card_markdown(result.metrics)


def test_a_rerun_asks_no_model_again(llm_run) -> None:  # type: ignore[no-untyped-def]
    rs, root, steps, result, servers = llm_run
    before = {k: s.hits for k, s in servers.items()}
    again = run_build(rs, root, 13, CheckConfig(), steps)
    assert {k: s.hits for k, s in servers.items()} == before
    pd.testing.assert_frame_equal(again.dataset, result.dataset)


def test_offline_a_pair_missing_a_language_is_dropped_with_its_reason(tmp_path: Path) -> None:
    rs = _invented_without_an_indonesian_lumeth(tmp_path)
    result = run_build(rs, tmp_path, 13, CheckConfig())
    gone = result.removed[result.removed["stage"] == "rebalance"]
    assert len(gone) and set(gone["reason"]) == {OFFLINE_REASON}
    assert set(gone["source_id"]) == {"Q04"} and set(gone["language"]) == {"en"}
    assert set(gone["detail"]) == {"the source has no id version"}
    assert result.metrics["rebalance"]["dropped_items"] == len(gone)
    assert "Q04" not in set(result.dataset["source_id"])
    assert result.metrics["models"]["generator"] == "template"
    assert set(result.judgements["judge"]) == {"rules"}


def test_the_conf_switch_selects_the_model_steps(tmp_path: Path) -> None:
    offline = ModelSteps.from_params(composed(ROOT / "conf"), ROOT)
    assert offline.offline and offline.translator(RegionSet.selected(
        composed(ROOT / "conf"), ROOT)) is None  # fmt: skip
    online = ModelSteps.from_params(composed(ROOT / "conf", ["generator=llm", "judge=panel"]), ROOT)
    assert online.generator is not None and online.generator.prompt == PROMPTS / "generate.en.txt"
    assert online.panel is not None and online.panel.prompt == PROMPTS / "judge/panel.en.txt"
    assert len(online.panel.judges) == 3 and online.panel.min_acceptable == 2


def test_a_refused_key_stops_the_llm_build_with_the_cause(tmp_path: Path) -> None:
    """A 401 on every request stops the build (ApiStopped, the cause named), not a set of
    rejected clues: the client's breaker opens after 10 consecutive refusals."""
    from cultureqa.core.spend import ApiStopped
    from cultureqa.testing import FaultPlan

    mp = pytest.MonkeyPatch()
    mp.setenv("CULTUREQA_TEST_KEY", "sk-test")
    rs = RegionSet.from_params(write_invented(tmp_path), tmp_path)
    try:
        with FakeOpenAIServer(faults=FaultPlan(fail_status=401)) as refusing:
            steps = ModelSteps(
                generator=LlmClueConfig(
                    _model("refused-gen", refusing), PROMPTS / "generate.en.txt", 1
                ),
                store_path=tmp_path / "responses.sqlite",
            )
            with pytest.raises(ApiStopped) as stopped:
                run_build(rs, tmp_path, 13, CheckConfig(), steps)
            sent = refusing.hits
    finally:
        mp.undo()
    assert "refused-gen: stopped after 10 consecutive failures" in str(stopped.value)
    assert "(HTTP 401)" in str(stopped.value)
    # the breaker opens at the 10th consecutive refusal; requests already in their slots by then
    # (at most concurrency - 1 others) still reach the server, nothing is sent after them
    in_flight = int(_model("refused-gen", refusing)["concurrency"]) - 1
    assert 10 <= sent <= 10 + in_flight
