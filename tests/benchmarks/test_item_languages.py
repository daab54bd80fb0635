"""A benchmark with one file per language: each item's language from the path, never mislabelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cultureqa.benchmarks.checks import check_slices, check_templates
from cultureqa.benchmarks.describe import language_distribution
from cultureqa.benchmarks.load import items_frame, load_benchmark
from cultureqa.benchmarks.spec import BenchmarkSpec, SpecError
from cultureqa.core.io import SourceError

ROOT = Path(__file__).resolve().parents[2]
FILES = {
    "indonesian": [("Makanan khas Padang adalah", "rendang", "gudeg", "pempek", "A")] * 3,
    "sundanese": [("Kadaharan has Bandung nyaéta", "batagor", "rendang", "papeda", "A")] * 2,
    "english": [("A dish from Palembang is", "gudeg", "pempek", "rendang", "B")] * 4,
}


def _write(folder: Path, files: dict[str, list[tuple[str, ...]]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in files.items():
        lines = ["question\tA\tB\tC\tanswer"]
        lines += ["\t".join((f"{q} ({name} {n})", *rest)) for n, (q, *rest) in enumerate(rows)]
        (folder / f"{name}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _spec(**over: Any) -> BenchmarkSpec:
    cfg: dict[str, Any] = {
        "name": "by_language",
        "source": {"kind": "file", "path": "src/{lang}.tsv"},
        "columns": {
            "id": None,
            "question": "question",
            "options": ["A", "B", "C"],
            "answer": "answer",
            "language": {
                "from": "lang",
                "values": {"indonesian": "id", "sundanese": "su", "english": "en"},
            },
        },
        "languages": {"id": {}, "su": {}, "en": {}},
        "prompt_fallback": {"su": "id"},
        "settings": ["mcq-none-id", "mcq-none-su", "mcq-none-en"],
        "slices": [["language"]],
        **over,
    }
    return BenchmarkSpec.from_config(cfg)


def test_each_file_gives_its_items_their_language(tmp_path: Path) -> None:
    _write(tmp_path / "src", FILES)
    loaded = load_benchmark(_spec(), tmp_path)
    assert {lang: len(items) for lang, items in loaded.items.items()} == {"en": 4, "id": 3, "su": 2}
    for lang, items in loaded.items.items():
        assert all(i.language == lang for i in items)
    assert all("sundanese" in i.question for i in loaded.items["su"])
    assert loaded.counts.record()["items_by_language"] == {"en": 4, "id": 3, "su": 2}
    frame = items_frame([i for batch in loaded.items.values() for i in batch])
    table = language_distribution(frame)
    assert dict(zip(table["language"], table["items"], strict=True)) == {"en": 4, "id": 3, "su": 2}
    check_slices(_spec())  # "language" is a slice every prediction row can be cut by


def test_the_prompt_language_follows_the_declared_fallback() -> None:
    templates = check_templates(_spec(), ROOT, "zero_shot")
    assert templates["mcq-none-su"].path.name == "zero_shot.id.txt"
    assert templates["mcq-none-en"].path.name == "zero_shot.en.txt"


def test_a_file_of_an_undeclared_language_is_an_error_naming_the_row(tmp_path: Path) -> None:
    _write(tmp_path / "src", {**FILES, "javanese": [("Panganan khas", "a", "b", "c", "A")]})
    with pytest.raises(SourceError, match=r"javanese.tsv, row 1, column 'lang': language "
                       r"'javanese' is not a declared language"):  # fmt: skip
        load_benchmark(_spec(), tmp_path)
    loaded = load_benchmark(_spec(rows={"invalid": "drop", "max_invalid_share": 0.2}), tmp_path)
    assert loaded.counts.dropped_by_reason() == {"unknown_language": 1}


def test_a_language_without_a_setting_is_a_config_error() -> None:
    with pytest.raises(SpecError, match=r"no setting evaluates \['su'\]"):
        _spec(settings=["mcq-none-id", "mcq-none-en"])


def test_a_column_or_template_can_carry_the_language(tmp_path: Path) -> None:
    rows = "question\tA\tB\tanswer\tlocale\nApa?\tx\ty\tA\tid-ID\nWhat?\tx\ty\tB\ten-US\n"
    (tmp_path / "one.tsv").write_text(rows, encoding="utf-8")
    spec = _spec(
        source={"kind": "file", "path": "one.tsv"},
        columns={"id": None, "question": "question", "options": ["A", "B"], "answer": "answer",
                 "language": "{{ locale.split('-')[0] }}"},
        languages={"id": {}, "en": {}},
        settings=["mcq-none-id", "mcq-none-en"],
        prompt_fallback={},
    )  # fmt: skip
    loaded = load_benchmark(spec, tmp_path)
    assert [i.question for i in loaded.items["id"]] == ["Apa?"]
    assert [i.question for i in loaded.items["en"]] == ["What?"]
