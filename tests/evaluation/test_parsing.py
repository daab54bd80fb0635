"""Letter extraction from realistic replies; unparsable replies are None (parse errors)."""

from __future__ import annotations

import pytest

from cultureqa.evaluation.parsing import parse_letter

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
