"""Verify repairs or removes, rebalance completes or drops pairs, finalize balances gold."""

from __future__ import annotations

import random
from collections import Counter

import pandas as pd

from cultureqa.knowledge.provinces import load_knowledge_base
from cultureqa.mocqa_build.clues import ClueGenerator
from cultureqa.mocqa_build.finalize import balanced_positions, finalize, permutation
from cultureqa.mocqa_build.question import clean_stem
from cultureqa.mocqa_build.rebalance import rebalance
from cultureqa.mocqa_build.templates import load_templates
from cultureqa.mocqa_build.textchecks import (
    ANAPHORS,
    copied_option,
    distinctive_tokens,
    shortcut_terms,
)
from cultureqa.mocqa_build.verify import (
    MAJOR,
    VerifyConfig,
    phase1_issues,
    template_repairer,
    verify_variants,
)


def _generator(settings) -> ClueGenerator:  # type: ignore[no-untyped-def]
    return ClueGenerator(
        load_knowledge_base(settings.knowledge_dir), load_templates(settings.templates)
    )


def test_copying_and_shortcut_rules() -> None:
    options = ["songket cloth", "tapis cloth", "ulos cloth"]
    assert distinctive_tokens(options) == {"songket", "tapis", "ulos"}
    assert shortcut_terms("the province where ulos is woven", options) == ["ulos"]
    assert shortcut_terms("the province of fine cloth", options) == []
    assert copied_option("Which is it? Hint: tapis cloth.", options) == "tapis cloth"
    long = ["buffalo and horses called belis by the families"]
    assert copied_option("they give horses called belis by tradition", long, n=4) == long[0]
    assert copied_option("they give horses and called it", long, n=4) is None
    assert copied_option("of the and in", ["of the and in"]) is None  # function words only


def test_clean_stem_replaces_location_mentions() -> None:
    stem = clean_stem("Di Kota Medan, pengantin perempuan memakai", "id")
    assert stem.text == "Di provinsi ini, pengantin perempuan memakai" and stem.removed == (
        "Medan",
    )
    stem = clean_stem("At weddings in the province of Bali, guests bring", "en")
    assert stem.text == "At weddings in this province, guests bring"
    assert clean_stem("Rumoh Aceh is a house on stilts", "en").removed == ()


def test_template_repair_regenerates_a_leaking_pair(template_build) -> None:
    settings, results = template_build
    frame = results["judge"].frame
    pair = frame["pair_id"].iloc[0]
    doctored = frame.copy()
    rows = doctored["pair_id"] == pair
    en = rows & (doctored["language"] == "en")
    doctored.loc[en, "question"] = "In Aceh, " + doctored.loc[en, "question"]
    doctored.loc[en, "clue"] = "In Aceh, " + doctored.loc[en, "clue"]
    assert phase1_issues(doctored[en].iloc[0].to_dict(), 4) == [
        "clue names its province: Aceh (province Aceh)"
    ]
    repairer = template_repairer(results["ingest"].frame, _generator(settings))
    result = verify_variants(doctored, settings.verify, repairer)
    assert len(result.frame) == len(frame) and result.removed.empty
    fixed = result.frame[result.frame["pair_id"] == pair]
    assert fixed["fact_key"].nunique() == 1  # both languages regenerated from the same new fact
    assert fixed["fact_key"].iloc[0] != frame.loc[rows, "fact_key"].iloc[0]
    assert result.metrics["repaired"] == 2 and result.tables["repairs"]["resolved"].all()


def test_unrepairable_leak_and_major_structure_problems_are_removed(template_build) -> None:
    _, results = template_build
    frame = results["judge"].frame.head(6).copy()
    frame.loc[frame.index[0], "question"] = frame.loc[frame.index[0], "question"] + " (from Bali)"
    no_anaphor = frame.loc[frame.index[1], "question"]
    for phrases in ANAPHORS.values():
        for phrase in phrases:
            no_anaphor = no_anaphor.replace(phrase, "somewhere")
    frame.loc[frame.index[1], "question"] = no_anaphor
    frame.loc[frame.index[2], "question"] = "  " + frame.loc[frame.index[2], "question"]
    result = verify_variants(frame, VerifyConfig(repair_attempts=2), repair=None)
    reasons = dict(zip(result.removed["variant_id"], result.removed["reason"], strict=True))
    assert reasons[frame["variant_id"].iloc[0]] == "not repaired: location"
    assert reasons[frame["variant_id"].iloc[1]] == MAJOR
    assert len(result.frame) == 4 and result.metrics["minor_revisions"] == 1
    assert not result.frame["question"].str.startswith(" ").any()


