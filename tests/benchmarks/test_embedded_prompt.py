"""Questions that carry the authors' instruction and option list inside them (BLEnD's MCQ file).

Our own rows, written here in BLEnD's published MCQ layout: ``prompt`` holds the question, then
the authors' instruction mid-text, then the lettered options and ``Answer:``; ``choices`` holds
the options as a JSON object keyed by letter.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from cultureqa.authoring.add import draft
from cultureqa.benchmarks.load import load_benchmark
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.io import SourceError

ROOT = Path(__file__).resolve().parents[2]
INSTRUCTION = ("Without any explanation, choose only one from the given alphabet choices(e.g., A, "
               "B, C). Provide as JSON format: {\"answer_choice\":\"\"}")  # fmt: skip
ITEMS = [  # question, options A-D, gold
    ("What is the most popular fruit in Indonesia?", ["mango", "apple", "durian", "pear"], "C"),
    ("Which dish is eaten at Eid in Indonesia?", ["ketupat", "pizza", "sushi", "paella"], "A"),
    ("What is a common breakfast in Indonesia?", ["bagel", "nasi uduk", "croissant", "oats"], "B"),
    ("Which sport is played most in Indonesia?", ["cricket", "baseball", "rugby", "sepak"], "D"),
    ("What do people in Indonesia drink at breakfast?", ["tea", "milk", "beer", "cider"], "A"),
    ("Which instrument is played in gamelan?", ["bagpipe", "gong", "banjo", "harp"], "B"),
]  # fmt: skip


def _blend(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["MCQID", "ID", "country", "prompt", "choices", "answer_idx"])
        for n, (question, options, gold) in enumerate(ITEMS):
            listed = "\n".join(f"{letter}. {o}" for letter, o in zip("ABCD", options, strict=True))
            prompt = f"{question} {INSTRUCTION}\n\n{listed}\n\nAnswer:"
            choices = json.dumps(dict(zip("ABCD", options, strict=True)))
            writer.writerow([f"Ind-{n:02d}_1", f"Ind-{n:02d}", "Indonesia", prompt, choices, gold])
    return path


def test_add_keeps_only_the_question_before_the_instruction_and_options(tmp_path: Path) -> None:
    drafted = draft(ROOT, "planted", str(_blend(tmp_path / "blend_mcq.csv")), None)
    question = drafted.proposal.columns["question"]
    assert question.startswith('{{ prompt.split("Without any explanation, choose only one')
    assert any("holds the instruction 'Without any explanation" in n and "a lettered option list"
               in n for n in drafted.proposal.notes)  # fmt: skip
    items = load_benchmark(drafted.spec, rows=(drafted.sample.frame, "planted")).whole["en"]
    assert [i.question for i in items] == [q for q, _, _ in ITEMS]
    assert all(len(i.options) == 4 for i in items)


def _spec(path: Path, question: str) -> BenchmarkSpec:
    cfg: dict[str, Any] = {
        "name": "blend", "source": {"kind": "file", "path": str(path)},
        "columns": {"question": question, "options": {"from": "choices",
                                                       "transform": "letter_dict"},
                    "answer": "answer_idx"},
        "languages": {"en": {}}, "settings": ["mcq-none-en"],
    }  # fmt: skip
    return BenchmarkSpec.from_config(cfg)


def test_a_question_that_keeps_its_option_list_is_a_row_error(tmp_path: Path) -> None:
    path = _blend(tmp_path / "blend_mcq.csv")
    with pytest.raises(SourceError, match=r"blend_mcq.csv, row 1, column 'prompt': the question "
                                          r"holds a lettered option list"):  # fmt: skip
        load_benchmark(_spec(path, "prompt"))


def test_a_question_without_an_option_list_loads(tmp_path: Path) -> None:
    path = _blend(tmp_path / "blend_mcq.csv")
    template = '{{ prompt.split("\\nA. ")[0].split("Without any")[0].strip() }}'
    items = load_benchmark(_spec(path, template)).items["en"]
    assert items[0].question == ITEMS[0][0]
