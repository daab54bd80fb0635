"""The panel's keep rule on every vote pattern and the parsing of judges' replies
(:mod:`cultureqa.regions.judges.judging`), and the engine's panel recording an empty reply."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from cultureqa.evaluation.parsing import EMPTY, EMPTY_ERROR
from cultureqa.llm.base import GenerateResponse
from cultureqa.regions.judges import panel
from cultureqa.regions.judges.judging import (
    CATEGORIES,
    CRITERIA,
    Judgement,
    decide,
    keep,
    parse_reply,
)

ACCEPTABLE = {"OK", "Minor"}
ROOT = Path(__file__).resolve().parents[2]


def _reply(**overrides: object) -> str:
    payload = {"scores": dict.fromkeys(CRITERIA, 2), "category": "OK", "rationale": "fine"}
    payload.update(overrides)
    return json.dumps(payload)


@pytest.mark.parametrize("votes", list(itertools.product(CATEGORIES, repeat=3)), ids=str)
def test_panel_rule_on_every_pattern_of_three_judges(votes: tuple[str, str, str]) -> None:
    expected = sum(v in ACCEPTABLE for v in votes) >= 2 and "Significant" not in votes
    assert keep(list(votes), min_acceptable=2) is expected


def test_panel_rule_enumeration_is_complete_and_matches_the_paper() -> None:
    patterns = list(itertools.product(CATEGORIES, repeat=3))
    assert len(patterns) == 4**3
    kept = [p for p in patterns if keep(list(p), 2)]
    # 2 or 3 Acceptable and no Significant: 3 Acceptable (2^3 = 8) + exactly 2 with one Moderate
    # (3 positions × 2^2 = 12) = 20 of 64.
    assert len(kept) == 20
    assert not keep(["OK", "OK", "Significant"], 2)
    assert keep(["OK", "Minor", "Moderate"], 2)
    assert not keep(["OK", "Moderate", "Moderate"], 2)


@pytest.mark.parametrize("votes", list(itertools.product([*CATEGORIES, None], repeat=3)), ids=str)
def test_malformed_replies_count_as_neither(votes: tuple[str | None, ...]) -> None:
    valid = [v for v in votes if v is not None]
    expected = sum(v in ACCEPTABLE for v in valid) >= 2 and "Significant" not in valid
    judgements = [
        Judgement("v", f"j{i}", category=v, status="ok" if v else "malformed")
        for i, v in enumerate(votes)
    ]
    assert decide(judgements, 2)["keep"] is expected


def test_parse_reply_accepts_fenced_json_and_recomputes_total() -> None:
    text = "Here is my verdict:\n```json\n" + _reply(category="minor", total=3) + "\n```"
    j = parse_reply("v1", "gpt-4o", text)
    assert j.status == "ok" and j.category == "Minor" and j.total == 16 and j.acceptable


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("I think it is fine.", "no JSON object"),
        (_reply(scores={"conciseness": 2}), "scores lack"),
        (_reply(scores={**dict.fromkeys(CRITERIA, 2), "conciseness": 3}), "outside 0–2"),
        (_reply(scores={**dict.fromkeys(CRITERIA, 2), "conciseness": "two"}), "not an integer"),
        (_reply(category="Great"), "not one of"),
        ('{"scores": [1, 2]}', "missing 'scores' object"),
    ],
)
def test_malformed_replies_are_recorded_not_guessed(text: str, message: str) -> None:
    j = parse_reply("v1", "judge", text)
    assert j.status == "malformed" and message in j.error and j.category is None
    assert j.raw == text and not j.acceptable


def test_an_empty_panel_reply_is_recorded_as_empty_and_counts_as_neither(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def run_models(jobs: dict[str, object], store_path: object) -> dict[str, list[object]]:
        replies = {"j1": "", "j2": _reply(category="OK"), "j3": _reply(category="Minor")}
        return {name: [GenerateResponse(replies[name])] for name in jobs}

    monkeypatch.setattr(panel, "run_models", run_models)
    config = panel.PanelConfig(
        "panel", 2, {j: {"id": j} for j in ("j1", "j2", "j3")},
        ROOT / "prompts/twohop/judge/panel.en.txt",
    )  # fmt: skip
    fill = dict.fromkeys(("noun", "region", "clue_type", "language", "question", "options"), "x")
    judgements = panel.ask_panel(
        ["item"],
        [{**fill, "answer": "F"}],
        config,
        ("noun", "region"),
        store_path=None,  # type: ignore[arg-type]
    )
    by_judge = {j.judge: j for j in judgements}
    assert (by_judge["j1"].status, by_judge["j1"].error) == (EMPTY, EMPTY_ERROR)
    assert by_judge["j1"].category is None
    assert decide(judgements, 2)["keep"] and decide(judgements, 2)["n_valid"] == 2


def test_a_panel_without_judges_or_prompt_is_refused() -> None:
    with pytest.raises(ValueError, match=r"needs judge\.judges and judge\.prompt"):
        panel.PanelConfig.from_params({"kind": "panel", "min_acceptable": 2}, ROOT)
    with pytest.raises(ValueError, match="'rules' or 'panel'"):
        panel.PanelConfig.from_params({"kind": "vote", "min_acceptable": 2}, ROOT)
