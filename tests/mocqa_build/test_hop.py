"""Hop-necessity diagnostic: ablations, the table, and its place in the card."""

from __future__ import annotations

import pandas as pd
import pytest

from cultureqa.mocqa.hop import CONDITIONS, NEUTRAL, ablate, without_clue
from cultureqa.mocqa_build import runners


def test_without_clue_removes_the_clue_or_says_it_cannot() -> None:
    question = 'Think of the province of X. In this province, how does "a b" end?'
    assert without_clue(question, "Think of the province of X.") == (
        'In this province, how does "a b" end?'
    )
    assert without_clue(question, "a clue that is not there") is None


def test_ablations_keep_options_and_gold_and_count_what_they_drop() -> None:
    frame = pd.DataFrame(
        {
            "question": ["Clue one. In this province?", "Pertanyaan tanpa petunjuk?"],
            "clue": ["Clue one.", "Petunjuk yang hilang."],
            "language": ["en", "id"],
            "answer": ["A", "B"],
        }
    )
    stripped, dropped = ablate(frame, "statement_only")
    assert list(stripped["question"]) == ["In this province?"] and dropped == 1
    options, _ = ablate(frame, "options_only")
    assert list(options["question"]) == [NEUTRAL["en"], NEUTRAL["id"]]
    assert list(options["answer"]) == ["A", "B"]
    with pytest.raises(ValueError, match="unknown hop condition"):
        ablate(frame, "clue_only")


def test_hop_table_with_a_fixed_baseline_reaches_the_card(
    template_build, mocqa_helpers, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / "state"))  # private response store
    settings, results = template_build
    params = mocqa_helpers["compose"](settings.build_dir.parent)
    predictions, summary = runners.run_hop(settings, params["baselines"]["first_option"])
    assert set(predictions["condition"]) == set(CONDITIONS)
    table = pd.DataFrame(summary["table"])
    assert len(table) == 12 and set(CONDITIONS) <= set(table.columns)
    # "always A" scores the share of gold A whatever the question says: equal across conditions
    assert (table["full"] == table["statement_only"]).all()
    assert (table["full"] == table["options_only"]).all()
    assert summary["items"] == len(results["finalize"].frame)
    cells = zip(table["clue_type"], table["language"], strict=True)
    assert set(summary["by_cell"]) == {f"{c}.{lang}" for c, lang in cells}
    _, card, markdown = runners.run_finalize(settings, {}, "sample", summary)
    assert card["hop_necessity"]["model"] == "first-option"
    section = markdown.split("## Hop necessity")[1].split("## ")[0]
    assert "| clue_type | language | full | n | statement_only | options_only |" in section


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
            runners.run_hop(settings, model)
        sent = refusing.hits
    assert 10 <= sent <= 14  # the first condition only: 10 refusals plus those in flight
