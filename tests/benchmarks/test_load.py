"""Bad source files give one clear error naming file, row and column."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cultureqa.benchmarks.load import load_benchmark
from cultureqa.benchmarks.spec import BenchmarkSpec, SourceSpec, SpecError
from cultureqa.core.io import SourceError, read_table

HEADER = "id,province,topic,is_province_specific,context,options,answer\n"
GOOD = (
    "a1,Bali,Death,True,Upacara ini disebut,\"['A. ngaben', 'B. rambu solo', 'C. saur matua']\",A\n"
)


def _spec(**over: object) -> BenchmarkSpec:
    cfg = {
        "name": "t",
        "source": {"kind": "file", "path": "x.csv"},
        "columns": {
            "id": "id",
            "question": "context",
            "options": "options",
            "answer": "answer",
            "metadata": ["province", "topic", "is_province_specific"],
        },
        "languages": {"id": {}},
        "settings": ["mcq-none-id"],
    }
    cfg.update(over)
    return BenchmarkSpec.from_config(cfg)


def _items(path: Path) -> list[Any]:
    return load_benchmark(replace(_spec(), source=SourceSpec("file", str(path)))).items["id"]


def _load(tmp_path: Path, body: str, name: str = "src.csv") -> None:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    _items(path)


def test_good_row_loads(tmp_path: Path) -> None:
    path = tmp_path / "ok.csv"
    path.write_text(HEADER + GOOD)
    [item] = _items(path)
    assert item.options == ("ngaben", "rambu solo", "saur matua")
    assert item.answer_index == 0 and item.metadata["is_province_specific"] is True


@pytest.mark.parametrize(
    ("body", "row", "column", "message"),
    [
        (GOOD + "a2,Bali,Death,True,Q,\"['A. x', 'B. y'\",A\n", 2, "options", "not a list"),
        (GOOD + "a2,Bali,Death,True,Q,\"['A. x', 'B. y', 'C. z']\",D\n", 2, "answer", "not among"),
        (GOOD + GOOD, 2, "id", "duplicate id 'a1'"),
        (GOOD + "a3,Bali,Death,True,,\"['A. x', 'B. y']\",A\n", 2, "context", "empty value"),
        (GOOD + "a4,Bali,Death,True,Q,\"['A. x']\",A\n", 2, "options", "at least 2"),
    ],
)
def test_row_errors_name_file_row_column(
    tmp_path: Path, body: str, row: int, column: str, message: str
) -> None:
    with pytest.raises(SourceError) as info:
        _load(tmp_path, HEADER + body)
    text = str(info.value)
    assert "src.csv" in text and f"row {row}" in text and f"column '{column}'" in text
    assert message in text


def test_wrong_columns(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"missing column\(s\) \['answer'\]"):
        _load(tmp_path, "id,province,topic,is_province_specific,context,options\na,b,c,d,e,f\n")


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="empty"):
        _load(tmp_path, "")


def test_non_utf8_bytes_name_the_row(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(
        (HEADER + GOOD).encode() + "a2,Bali,Death,True,Caf\xe9,x,A\n".encode("latin-1")
    )
    with pytest.raises(SourceError, match=r"latin1.csv, row 2, column 'context': not valid UTF-8"):
        read_table(path)


def test_bad_spec_names_benchmark_and_key() -> None:
    with pytest.raises(SpecError, match=r"benchmark 't'.*answer_format"):
        _spec(
            columns={
                "id": "i",
                "question": "q",
                "options": "o",
                "answer": "a",
                "answer_format": "roman",
            }
        )
    with pytest.raises(SpecError, match="setting 'mcq-none-en' uses undeclared language"):
        _spec(settings=["mcq-none-en"])
