"""Custom GX expectations every multiple-choice benchmark is held to (the generic suite).

* gold positions are balanced: the share of golds at each letter is within ``tolerance`` of the
  share a uniform draw would give (1/k, or the mix of 1/k_i when items have different option
  counts), decided on the lower confidence bound of the largest gap
  (:mod:`cultureqa.validation.balance`), so a balanced file passes at every size and all golds
  at one letter fail from 20 items up; the chi-square statistic and p-value are reported beside it;
* no two items in one language share a question with the same options (a stem may recur with
  other options);
* every item's options are non-empty and distinct;
* an item has the same number of options in every language (and, unless ``allow_mixed``, every
  item has the same number);
* every item's question is written in a script of its declared language (Thai or Chinese text
  tagged ``en`` is a mislabel; :mod:`cultureqa.benchmarks.scripts`).

Item checks list the offending item ids with a reason, up to :data:`SHOWN`, and always the count.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from typing import Any, ClassVar

import pandas as pd
from great_expectations.expectations.expectation import BatchExpectation

from cultureqa.benchmarks.scripts import language_scripts, mismatch
from cultureqa.core.records import LETTERS
from cultureqa.validation.balance import CONFIDENCE, balance
from cultureqa.validation.gx_kit import table_metric

SHOWN = 10
"""Item ids listed per failed expectation; the count always covers all of them."""


def gold_balance(
    frame: pd.DataFrame, tolerance: float, confidence: float = CONFIDENCE
) -> dict[str, Any]:
    """Gold letters against a uniform draw per item (1/k_i), decided on the gap's bound.

    With several right answers the position of the first-listed gold counts (``answer``).
    """
    letters = frame["answer"].astype(str)
    sizes = frame["n_options"].astype(int)
    width = min(int(sizes.max()), len(LETTERS)) if len(frame) else 0
    expected = {LETTERS[j]: float(((sizes > j) / sizes).sum()) for j in range(width)}
    return balance(Counter(letters), expected, tolerance, confidence).as_dict()


def duplicate_questions(frame: pd.DataFrame, columns: list[str]) -> dict[str, str]:
    """Item id → the item it repeats, for every later item with the same ``columns`` values.

    Options count in any order, as for ``rows.duplicates: drop``: a seeded shuffle gives two copies
    of one item (two ids) two orders, and the repeat must still be found.
    """
    first: dict[bytes, str] = {}
    problems: dict[str, str] = {}
    for start in range(0, len(frame), CHUNK):
        part = frame.iloc[start : start + CHUNK]
        values = [
            [_any_order(v) for v in part[c].tolist()]
            if c == "options"
            else part[c].astype(str).tolist()
            for c in columns
        ]
        for item, language, *cells in zip(
            part["item_id"].astype(str).tolist(), _languages(part), *values, strict=True
        ):
            key = _digest(" ".join(c.split()).casefold() for c in cells)
            if key in first and first[key] != item:
                problems[f"{item} ({language})"] = f"same {'/'.join(columns)} as {first[key]}"
            first.setdefault(key, item)
    return problems


CHUNK = 50_000
"""Rows whose cells are Python strings at once (a million rows of them cost a gigabyte)."""


def _digest(cells: Iterable[str]) -> bytes:
    """A 16-byte key for folded cells: a million keys of whole questions and options cost ~600 MB.

    BLAKE2b at 128 bits: the chance that two different items of a million share a key is ~1e-27.
    """
    digest = hashlib.blake2b(digest_size=16)
    for cell in cells:
        digest.update(cell.encode("utf-8"))
        digest.update(b"\x00")  # cell boundary: ("ab", "c") and ("a", "bc") differ
    return digest.digest()


def _any_order(cell: object) -> str:
    """A JSON options cell as its folded texts sorted (the cell as is when it is not a list)."""
    try:
        options = json.loads(str(cell))
    except json.JSONDecodeError:
        return str(cell)
    if not isinstance(options, list):
        return str(cell)
    return json.dumps(sorted(" ".join(str(o).split()).casefold() for o in options))


def _languages(frame: pd.DataFrame) -> list[str]:
    """The language column as text, or "" per row (column lists, not a million row dicts)."""
    if "language" in frame.columns:
        return [str(v) for v in frame["language"].tolist()]
    return [""] * len(frame)


def option_problems(frame: pd.DataFrame) -> dict[str, str]:
    """Item id → why its options are broken (empty, duplicated, or not a JSON list)."""
    problems: dict[str, str] = {}
    ids = frame["item_id"].tolist()
    for item, language, cell in zip(ids, _languages(frame), frame["options"].tolist(), strict=True):
        key = f"{item} ({language})"
        try:
            options = json.loads(str(cell))
        except json.JSONDecodeError:
            problems[key] = "options are not a JSON list"
            continue
        texts = [" ".join(str(o).split()) for o in options]  # case counts: GG and gg differ
        empty = [LETTERS[i] for i, t in enumerate(texts) if not t]
        repeated = sorted(t for t, c in Counter(texts).items() if c > 1 and t)
        reason = "; ".join(
            ([f"empty {empty}"] if empty else []) + [f"{t!r} repeated" for t in repeated]
        )
        if reason:
            problems[key] = reason
    return problems


def script_problems(frame: pd.DataFrame) -> dict[str, str]:
    """Item id → how its question's script contradicts its declared language.

    ASCII text in a Latin-script language is passed over without looking at each letter: at a
    million items the check must not cost minutes.
    """
    problems: dict[str, str] = {}
    ids = frame["item_id"].tolist()
    latin: dict[str, bool] = {}
    for item, language, question in zip(
        ids, _languages(frame), frame["question"].astype(str).tolist(), strict=True
    ):
        if language not in latin:
            latin[language] = language_scripts(language) == frozenset({"Latn"})
        if latin[language] and question.isascii():
            continue
        reason = mismatch(question, language)
        if reason is not None:
            problems[f"{item} ({language})"] = f"question {reason}"
    return problems


def option_count_problems(frame: pd.DataFrame, allow_mixed: bool) -> dict[str, str]:
    """Item id → how its option count is inconsistent (across languages, or with the others)."""
    counts = frame[["item_id", "n_options"]].astype({"n_options": int})
    distinct = counts.drop_duplicates()
    several = distinct["item_id"].duplicated(keep=False)
    problems = {
        str(i): f"{sorted(g['n_options'].tolist())} options in different languages"
        for i, g in distinct[several].groupby("item_id")
    }
    if not allow_mixed and len(frame):
        usual = int(counts["n_options"].mode().iloc[0])
        odd = distinct[~several & (distinct["n_options"] != usual)]
        for item, found in zip(odd["item_id"].tolist(), odd["n_options"].tolist(), strict=True):
            problems[str(item)] = f"{found} options where most items have {usual}"
    return problems


table_metric(
    "table.mcq_gold_balance",
    lambda frame, tolerance, confidence: gold_balance(frame, float(tolerance), float(confidence)),
    ("tolerance", "confidence"),
)
table_metric(
    "table.mcq_duplicate_questions",
    lambda frame, column_list: duplicate_questions(frame, list(column_list)),
    ("column_list",),
)
table_metric("table.mcq_option_problems", option_problems)
table_metric("table.mcq_script_problems", script_problems)
table_metric(
    "table.mcq_option_count_problems",
    lambda frame, allow_mixed: option_count_problems(frame, bool(allow_mixed)),
    ("allow_mixed",),
)


class _ItemExpectation(BatchExpectation):  # type: ignore[misc]
    """One table metric returning ``item → reason``; success iff it is empty."""

    what: ClassVar[str] = "items break the rule"

    def _validate(
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        problems: dict[str, str] = metrics[self.metric_dependencies[0]]
        shown = dict(sorted(problems.items())[:SHOWN])
        listed = "; ".join(f"{item}: {reason}" for item, reason in shown.items())
        more = f" (first {SHOWN} shown)" if len(problems) > SHOWN else ""
        summary = f"{len(problems)} {self.what}{more}: {listed}" if problems else ""
        return {
            "success": not problems,
            "result": {
                "observed_value": f"{len(problems)} {self.what}",
                "details": {"items": shown, "n_items": len(problems), "summary": summary},
            },
        }


class ExpectQuestionsToBeUnique(_ItemExpectation):
    """No two items of one language have the same question and options (whitespace, case folded).

    Published benchmarks reuse a stem with other options ("Which of these is from Bali?"), which is
    two items, not a duplicate; ``column_list`` names what must differ.
    """

    column_list: list[str] = ["language", "question", "options"]  # noqa: RUF012 - GX field
    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.mcq_duplicate_questions",)
    success_keys: ClassVar[tuple[str, ...]] = ("column_list",)
    what: ClassVar[str] = "items repeat an earlier item"


class ExpectOptionsToBeDistinctAndNonEmpty(_ItemExpectation):
    """Every option of every item is non-empty and different from the item's other options."""

    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.mcq_option_problems",)
    success_keys: ClassVar[tuple[str, ...]] = ()
    what: ClassVar[str] = "items have empty or duplicate options"


