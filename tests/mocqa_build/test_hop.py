"""Hop-necessity diagnostic: conditions, paired statistics, readings, and the card."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from cultureqa.knowledge import load_knowledge_base
from cultureqa.mocqa.hop import (
    CONDITIONS,
    ORACLE,
    HopConfig,
    ablate,
    gain_interval,
    with_oracle,
    without_clue,
)
from cultureqa.mocqa_build import hop_stage, runners


def test_without_clue_and_with_oracle_replace_the_clue_or_say_they_cannot() -> None:
    question = 'Think of the province of X. In this province, how does "a b" end?'
    clue = "Think of the province of X."
    assert without_clue(question, clue) == 'In this province, how does "a b" end?'
    assert without_clue(question, "a clue that is not there") is None
    oracle = with_oracle(question, clue, "The province is Bali.")
    assert oracle == 'The province is Bali. In this province, how does "a b" end?'
    assert with_oracle(question, "absent", "The province is Bali.") is None


def test_ablations_keep_options_and_gold_and_count_what_they_drop() -> None:
    frame = pd.DataFrame(
        {
            "question": ["Clue one. In this province?", "Pertanyaan tanpa petunjuk?"],
            "clue": ["Clue one.", "Petunjuk yang hilang."],
            "language": ["en", "id"],
            "province": ["Bali", "Aceh"],
            "answer": ["A", "B"],
        }
    )
    none, dropped = ablate(frame, "none")
    assert list(none["question"]) == ["In this province?"] and dropped == 1
    oracle, dropped = ablate(frame, "oracle", load_knowledge_base())
    assert list(oracle["question"]) == ["The province is Bali. In this province?"]
    assert dropped == 1 and list(oracle["answer"]) == ["A"]
    with pytest.raises(ValueError, match="unknown hop condition"):
        ablate(frame, "options_only")


def test_gain_is_the_share_of_the_oracle_gain_the_clue_delivers() -> None:
    none = np.array([0, 0, 0, 0, 1, 1, 0, 0] * 5, dtype=bool)
    oracle = np.ones(40, dtype=bool)
    clue = np.array([1, 1, 0, 0, 1, 1, 1, 0] * 5, dtype=bool)
    point, (low, high), undefined = gain_interval(none, clue, oracle, 500, 1)
    assert point == pytest.approx((0.625 - 0.25) / (1 - 0.25))
    assert low < point < high and undefined == 0.0
    again = gain_interval(none, clue, oracle, 500, 1)
    assert again[1] == (low, high)  # seeded: the interval does not move between runs


def _options(prompt: str) -> dict[str, str]:
    return dict(re.findall(r"^([ABC])\. (.*)$", prompt, flags=re.MULTILINE))


def _statement(text: str) -> str:
    """The quoted statement every question frame ends with ("… \"<stem> …\"")."""
    found = re.findall(r'"([^"]+?) …"', text)
    assert found, text
    return found[-1]


TOLD = {
    "none": ("neither names the province nor describes it", "tidak menyebutkan nama provinsinya"),
    "clue": ("an indirect clue describes it", "petunjuk tidak langsung menggambarkannya"),
    "oracle": ("the question names the province", "nama provinsinya disebutkan dalam"),
}
"""What each condition's prompt tells the model about the province, per language."""
respond_seen: dict[str, list[tuple[str, list[str]]]] = {}


