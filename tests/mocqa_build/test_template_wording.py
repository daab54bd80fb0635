"""The clue templates and source options read right on built items (issue 42).

Each check runs on the items the template build produces, not on template strings: a fix that
reads well in the YAML but fills in badly (a year the frame already states, a festival called an
everyday scene, one option glossed and its rivals not) fails here.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd


def _items(template_build: Any) -> pd.DataFrame:
    _, results = template_build
    return results["finalize"].frame


def test_no_clue_states_the_same_year_twice(template_build: Any) -> None:  # type: ignore[no-untyped-def]
    items = _items(template_build)
    intersection = items[items["clue_type"] == "intersection"]
    assert intersection["clue"].str.contains("2020").any()  # year predicates are built
    twice = [
        clue
        for clue in items["clue"]
        if any(n > 1 for n in pd.Series(re.findall(r"\b(?:19|20)\d\d\b", clue)).value_counts())
    ]
    assert not twice, twice[:3]


def test_no_commonsense_clue_calls_its_scene_everyday(template_build: Any) -> None:  # type: ignore[no-untyped-def]
    items = _items(template_build)
    commonsense = items[items["clue_type"] == "commonsense"]
    assert commonsense["clue"].str.contains("witness|menyaksikan").any()  # festivals are built
    wrong = commonsense[commonsense["clue"].str.contains("everyday|sehari-hari")]
    assert wrong.empty, wrong["clue"].head(3).tolist()


def test_no_option_glosses_itself(template_build: Any) -> None:  # type: ignore[no-untyped-def]
    """A gloss on one option ("domba ekor gemuk (fat-tailed sheep)") marks it among its rivals."""
    items = _items(template_build)
    glossed = [(lang, opts) for lang, opts in zip(items["language"], items["options"], strict=True)
               if any(re.search(r"\(.+\)", str(o)) for o in opts)]  # fmt: skip
    assert not glossed, glossed[:3]
