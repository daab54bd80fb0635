"""Custom GX expectation of every two-hop region set's dataset: no item points at its region.

The scrub and the rule judge already remove such items; the suite checks the published file
again, from the set's own term lists (regions table and leak table), so a hand edit or a stale
file cannot slip through. The terms come in at run time as the expectation's ``terms`` (region id
→ ``[term, kind]`` pairs) through :func:`cultureqa.validation.run_suite`'s overrides; the clue may
state the kinds in ``clue_may_name`` (a language, a currency), nothing else may. Language balance
(``expect_pairs_to_exist_in_every_language``) and option positions
(``expect_column_value_shares_to_be_uniform``) are the shared expectations. Both item formats:
the ``case`` format's six option columns, the ``statement`` format's ``options`` list (whose
``question`` holds the clue, judged as the clue).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar

import pandas as pd

import cultureqa.validation.mocqa_expectations  # noqa: F401 - the language-pairs expectation
from cultureqa.mocqa_shared.schema import as_options
from cultureqa.regions.generation.tables import Region, Term
from cultureqa.regions.scrub import leaks
from cultureqa.validation.cases_expectations import _KeyedExpectation, keyed_problems
from cultureqa.validation.gx_kit import table_metric

OPTIONS = tuple(f"option_{x}" for x in "ABCDEF")


@lru_cache(maxsize=4096)
def _region(rid: str, terms: tuple[tuple[str, ...], ...]) -> Region:
    """``terms``: (text, kind) or (text, kind, lang) per term."""
    return Region(
        rid, {}, tuple(Term(t[0], t[1], None, t[2] if len(t) > 2 else "und") for t in terms), 0
    )


def region_leak(
    item: dict[str, Any], terms: dict[str, list[list[str]]], clue_may_name: list[str]
) -> str:
    """'' when the item names no term of its region, else the terms found (``term (kind)``)."""
    rid = str(item["region"])
    region = _region(rid, tuple(tuple(str(x) for x in t) for t in terms.get(rid, [])))
    clue = str(item["clue"])
    body = str(item["narrative"]).replace(clue, "", 1)
    question = str(item["question"]).replace(clue, "", 1)  # a statement's question holds its clue
    options = [str(item[c]) for c in OPTIONS if c in item]
    options += [str(o) for o in as_options(item["options"])] if "options" in item else []
    lang = str(item["language"]) if "language" in item else None
    found = leaks([body, question, *options], region, (), lang)
    found += [t for t in leaks([clue], region, clue_may_name, lang) if t not in found]
    return "; ".join(found)


def leak_problems(
    frame: pd.DataFrame, key_column: str, terms: dict[str, Any], clue_may_name: list[str]
) -> dict[str, str]:
    """Item id → the terms of its own region it still names."""
    return keyed_problems(frame, key_column, lambda r: region_leak(r, terms, clue_may_name))


table_metric(
    "table.twohop_region_leaks",
    lambda frame, key_column, terms, clue_may_name: leak_problems(
        frame, str(key_column), dict(terms), list(clue_may_name or [])
    ),
    ("key_column", "terms", "clue_may_name"),
)


class ExpectItemsToNotNameTheirRegion(_KeyedExpectation):
    """No item names a term (name, alias, people, language, city, …) of its own region."""

    key_column: str = "item_id"
    terms: dict[str, list[list[str]]]
    clue_may_name: list[str] = []  # noqa: RUF012 - a pydantic field (GX copies it per instance)
    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.twohop_region_leaks",)
    success_keys: ClassVar[tuple[str, ...]] = ("key_column", "terms", "clue_may_name")
    what: ClassVar[str] = "items name a term of their own region"
