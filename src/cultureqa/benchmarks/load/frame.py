"""Items as the table dataset invariants (Great Expectations) are checked on."""

from __future__ import annotations

import json

import pandas as pd

from cultureqa.records import McqItem


def items_frame(items: list[McqItem]) -> pd.DataFrame:
    """One row per item and language.

    ``answer`` is the first-listed gold (the one position checks use); ``answers`` lists all.
    """
    rows = [
        {
            "item_id": i.id,
            "language": i.language,
            "question": i.question,
            "options": json.dumps(list(i.options), ensure_ascii=False),
            "n_options": len(i.options),
            "answer": i.answer_letter,
            "answers": i.gold_letters,
            **i.metadata,
        }
        for i in items
    ]
    return pd.DataFrame(rows)