def _scripted(dataset: pd.DataFrame, behaviour: str) -> Callable[[list[dict[str, Any]]], str]:
    """A model that uses the clue, ignores it, or answers from the statement alone."""
    gold = {}  # (options, statement): gold option text; two statements may share options
    for row in dataset.itertuples():
        options = [str(o) for o in row.options]
        key = (frozenset(options), _statement(str(row.question)))
        gold[key] = options["ABC".index(str(row.answer))]
    clues = {str(c): str(p) for c, p in zip(dataset["clue"], dataset["province"], strict=True)}
    kb = load_knowledge_base()
    oracles = [
        ORACLE[lang].format(name=n) for p in kb for lang, n in (("en", p.name), ("id", p.name_id))
    ]

    seen: list[tuple[str, list[str]]] = []
    respond_seen[behaviour] = seen

    def respond(messages: list[dict[str, Any]]) -> str:
        prompt = str(messages[-1]["content"])
        options = _options(prompt)
        text = gold[(frozenset(options.values()), _statement(prompt))]
        right = next(k for k, v in options.items() if v == text)
        wrong = next(k for k in options if k != right)
        named = any(sentence in prompt for sentence in oracles)
        clue = next((c for c in clues if c in prompt), None)
        told = [k for k, v in TOLD.items() if any(t in prompt for t in v)]
        condition = "oracle" if named else "clue" if clue is not None else "none"
        seen.append((condition, told))
        knows = {
            "uses_clue": named or clue is not None,
            "ignores_clue": named,
            "statement_alone": True,
        }[behaviour]
        province = clues[clue] if clue is not None and behaviour == "uses_clue" else "unknown"
        return json.dumps({"province": province, "answer": right if knows else wrong})

    return respond


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        ("uses_clue", "clue needed"),
        ("ignores_clue", "clue unused"),
        ("statement_alone", "statement suffices"),
    ],
)
def test_scripted_models_produce_the_three_readings(  # type: ignore[no-untyped-def]
    template_build, tmp_path, monkeypatch, behaviour: str, expected: str
) -> None:
    from cultureqa.testing import FakeOpenAIServer

    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / "state"))  # private response store
    settings, results = template_build
    # 40 items per language: with no item against it, "no difference" within ± 0.2 needs
    # about 30 (Tango's variance at the margin); 12 would read "inconclusive at this n"
    settings = dataclasses.replace(
        settings, hop={**settings.hop, "limit": 40, "bootstrap": 400, "seed": 3, "margin": 0.2}
    )
    dataset = results["finalize"].frame
    with FakeOpenAIServer(responder=_scripted(dataset, behaviour)) as server:
        model = {
            "id": f"scripted-{behaviour}", "backend": "litellm", "batch_size": 1,
            "concurrency": 8, "decoding": {"temperature": 0.0, "max_tokens": 64, "seed": None},
            "options": {"litellm_model": f"openai/{behaviour}", "api_base": server.api_base,
                        "api_key_env": None, "drop_params": True},
            "retry": {"attempts": 1, "initial_wait_s": 0.01, "max_wait_s": 0.05, "timeout_s": 5},
        }  # fmt: skip
        predictions, summary = hop_stage.run_hop(settings, model)
    assert set(predictions["condition"]) == set(CONDITIONS)
    table = pd.DataFrame(summary["table"])
    overall = table[table["clue_type"] == "all"]
    assert set(overall["reading"]) == {expected}, overall[["language", "reading"]]
    assert summary["chance_model"] is False and summary["dropped_clue_not_found"] == 0
    seen = respond_seen[behaviour]  # every prompt told the truth about its own condition
    assert {c for c, _ in seen} == set(CONDITIONS)
    assert all(told == [condition] for condition, told in seen), seen[:3]
    assert summary["prompts"]["none"] == "prompts/mocqa/hop/none" and "Holm" in summary["rule"]
    assert summary["margin"] == 0.2 and "± 0.2" in summary["rule"]
    if behaviour == "uses_clue":
        assert (overall["first_hop"] == 1.0).all() and (overall["gain"] == 1.0).all()
        assert (overall["p_clue_vs_none"] < 0.05).all()


def test_a_chance_baseline_reaches_the_card_and_says_it_cannot_read_the_table(
    template_build, mocqa_helpers, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / "state"))  # private response store
    settings, results = template_build
    params = mocqa_helpers["compose"](settings.build_dir.parent)
    predictions, summary = hop_stage.run_hop(settings, params["baselines"]["random"])
    assert set(predictions["condition"]) == set(CONDITIONS)
    table = pd.DataFrame(summary["table"])
    assert len(table) == 14  # 6 clue types + all, per language
    assert set(table["reading"]) == {"chance model"} and summary["chance_model"]
    assert summary["paired_items"] == summary["items"] == len(results["finalize"].frame)
    for column in ("none", "clue", "oracle", "gain", "p_clue_vs_none", "p_clue_vs_oracle"):
        assert column in table.columns
    assert (table["none_low"] <= table["none"]).all() and (
        table["none"] <= table["none_high"]
    ).all()
    _, card, markdown = runners.run_finalize(settings, {}, "sample", summary)
    assert card["hop_necessity"]["model"] == "random"
    section = markdown.split("## Hop necessity")[1].split("\n## ")[0]
    assert "cannot read the table" in section and "| language | clue type | n | none |" in section
    assert "**too weak to tell**" in section  # the legend explains every reading