class ExpectOptionCountsToBeConsistent(_ItemExpectation):
    """An item has one option count in all languages; all items share it unless allow_mixed."""

    allow_mixed: bool = False
    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.mcq_option_count_problems",)
    success_keys: ClassVar[tuple[str, ...]] = ("allow_mixed",)
    what: ClassVar[str] = "items have an inconsistent number of options"


class ExpectQuestionScriptsToMatchLanguage(_ItemExpectation):
    """Every question is written in a script of the item's declared language.

    Fails on a single mislabelled item by default; a benchmark that knowingly mixes scripts in
    one language (romanized questions) declares it ``report`` under ``severity:``.
    """

    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.mcq_script_problems",)
    success_keys: ClassVar[tuple[str, ...]] = ()
    what: ClassVar[str] = "items are written in another script than their language's"


class ExpectGoldPositionsToBeBalanced(BatchExpectation):  # type: ignore[misc]
    """Gold letters spread over positions as a uniform draw would, within ``tolerance``."""

    tolerance: float = 0.1
    confidence: float = CONFIDENCE
    metric_dependencies: ClassVar[tuple[str, ...]] = ("table.mcq_gold_balance",)
    success_keys: ClassVar[tuple[str, ...]] = ("tolerance", "confidence")

    def _validate(
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        found = dict(metrics["table.mcq_gold_balance"])
        success = bool(found["success"])
        return {"success": success, "result": {"observed_value": found["shares"], "details": found}}
