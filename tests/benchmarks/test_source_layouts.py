"""Sources as published: a capture named twice, files without a header row, blank lines.

Our own rows, written here in the published shapes: one JSONL per language at
``{lang}/test.{lang}.jsonl``, a headerless CSV of question, four options and a gold letter (the
JMMLU layout), a CSV with empty separator lines, and a pattern over files of three layouts.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from cultureqa.authoring.add import draft
from cultureqa.benchmarks.load import load_benchmark
from cultureqa.benchmarks.spec import BenchmarkSpec, SpecError
from cultureqa.core.io import SourceError

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = {
    "en": [("Which island is Mount Rinjani on?", "Lombok", "Bali", "Java", "A"),
           ("Which city is known for gudeg?", "Medan", "Yogyakarta", "Padang", "B"),
           ("Where are tongkonan houses built?", "Aceh", "Papua", "Toraja", "C")],
    "id": [("Gunung Rinjani ada di pulau mana?", "Lombok", "Bali", "Jawa", "A"),
           ("Kota mana yang terkenal dengan gudeg?", "Medan", "Yogyakarta", "Padang", "B")],
}  # fmt: skip


def _spec(path: str, **over: Any) -> BenchmarkSpec:
    cfg: dict[str, Any] = {
        "name": "layouts",
        "source": {"kind": "file", "path": path, **over.pop("source", {})},
        "columns": {"question": "question", "options": ["A", "B", "C"], "answer": "answer"},
        "languages": {"en": {}, "id": {}},
        "settings": ["mcq-none-en"],
    }
    for key, value in over.items():
        cfg[key] = {**cfg.get(key, {}), **value} if isinstance(value, dict) else value
    return BenchmarkSpec.from_config(cfg)


def _jsonl_per_language(folder: Path) -> str:
    for lang, rows in QUESTIONS.items():
        path = folder / lang / f"test.{lang}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        records = [dict(zip(["question", "A", "B", "C", "answer"], r, strict=True)) for r in rows]
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    (folder / "id" / "test.en.jsonl").write_text("", encoding="utf-8")  # not a match: id ≠ en
    return str(folder / "{lang}" / "test.{lang}.jsonl")


def test_a_capture_named_twice_must_match_the_same_text(tmp_path: Path) -> None:
    pattern = _jsonl_per_language(tmp_path / "set")
    spec = _spec(pattern, columns={"language": "lang"}, settings=["mcq-none-en", "mcq-none-id"])
    loaded = load_benchmark(spec)
    assert {lang: len(items) for lang, items in loaded.whole.items()} == {"en": 3, "id": 2}


def test_add_reads_a_pattern_with_a_capture_named_twice(tmp_path: Path) -> None:
    drafted = draft(ROOT, "planted", _jsonl_per_language(tmp_path / "set"), None)
    assert drafted.proposal.columns["language"] == "lang"
    assert drafted.trial.note() == "trial load: 5 of 5 sampled rows become items"


# --- files without a header row -----------------------------------------------------------------


def _headerless(path: Path, n: int = 150) -> Path:
    """The JMMLU layout: question, four options, the gold letter; no header row."""
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        for i in range(1, n + 1):
            writer.writerow([f"Which is the {i}th tallest peak?", f"peak {i}a", f"peak {i}b",
                             f"peak {i}c", f"peak {i}d", "ABCD"[i % 4]])  # fmt: skip
    return path


def _headerless_spec(path: Path, **source: Any) -> BenchmarkSpec:
    return _spec(
        str(path),
        source=source,
        columns={"options": ["a", "b", "c", "d"]},
        languages={"en": {}},
    )


def test_header_none_reads_the_first_row_as_an_item(tmp_path: Path) -> None:
    path = _headerless(tmp_path / "jm.csv")
    names = ["question", "a", "b", "c", "d", "answer"]
    loaded = load_benchmark(_headerless_spec(path, header="none", columns=names))
    assert loaded.counts.rows_read == 150 and len(loaded.items["en"]) == 150
    first = loaded.items["en"][0]
    assert first.question == "Which is the 1th tallest peak?" and first.answer_index == 1


def test_without_header_none_the_first_question_is_no_item(tmp_path: Path) -> None:
    """What the setting is for: read with a header, the first question names the fields."""
    path = _headerless(tmp_path / "jm.csv")
    with pytest.raises(SourceError, match="missing column"):
        load_benchmark(_headerless_spec(path))


def test_a_row_of_another_width_in_a_headerless_tsv_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "jm.tsv"
    path.write_text("Q one?\tx\ty\tz\tw\tA\nQ two?\tx\ty\tz\tB\n", encoding="utf-8")
    names = ["question", "a", "b", "c", "d", "answer"]
    with pytest.raises(
        SourceError, match=r"jm.tsv: line 2 has 5 fields but source.columns names 6"
    ):
        load_benchmark(_headerless_spec(path, header="none", columns=names))


@pytest.mark.parametrize(
    ("source", "message"),
    [({"header": "none"}, "source.header: none needs source.columns"),
     ({"header": "no"}, "source.header must be 'first_row' or 'none'"),
     ({"columns": ["q", "a"]}, "set source.header: none with it"),
     ({"header": "none", "columns": ["q", "q"]}, "must be distinct non-empty names")],
)  # fmt: skip
def test_header_settings_are_checked(source: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        _spec("x.csv", source=source)


def test_header_none_on_a_jsonl_file_is_refused(tmp_path: Path) -> None:
    pattern = _jsonl_per_language(tmp_path / "set")
    spec = _spec(pattern, source={"header": "none", "columns": ["x"]}, languages={"en": {}})
    with pytest.raises(SourceError, match=r"source.header: none is for CSV and TSV files"):
        load_benchmark(spec)


def test_add_finds_a_headerless_file_and_loads_every_row(tmp_path: Path) -> None:
    drafted = draft(ROOT, "planted", str(_headerless(tmp_path / "jm.csv")), None)
    source = drafted.proposal.source
    assert source["header"] == "none"
    assert source["columns"] == ["question", "option_1", "option_2", "option_3", "option_4",
                                 "answer"]  # fmt: skip
    assert any("jm.csv has no header row (the first row holds 'Which is the 1th tallest peak?'"
               in n for n in drafted.proposal.notes)  # fmt: skip
    assert drafted.trial.note() == "trial load: 150 of 150 sampled rows become items"


def test_a_file_with_a_header_is_not_called_headerless(tmp_path: Path) -> None:
    path = tmp_path / "with_header.csv"
    path.write_text(
        "question,A,B,C,answer\n"
        + "".join(f"Question {i}?,x{i},y{i},z{i},{'ABC'[i % 3]}\n" for i in range(12)),
        encoding="utf-8",
    )
    drafted = draft(ROOT, "planted", str(path), None)
    assert "header" not in drafted.proposal.source
    assert drafted.trial.note() == "trial load: 12 of 12 sampled rows become items"


# --- blank lines ------------------------------------------------------------------------------


def test_empty_lines_are_blank_rows_counted_not_invalid(tmp_path: Path) -> None:
    path = tmp_path / "gaps.csv"
    lines = ["question,A,B,C,answer"]
    for i in range(10):
        lines.append(f"Question {i}?,x{i},y{i},z{i},{'ABC'[i % 3]}")
        if i % 3 == 2:
            lines += ["", ",,,,"]  # an empty line and a line of commas
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = _spec(str(path), languages={"en": {}}, rows={"invalid": "error",
                                                        "max_invalid_share": 0.0})  # fmt: skip
    loaded = load_benchmark(spec)
    record = loaded.counts.record()
    assert (record["rows_read"], record["rows_blank"], record["rows_loaded"]) == (16, 6, 10)
    assert record["rows_dropped"] == 0
    assert [i.question for i in loaded.items["en"]][3] == "Question 3?"


# --- a pattern over several layouts ---------------------------------------------------------


def test_a_refusal_names_each_layout_with_its_files_in_full(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    six = "question\tA\tB\tC\tanswer\tnote\n" + "Q?\tx\ty\tz\tA\tn\n" * 3
    for name in ("p_a.tsv", "p_b.tsv", "p_c.tsv", "p_d.tsv"):
        (folder / name).write_text(six, encoding="utf-8")
    (folder / "p_e.tsv").write_text("prompt\n" + "Usually x\n" * 3, encoding="utf-8")
    (folder / "p_f.tsv").write_text("x1\tx2\n" + "a\tb\n" * 3, encoding="utf-8")
    with pytest.raises(SourceError) as caught:
        draft(ROOT, "planted", str(folder / "p_{part}.tsv"), None)
    message = str(caught.value)
    assert f"4 files ('{folder}/p_a.tsv', '{folder}/p_b.tsv', '{folder}/p_c.tsv', …) have 6 " \
           "fields" in message  # fmt: skip
    assert f"1 file ('{folder}/p_e.tsv') have 1 field ('prompt')" in message
    assert f"1 file ('{folder}/p_f.tsv') have 2 fields ('x1', 'x2')" in message
