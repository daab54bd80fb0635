"""A stored benchmark load is the source's load, keyed so that no other load can read it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.benchmarks.stored_load import StoredLoad, entry_path, load_key, read_stored, store
from cultureqa.core.records import McqItem
from cultureqa.evaluation.task import load_source, stored_or_loaded

SPEC = {
    "name": "tiny",
    "source": {"kind": "file", "path": "data/tiny.jsonl"},
    "columns": {
        "id": "id",
        "question": "question",
        "options": "options",
        "answer": "answer",
        "answer_format": "letter",
        "metadata": ["topic"],
    },
    "languages": {"en": {}},
    "settings": ["mcq-none-en"],
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CULTUREQA_CACHE_DIR", str(tmp_path / "cache"))
    rows = [{"id": f"q{i}", "question": f"Question {i}?", "options": ["a", "b", "c"],
             "answer": "ABC"[i % 3], "topic": f"t{i % 2}"} for i in range(6)]  # fmt: skip
    (tmp_path / "data").mkdir()
    (tmp_path / "data/tiny.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_the_stored_load_equals_the_sources(project: Path) -> None:
    spec = BenchmarkSpec.from_config(SPEC)
    first = stored_or_loaded(spec, project)  # from the source, then stored
    key = load_key(spec, project)
    assert key is not None and entry_path(key).is_file()
    again = read_stored(key)
    fresh = load_source(spec, project)
    assert again == first
    assert again.items == fresh.items and again.origin == fresh.origin
    assert again.rows == fresh.counts.record()


def test_a_changed_source_byte_or_declaration_changes_the_key(project: Path) -> None:
    spec = BenchmarkSpec.from_config(SPEC)
    stored_or_loaded(spec, project)
    key = load_key(spec, project)
    source = project / "data/tiny.jsonl"
    source.write_text(source.read_text().replace("Question 3?", "Question 3!"))
    changed = load_key(spec, project)
    assert changed != key and read_stored(str(changed)) is None
    assert stored_or_loaded(spec, project).items["en"][3].question == "Question 3!"
    other = BenchmarkSpec.from_config({**SPEC, "settings": ["mcq-country-en"]})
    assert load_key(other, project) not in (key, changed)


def test_the_composed_digest_is_no_part_of_the_key(project: Path) -> None:
    """``digest`` hashes the declaration for dvc.yaml; the key already covers the declaration."""
    from cultureqa.core.params_digest import digest

    composed = {**SPEC, "digest": digest(SPEC)}
    spec = BenchmarkSpec.from_params({"benchmarks": {"tiny": composed}}, "tiny")
    assert spec == BenchmarkSpec.from_config(SPEC)
    assert load_key(spec, project) == load_key(BenchmarkSpec.from_config(SPEC), project)


def test_a_value_json_would_change_is_never_stored(project: Path) -> None:
    item = McqItem("q", "Q?", ("a", "b"), 0, "en", {"span": (1, 2)})  # a tuple reads back a list
    why = store("k1", StoredLoad({"en": [item]}, "x", {}))
    assert why is not None and "types" in why and not entry_path("k1").exists()
    odd = McqItem("q", "Q?", ("a", "b"), 0, "en", {"when": object()})
    why = store("k2", StoredLoad({"en": [odd]}, "x", {}))
    assert why is not None and "JSON" in why and not entry_path("k2").exists()
    kept = McqItem("q", "Q?", ("a", "b"), 0, "en", {"flag": True, "n": 1, "x": 1.5, "s": None})
    assert store("k3", StoredLoad({"en": [kept]}, "x", {"rows_read": 1})) is None
    assert read_stored("k3") == StoredLoad({"en": [kept]}, "x", {"rows_read": 1})


def test_an_unreadable_entry_is_named_and_the_source_read(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = BenchmarkSpec.from_config(SPEC)
    key = load_key(spec, project)
    assert key is not None
    entry_path(key).parent.mkdir(parents=True)
    entry_path(key).write_text("{not json")
    assert read_stored(key) is None
    assert "unreadable" in caplog.text
    assert len(stored_or_loaded(spec, project).items["en"]) == 6
