"""Strict source parsing: each planted violation is an error naming file, row, column and value."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cultureqa.benchmarks.load import LoadCounts, load_benchmark, parse_letter, strip_labels
from cultureqa.benchmarks.spec import BenchmarkSpec, SourceSpec, SpecError
from cultureqa.core.io import SourceError


def _spec(**columns: Any) -> BenchmarkSpec:
    cols = {"id": "id", "question": "q", "options": "opts", "answer": "a", **columns}
    return BenchmarkSpec.from_config(
        {
            "name": "t",
            "source": {"kind": "file", "path": "x.jsonl"},
            "columns": cols,
            "languages": {"en": {}},
            "settings": ["mcq-none-en"],
        }
    )


def _rows(tmp_path: Path, rows: list[dict[str, Any]], spec: BenchmarkSpec | None = None,
          counts: LoadCounts | None = None) -> list[Any]:  # fmt: skip
    path = tmp_path / "src.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    loaded = load_benchmark(replace(spec or _spec(), source=SourceSpec("file", str(path))))
    if counts is not None:
        counts.__dict__.update(loaded.counts.__dict__)
    return loaded.items["en"]


def _row(i: int = 1, opts: Any = None, a: Any = "A", **extra: Any) -> dict[str, Any]:
    return {"id": f"r{i}", "q": f"Question {i}?", "opts": opts or ["x", "y", "z"], "a": a, **extra}


def test_initials_are_not_labels(tmp_path: Path) -> None:
    names = ["G. A. Siwabessy", "A. H. Nasution", "J. P. Coen"]
    counts = LoadCounts()
    [item] = _rows(tmp_path, [_row(opts=names, a="B")], counts=counts)
    assert item.options == tuple(names) and item.answer_index == 1
    assert counts.labels_stripped == 0


def test_consecutive_labels_are_stripped_and_counted(tmp_path: Path) -> None:
    counts = LoadCounts()
    labelled = ["A. G. A. Siwabessy", "B. A. H. Nasution", "C. J. P. Coen"]
    [item] = _rows(tmp_path, [_row(opts=labelled)], counts=counts)
    assert item.options == ("G. A. Siwabessy", "A. H. Nasution", "J. P. Coen")
    assert counts.labels_stripped == 1 and counts.examples["labels_stripped"] == ["r1"]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["A. x", "B. y"], ["x", "y"]),
        (["(a) x", "(b) y", "(c) z"], ["x", "y", "z"]),
        (["A. x", "C. y"], None),  # not consecutive
        (["B. x", "C. y"], None),  # does not start at A
        (["A. x", "y"], None),  # one option unlabelled
    ],
)
def test_strip_labels_rule(options: list[str], expected: list[str] | None) -> None:
    assert strip_labels(options) == expected


@pytest.mark.parametrize(
    ("raw", "letter"),
    [("B", "B"), ("b", "B"), ("(B)", "B"), ("B.", "B"), ("B)", "B"), (" c ", "C"),
     ("Banana", None), ("B C", None), ("", None), ("1", None), ("(B", None)],
)  # fmt: skip
def test_parse_letter(raw: str, letter: str | None) -> None:
    assert parse_letter(raw) == letter


@pytest.mark.parametrize(
    ("row", "column", "message"),
    [
        (_row(2, a="Banana"), "a", "answer 'Banana' is not a letter"),
        (_row(2, a="D"), "a", "answer 'D' is not among the 3 options of 'opts'"),
        (
            _row(2, opts=["same  one", " same one ", "other"]),
            "opts",
            "options A and B are the same",
        ),
        (_row(2, opts=["x", "", "z"]), "opts", "option(s) ['B'] are empty"),
        (_row(2, opts=["x", None, "z"]), "opts", "option(s) ['B'] are empty"),
        (_row(2, opts=["x"]), "opts", "need at least 2 options"),
    ],
    ids=["banana", "out-of-range", "duplicate", "empty", "null", "single"],
)
def test_planted_violations_name_file_row_column_value(
    tmp_path: Path, row: dict[str, Any], column: str, message: str
) -> None:
    with pytest.raises(SourceError) as info:
        _rows(tmp_path, [_row(1), row])
    text = str(info.value)
    assert f"src.jsonl, row 2, column '{column}'" in text
    assert message in text


def test_options_that_differ_only_in_case_are_kept_and_counted(tmp_path: Path) -> None:
    """Genotypes GG/Gg/gg are three answers; dropping the row as a repeat would lose it."""
    counts = LoadCounts()
    rows = [_row(1, opts=["GG", "Gg", "gg"], a="C"), _row(2, opts=["E=F/Q", "E=F/q", "F=EQ"]),
            _row(3)]  # fmt: skip
    items = _rows(tmp_path, rows, counts=counts)
    assert [i.options for i in items[:2]] == [("GG", "Gg", "gg"), ("E=F/Q", "E=F/q", "F=EQ")]
    assert counts.case_only_options == 2 and counts.examples["case_only_options"] == ["r1", "r2"]
    assert counts.record()["options_differing_only_in_case"] == 2 and not counts.dropped


def test_index_and_text_answers_are_strict(tmp_path: Path) -> None:
    [item] = _rows(tmp_path, [_row(a=2)], _spec(answer_format="index"))
    assert item.answer_index == 2
    with pytest.raises(SourceError, match="'two' is not a 0-based option index"):
        _rows(tmp_path, [_row(a="two")], _spec(answer_format="index"))
    with pytest.raises(SourceError, match="'w' is not the text of any option"):
        _rows(tmp_path, [_row(a="w")], _spec(answer_format="text"))


def test_declared_bool_and_enum_metadata_are_checked(tmp_path: Path) -> None:
    spec = _spec(metadata=["flag", "topic"], metadata_types={"flag": "bool", "topic": ["a", "b"]})
    [item] = _rows(tmp_path, [_row(flag="True", topic="a")], spec)
    assert item.metadata == {"flag": True, "topic": "a"}
    with pytest.raises(SourceError, match=r"row 2, column 'flag': expected True/False, got ''"):
        _rows(tmp_path, [_row(flag=False, topic="a"), _row(2, flag="", topic="a")], spec)
    with pytest.raises(SourceError, match=r"column 'topic': 'c' is not one of the declared"):
        _rows(tmp_path, [_row(flag=True, topic="c")], spec)


def test_metadata_types_must_name_metadata() -> None:
    with pytest.raises(SpecError, match="metadata_types names"):
        _spec(metadata=["x"], metadata_types={"y": "bool"})


def test_unknown_config_key_is_named() -> None:
    with pytest.raises(SpecError, match=r"unknown key\(s\) \['columns.anwser'\]"):
        _spec(anwser="a")
