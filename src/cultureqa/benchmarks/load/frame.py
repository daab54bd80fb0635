"""Items as the table dataset invariants (Great Expectations) are checked on."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from cultureqa.core.records import McqItem


def items_frame(items: list[McqItem]) -> pd.DataFrame:
    """One row per item and language.

    ``answer`` is the first-listed gold (the one position checks use); ``answers`` lists all.
    """
    columns: dict[str, list[Any]] = {
        "item_id": [i.id for i in items],
        "language": [i.language for i in items],
        "question": [i.question for i in items],
        "options": [json.dumps(list(i.options), ensure_ascii=False) for i in items],
        "n_options": [len(i.options) for i in items],
        "answer": [i.answer_letter for i in items],
        "answers": [i.gold_letters for i in items],
    }
    names = list(dict.fromkeys(k for i in items for k in i.metadata))
    for name in names:
        columns[name] = [i.metadata.get(name) for i in items]
    return pd.DataFrame(columns)