def test_reviewer_major_revision_removes_and_minor_revision_applies(template_build) -> None:
    _, results = template_build
    frame = results["judge"].frame.head(3)
    ids = list(frame["variant_id"])
    revised = frame["question"].iloc[1].replace("which option", "which of the options")
    verdicts = {
        ids[0]: "[NEEDS MAJOR REVISION] the clue fits two provinces",
        ids[1]: f"VERDICT: MINOR\nQUESTION: {revised}",
    }
    result = verify_variants(frame, VerifyConfig(), review=lambda rows: verdicts)
    assert list(result.removed["variant_id"]) == [ids[0]]
    assert "fits two provinces" in result.removed["detail"].iloc[0]
    assert result.frame.set_index("variant_id").loc[ids[1], "question"] == revised


def test_rebalance_drops_orphans_with_the_earlier_reason_in_template_mode(template_build) -> None:
    _, results = template_build
    frame = results["verify"].frame
    victim = frame[frame["language"] == "id"].iloc[0]
    earlier = pd.DataFrame(
        [
            {
                "variant_id": victim["variant_id"],
                "pair_id": victim["pair_id"],
                "language": "id",
                "stage": "judge",
                "reason": "a judge rated it Significant",
                "detail": "",
            }
        ]
    )
    result = rebalance(
        frame[frame["variant_id"] != victim["variant_id"]],
        ["en", "id"],
        results["ingest"].frame,
        None,
        earlier,
    )
    assert list(result.removed["pair_id"]) == [victim["pair_id"]]
    assert "template mode does not translate" in result.removed["reason"].iloc[0]
    assert "id removed at judge: a judge rated it Significant" in result.removed["detail"].iloc[0]
    assert len(result.frame) == len(frame) - 2


def test_rebalance_translates_the_missing_side_with_source_options(template_build) -> None:
    _, results = template_build
    frame = results["verify"].frame
    victim = frame[frame["language"] == "id"].iloc[0]
    english = frame[(frame["pair_id"] == victim["pair_id"]) & (frame["language"] == "en")].iloc[0]

    def translator(rows: pd.DataFrame, targets: list[str]) -> list[tuple[str, str] | None]:
        assert targets == ["id"] and list(rows["variant_id"]) == [english["variant_id"]]
        return [(victim["question"], victim["clue"])]

    result = rebalance(
        frame[frame["variant_id"] != victim["variant_id"]],
        ["en", "id"],
        results["ingest"].frame,
        translator,
    )
    assert result.removed.empty and result.metrics["translated"] == 1
    added = result.frame.set_index("variant_id").loc[victim["variant_id"]]
    assert list(added["options"]) == list(victim["options"])  # the source's own Indonesian options
    assert added["generator"] == "template+translate"


def test_balanced_positions_and_permutations() -> None:
    rng = random.Random(0)
    for n in (1, 2, 3, 10, 11, 300, 301):
        counts = Counter(balanced_positions(n, 3, rng))
        assert max(counts.values()) - min(counts.get(k, 0) for k in range(3)) <= 1
    for gold in range(3):
        for target in range(3):
            order = permutation(gold, target, 3, rng)
            assert sorted(order) == [0, 1, 2] and order[target] == gold


def test_finalize_is_deterministic_and_keeps_gold_text(template_build) -> None:
    _, results = template_build
    frame = results["rebalance"].frame
    first, again = finalize(frame, 7).frame, finalize(frame, 7).frame
    assert first.equals(again)
    assert not first["option_order"].equals(finalize(frame, 8).frame["option_order"])
    gold_text = {r.variant_id: list(r.options)["ABC".index(r.answer)] for r in frame.itertuples()}
    for row in first.itertuples():
        assert list(row.options)["ABC".index(row.answer)] == gold_text[row.item_id]
