"""Reading province + answer from realistic replies, the prompt templates, and human sheets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.core.io import SourceError
from cultureqa.evaluation.prompts import TemplateError
from cultureqa.mocqa.answers import (
    PROMPT_STYLES,
    load_template,
    parse_reply,
    read_answer_sheets,
    score_human_sheets,
)
from cultureqa.mocqa.evaluate import render

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = ("kain ulos", "kain songket", "selendang batik")

COT_EN = """Step 1: The clue mentions the largest volcanic lake in Southeast Asia, Lake Toba.
Step 2: Lake Toba lies in North Sumatra, home of the Batak people.
Step 3: At Batak weddings the bride's family gives ulos cloth, so option A.
{"province": "North Sumatra", "answer": "A"}"""

COT_ID = """Petunjuknya menyebut Danau Toba, jadi provinsinya adalah Sumatera Utara.
Dalam pernikahan adat Batak, keluarga memberikan ulos.
```json
{"province": "Sumatera Utara", "answer": "A"}
```"""

# (reply, canonical province, answer letter, parse errors)
CASES = [
    ('{"province": "North Sumatra", "answer": "A"}', "North Sumatra", "A", ()),
    ('{"province": "Sumut", "answer": "B"}', "North Sumatra", "B", ()),
    ('{"province": "N. Sumatra", "answer": "C"}', "North Sumatra", "C", ()),
    ('  {"Province": "Sumatera Utara", "Answer": "b"}  ', "North Sumatra", "B", ()),
    ('{"provinsi": "Jawa Barat", "jawaban": "C"}', "West Java", "C", ()),
    ('```json\n{"province": "Bali", "answer": "B"}\n```', "Bali", "B", ()),
    (
        'Here is my answer:\n```\n{"province": "NTT", "answer": "(C)"}\n```',
        "East Nusa Tenggara",
        "C",
        (),
    ),
    (COT_EN, "North Sumatra", "A", ()),
    (COT_ID, "North Sumatra", "A", ()),
    ('{"province": "South Borneo", "answer": "kain songket"}', "South Kalimantan", "B", ()),
    ('{"province": "Kalsel", "answer": "B. kain songket"}', "South Kalimantan", "B", ()),
    ('{"province": "Aceh", "answer": "A"', "Aceh", "A", ()),  # truncated by max_tokens
    ("Provinsi: Sumatera Utara\nJawaban: B", "North Sumatra", "B", ()),
    ("Province: Jatim. Answer: C", "East Java", "C", ()),
    ("The province is West Sumatra and the answer is B.", "West Sumatra", "B", ()),
    ("Provinsinya adalah Sulawesi Selatan. Jawabannya adalah A", "South Sulawesi", "A", ()),
    ("The province is known for ulos.\nProvince: Sumut\nAnswer: (B)", "North Sumatra", "B", ()),
    ("Papua, B", "Papua", "B", ()),
    ("The answer is B", None, "B", ("province",)),
    ("Jawaban: B", None, "B", ("province",)),
    ('{"province": "Jakarta", "answer": "A"}', None, "A", ()),  # an answer, just a wrong one
    ('{"province": "Bali", "answer": "D"}', "Bali", None, ("answer",)),
    ("It could be Bali or Aceh; I am not sure.", None, None, ("province", "answer")),
    ("I cannot answer this question.", None, None, ("province", "answer")),
    ("", None, None, ("province", "answer")),
    ('{"foo": 1}', None, None, ("province", "answer")),
]


@pytest.mark.parametrize(("reply", "province", "answer", "errors"), CASES)
def test_replies_are_read_strictly_then_leniently(
    reply: str, province: str | None, answer: str | None, errors: tuple[str, ...]
) -> None:
    parsed = parse_reply(reply, OPTIONS)
    assert (parsed.province, parsed.answer, parsed.parse_errors) == (province, answer, errors)


def test_unknown_province_text_is_kept_raw_but_not_a_parse_error() -> None:
    parsed = parse_reply('{"province": "Jakarta", "answer": "A"}', OPTIONS)
    assert parsed.province_raw == "Jakarta" and parsed.province is None


@pytest.mark.parametrize("style", PROMPT_STYLES)
@pytest.mark.parametrize("language", ["en", "id"])
def test_shipped_templates_render_and_ask_for_json(style: str, language: str) -> None:
    template = load_template(ROOT, style, language)
    text = render(template, "[q] Which cloth?", OPTIONS)
    assert "[q] Which cloth?" in text and "A. kain ulos\nB. kain songket" in text
    assert '{"province": ' in text and "A, B, C" in text
    assert len(template.sha256) == 16
    reasoning = "step by step" in text or "langkah demi langkah" in text
    assert reasoning == (style == "cot")


def test_templates_are_validated(tmp_path: Path) -> None:
    folder = tmp_path / "prompts" / "mocqa" / "evaluate"
    folder.mkdir(parents=True)
    (folder / "zero_shot.en.txt").write_text("Question: {question}\nReply as JSON.")
    (folder / "cot.en.txt").write_text("{question}\n{options}\n{{raw}} {province}")
    with pytest.raises(TemplateError, match="required"):
        load_template(tmp_path, "zero_shot", "en")
    with pytest.raises(TemplateError, match="allowed"):
        load_template(tmp_path, "cot", "en")
    with pytest.raises(TemplateError, match="no ID-MoCQA template"):
        load_template(tmp_path, "cot", "id")  # no silent fallback to English
    with pytest.raises(TemplateError, match="styles"):
        load_template(ROOT, "few_shot", "en")


def test_human_sheets_become_prediction_rows(
    tmp_path: Path, make_dataset: Callable[..., pd.DataFrame]
) -> None:
    dataset = make_dataset(1)
    first, second = dataset.iloc[0], dataset.iloc[1]
    sheet = tmp_path / "ann1.csv"
    pd.DataFrame(
        {
            "annotator": ["a1", "a1", "a1"],
            "item_id": [first["item_id"], second["item_id"], dataset.iloc[2]["item_id"]],
            "province": ["Nanggroe Aceh Darussalam", "Bali", ""],
            "answer": [first["answer"], "", ""],
        }
    ).to_csv(sheet, index=False)
    rows = score_human_sheets(read_answer_sheets([sheet]), dataset)
    assert len(rows) == 2  # the blank third row is unanswered, not wrong
    assert rows["model"].tolist() == ["human", "human"]
    assert rows["province_correct"].tolist() == [True, False]
    assert rows["correct"].tolist() == [True, False]
    assert rows["status"].tolist() == ["ok", "parse_error"]
    assert rows["parse_error"].tolist() == ["", "answer"]

    bad = tmp_path / "bad.csv"
    pd.DataFrame(
        {"annotator": ["a"], "item_id": ["nope"], "province": ["Bali"], "answer": ["A"]}
    ).to_csv(bad, index=False)
    with pytest.raises(SourceError, match="row 1, column 'item_id'"):
        score_human_sheets(read_answer_sheets([bad]), dataset)
    (tmp_path / "short.csv").write_text("annotator,item_id\na,b\n")
    with pytest.raises(SourceError, match="lacks column"):
        read_answer_sheets([tmp_path / "short.csv"])
