"""Hop-necessity diagnostic: conditions, paired statistics and readings (cultureqa.mocqa.hop)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cultureqa.mocqa.hop import (
    CONDITIONS,
    HopConfig,
    ablate,
    gain_interval,
    with_oracle,
    without_clue,
)


def test_without_clue_and_with_oracle_replace_the_clue_or_say_they_cannot() -> None:
    question = 'Think of the province of X. In this province, how does "a b" end?'
    clue = "Think of the province of X."
    assert without_clue(question, clue) == 'In this province, how does "a b" end?'
    assert without_clue(question, "a clue that is not there") is None
    oracle = with_oracle(question, clue, "The province is Bali.")
    assert oracle == 'The province is Bali. In this province, how does "a b" end?'
    assert with_oracle(question, "absent", "The province is Bali.") is None


def test_ablations_keep_options_and_gold_and_count_what_they_drop() -> None:
    """``none`` drops the item's frame sentence, ``oracle`` puts its naming sentence there."""
    frame = pd.DataFrame(
        {
            "question": ["Think of clue one. In this province?", "Pertanyaan tanpa petunjuk?"],
            "narrative": ["Think of clue one.", "Bayangkan petunjuk yang hilang."],
            "background_oracle": ["The statement below is about Bali.", "Tentang Aceh."],
            "language": ["en", "id"],
            "answer": ["A", "B"],
        }
    )
    none, dropped = ablate(frame, "none")
    assert list(none["question"]) == ["In this province?"] and dropped == 1
    oracle, dropped = ablate(frame, "oracle")
    assert list(oracle["question"]) == ["The statement below is about Bali. In this province?"]
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


TOLD = {
    "none": ("neither names the province nor describes it", "tidak menyebutkan nama provinsinya"),
    "clue": ("an indirect clue describes it", "petunjuk tidak langsung menggambarkannya"),
    "oracle": ("the question names the province", "nama provinsinya disebutkan dalam"),
}
"""What each condition's prompt tells the model about the province, per language."""


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
    from cultureqa.core.paths import project_root
    from cultureqa.mocqa.answers import load_template

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
    with pytest.raises(ValueError, match=r"missing condition\(s\) \['oracle'\]"):
        HopConfig(prompts={"none": "a", "clue": "b"})
    with pytest.raises(ValueError, match=r"unknown condition\(s\) \['options_only'\]"):
        HopConfig(prompts={"none": "a", "clue": "b", "oracle": "c", "options_only": "d"})
    with pytest.raises(ValueError, match="alpha must lie in"):
        HopConfig(alpha=0.0)