def test_a_refused_key_stops_the_hop_diagnostic_after_the_first_condition(  # type: ignore[no-untyped-def]
    template_build, mocqa_helpers, tmp_path, monkeypatch
) -> None:
    """Three conditions, three clients: without the check each would spend ten more refusals."""
    from cultureqa.spend import ApiStopped
    from cultureqa.testing import FakeOpenAIServer, FaultPlan

    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / "state"))  # private response store
    settings, _ = template_build
    with FakeOpenAIServer(faults=FaultPlan(fail_status=401)) as refusing:
        model = {
            "id": "refused-hop", "backend": "litellm", "batch_size": 1, "concurrency": 4,
            "decoding": {"temperature": 0.0, "max_tokens": 16, "seed": None},
            "options": {"litellm_model": "openai/refused-hop", "api_base": refusing.api_base,
                        "api_key_env": None, "drop_params": True},
            "retry": {"attempts": 2, "initial_wait_s": 0.01, "max_wait_s": 0.05, "timeout_s": 5},
        }  # fmt: skip
        with pytest.raises(ApiStopped, match=r"refused-hop: stopped after 10 .*HTTP 401"):
            hop_stage.run_hop(settings, model)
        sent = refusing.hits
    assert 10 <= sent <= 14  # the first condition only: 10 refusals plus those in flight


@pytest.mark.parametrize(
    ("rates", "n", "expected"),
    [
        ((0.35, 0.75, 0.80), 200, "clue needed"),  # none, clue, oracle accuracies, items
        ((0.35, 0.38, 0.80), 1500, "clue unused"),
        ((0.69, 0.70, 0.72), 1500, "statement suffices"),
        ((0.33, 0.34, 0.33), 1500, "too weak to tell"),
        # the same effects at 200 independent answers: a 3-point difference is neither shown
        # nor ruled out beyond ± 10 points, so no cell claims "no difference"
        ((0.35, 0.38, 0.80), 200, "inconclusive at this n"),
        ((0.69, 0.70, 0.72), 200, "inconclusive at this n"),
    ],
)
def test_readings_hold_under_sampling_noise(
    rates: tuple[float, float, float], n: int, expected: str
) -> None:
    """Seeded noisy answers: the tests both ways, not point estimates, decide."""
    from cultureqa.mocqa.hop import hop_table

    rng = np.random.default_rng(11)
    frame = pd.DataFrame(
        {
            "item_id": [f"i{k}" for k in range(n)],
            "language": "en",
            "clue_type": "entity",
            **{c: rng.random(n) < r for c, r in zip(CONDITIONS, rates, strict=True)},
            "first_hop": rng.random(n) < 0.5,
            "chance": 1 / 3,
        }
    )
    table = hop_table(frame, HopConfig(bootstrap=1000, seed=5), chance_model=False)
    assert set(table["reading"]) == {expected}, table[["none", "clue", "oracle", "reading"]]


def test_hop_proportions_use_the_same_wilson_interval_as_the_analysis_package() -> None:
    from cultureqa.analysis.stats import wilson_ci
    from cultureqa.mocqa.paired import proportion

    share = proportion([True, True, True, False])
    assert (share.value, share.n) == (0.75, 4)
    assert (share.low, share.high) == pytest.approx(wilson_ci(3, 4))


@pytest.mark.parametrize("style", ["zero_shot", "cot"])
@pytest.mark.parametrize("language", ["en", "id"])
def test_every_condition_has_a_prompt_that_tells_the_truth_about_it(
    style: str, language: str
) -> None:
    from cultureqa.mocqa.answers import load_template
    from cultureqa.paths import project_root

    config = HopConfig()
    texts = {
        c: load_template(project_root(), style, language, config.prompts[c]).text
        for c in CONDITIONS
    }
    for condition, text in texts.items():
        said = {k for k, phrases in TOLD.items() if any(p in text for p in phrases)}
        assert said == {condition}, (condition, language, style)
    # the three differ only in what they say about the province: same question and reply form
    tails = {text.split("\n\n", 1)[1].split("\n")[0] for text in texts.values()}
    assert len(tails) == 1


def test_hop_config_names_a_missing_or_unknown_condition() -> None:
    with pytest.raises(ValueError, match=r"lacks condition\(s\) \['oracle'\]"):
        HopConfig(prompts={"none": "a", "clue": "b"})
    with pytest.raises(ValueError, match=r"unknown condition\(s\) \['options_only'\]"):
        HopConfig(prompts={"none": "a", "clue": "b", "oracle": "c", "options_only": "d"})
    with pytest.raises(ValueError, match="alpha must lie in"):
        HopConfig(alpha=0.0)
