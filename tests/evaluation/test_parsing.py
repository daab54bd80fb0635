"""Letter extraction from realistic replies; unparsable replies are None (parse errors)."""

from __future__ import annotations

import pandas as pd
import pytest

from cultureqa.evaluation.parsing import (
    HEDGED,
    NEGATED,
    NO_LETTER,
    SEVERAL,
    parse_cause,
    parse_letter,
    read_reply,
)
from cultureqa.evaluation.record import error_causes

CASES = [
    ("B", "B"),
    ("B.", "B"),
    ("(C)", "C"),
    ("**A**", "A"),
    ("C. kain ulos", "C"),
    ('{"answer": "B"}', "B"),
    ('```json\n{"answer": "C"}\n```', "C"),
    ('{"selection": "A", "comparison": {"foreign": "x", "china": "y"}}', "A"),
    ("Answer: B", "B"),
    ("The answer is C.", "C"),
    ("Jawaban: A", "A"),
    ("Jawabannya adalah B", "B"),
    ("Let me think. Option A is wrong and so is B. Final answer: C", "C"),
    ("I would pick (B) because the ulos is given.", "B"),
    ("A good choice here is B", "B"),
    ("", None),
    ("I don't know", None),
    ("D", None),
    ("Either A or B could be right", None),
    ("Sebagai model bahasa, saya tidak bisa memastikan", None),
]


@pytest.mark.parametrize(("reply", "expected"), CASES)
def test_parse_letter(reply: str, expected: str | None) -> None:
    assert parse_letter(reply, 3) == expected


def test_more_options_widen_the_valid_letters() -> None:
    assert parse_letter("F", 6) == "F"
    assert parse_letter("F", 3) is None


# --- replies that name an option without committing to it -----------------------------------

DOUBTS = [
    ("ANSWER: A or B", SEVERAL),
    ("Answer: A/B", SEVERAL),
    ("The answer is A and C.", SEVERAL),
    ("Jawaban: B atau C", SEVERAL),
    ("A or B", SEVERAL),
    ("either A or B", SEVERAL),
    ('{"answer": "A, B"}', SEVERAL),
    ("The answer is not A.", NEGATED),
    ("The answer isn't A", NEGATED),
    ("Not (B).", NEGATED),
    ("Jawabannya bukan A", NEGATED),
    ("Maybe A", HEDGED),
    ("The answer is probably C.", HEDGED),
    ("A, maybe", HEDGED),
    ("B. Not sure, though.", HEDGED),
    ("B. Rinjani could be climbed from Sembalun.", None),  # a hedge about something else
    ("I'm not sure", NO_LETTER),
]


@pytest.mark.parametrize(("reply", "cause"), DOUBTS)
def test_a_reply_that_does_not_commit_is_unparsable_by_cause(reply: str, cause: str | None) -> None:
    reading = read_reply(reply, 4)
    if cause is None:
        assert reading.letter == "B" and reading.cause is None
    else:
        assert reading.letter is None and reading.cause == cause
        assert parse_cause(reading.error) == cause


@pytest.mark.parametrize(
    ("reply", "letter"),
    [("B. Rendang is from Padang, unlike A and C", "B"),
     ("It is not B. The answer is A.", "A"),
     ("B and C are wrong; the answer is A", "A"),
     ("Final answer: (D)", "D"),
     ("I think the answer is C.", "C")],
)  # fmt: skip
def test_other_options_mentioned_beside_a_committed_answer_are_no_doubt(
    reply: str, letter: str
) -> None:
    assert read_reply(reply, 4).letter == letter


def test_unparsable_items_are_counted_by_cause_in_the_run_record() -> None:
    replies = ["ANSWER: A or B", "The answer is not A.", "A or C", "maybe B", "no idea", "C"]
    rows = []
    for text in replies:
        reading = read_reply(text, 4)
        status = "ok" if reading.letter else "parse_error"
        rows.append({"status": status, "raw": text, "error": reading.error})
    causes = error_causes(pd.DataFrame(rows))
    assert causes["unparsable"]["items"] == 5
    assert causes["unparsable"]["by_cause"] == {
        HEDGED: 1, NEGATED: 1, NO_LETTER: 1, SEVERAL: 2,
    }  # fmt: skip
