"""A skewed published set made evaluable: seeded option shuffle, repeated items dropped, and a
passing gold check that still shows a real skew (a warning, not a failure)."""

from __future__ import annotations

import json
import runpy
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from cultureqa.benchmarks.checks import check_slices
from cultureqa.benchmarks.load import load_benchmark
from cultureqa.benchmarks.spec import BenchmarkSpec, SpecError
from cultureqa.core.config import run_stage
from cultureqa.core.params_digest import digest
from cultureqa.runs.tracking import source_metrics

ROOT = Path(__file__).resolve().parents[2]
SHUFFLED = {"from": ["o1", "o2"], "shuffle": {"seed": 7}}
BENCH: dict[str, Any] = {
    "name": "cloze",
    "source": {"kind": "file", "path": "data/sources/cloze/items.jsonl"},
    "columns": {"id": "qid", "question": "q", "options": ["o1", "o2"], "answer": "a"},
    "languages": {"id": {}},
    "settings": ["mcq-none-id"],
    "expectations": "expectations/generic_mcq_items.json",
}


def _validate() -> Callable[[list[str]], int]:
    main = runpy.run_path(str(ROOT / "stages" / "validate.py"), run_name="stage")["main"]
    return lambda argv: run_stage(lambda: main(argv))  # type: ignore[no-any-return]


def _workspace(path: Path, rows: list[dict[str, Any]], **columns: Any) -> Path:
    for folder in ("prompts", "expectations"):
        shutil.copytree(ROOT / folder, path / folder)
    shutil.copy(ROOT / "dvc.yaml", path / "dvc.yaml")
    source = path / "data/sources/cloze/items.jsonl"
    source.parent.mkdir(parents=True)
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    bench = {**BENCH, "columns": {**BENCH["columns"], **columns}}
    bench["digest"] = digest(bench)  # as composing conf/ writes it
    params = {"benchmarks": {"cloze": bench}, "prompt": {"style": "zero_shot"}}
    OmegaConf.save(OmegaConf.create(params), path / "params.yaml")
    return path


def _cloze(n: int) -> list[dict[str, Any]]:
    """IndoCloze-like: a story and two endings, the right one always first."""
    return [
        {"qid": f"c{i}", "q": f"Cerita {i}: Budi pergi ke pasar.", "o1": f"Ia membeli sayur {i}.",
         "o2": f"Ia terbang ke bulan {i}.", "a": "A"}
        for i in range(n)
    ]  # fmt: skip


def _spec(_root: Path, **columns: Any) -> BenchmarkSpec:
    return BenchmarkSpec.from_config({**BENCH, "columns": {**BENCH["columns"], **columns}})


def test_all_golds_at_a_fail_and_pass_once_shuffled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(_workspace(tmp_path / "raw", _cloze(300)))
    assert _validate()(["--benchmark", "cloze"]) == 1
    assert "gold answers: A 300 of 300 (100%)" in capsys.readouterr().err
    monkeypatch.chdir(_workspace(tmp_path / "shuffled", _cloze(300), options=SHUFFLED))
    assert _validate()(["--benchmark", "cloze"]) == 0
    out = capsys.readouterr().out
    assert "ok [source] gold positions over 300 items: A " in out
    summary = json.loads(Path("metrics/validate/cloze.json").read_text())
    assert summary["load"]["options_shuffled"] == 300
    assert summary["gold_balance"]["source"]["success"] is True


def test_the_shuffle_is_recorded_stable_and_keeps_the_source_position(tmp_path: Path) -> None:
    root = _workspace(tmp_path, _cloze(200), options=SHUFFLED)
    spec = _spec(root, options=SHUFFLED)
    first = load_benchmark(spec, root).items["id"]
    again = load_benchmark(spec, root).items["id"]
    assert [i.options for i in first] == [i.options for i in again]  # same prompt every run
    at_a = Counter(i.answer_letter for i in first)["A"]
    assert 70 < at_a < 130  # a fair coin per item, not 200 of 200
    for item in first:
        order = item.metadata["options_order"]
        assert item.metadata["gold_source_position"] == "A"
        assert item.options[item.answer_index].startswith("Ia membeli")  # gold re-pointed
        assert order[item.answer_index] == "A"
    sliced = {**BENCH, "columns": {**BENCH["columns"], "options": SHUFFLED},
              "slices": [["gold_source_position"]]}  # fmt: skip
    check_slices(BenchmarkSpec.from_config(sliced))  # the source position is a slice
    with pytest.raises(SpecError, match="which are not metadata"):
        check_slices(BenchmarkSpec.from_config({**BENCH, "slices": [["gold_source_position"]]}))


def test_a_seed_is_required_and_typed() -> None:
    with pytest.raises(SpecError, match=r"options\.shuffle\.seed must be an integer"):
        _spec(Path("."), options={"from": ["o1", "o2"], "shuffle": {"seed": "x"}})
    with pytest.raises(SpecError, match=r"options\.shuffle must be \{seed"):
        _spec(Path("."), options={"from": ["o1", "o2"], "shuffle": True})


def test_repeated_items_are_dropped_under_the_row_policy(tmp_path: Path) -> None:
    rows = _cloze(40)
    rows[5] = {**rows[3], "qid": "again-3"}
    rows[9] = {**rows[3], "qid": "again-3b", "o1": rows[3]["o2"], "o2": rows[3]["o1"], "a": "B"}
    root = _workspace(tmp_path, rows)
    spec = BenchmarkSpec.from_config({**BENCH, "rows": {"duplicates": "drop"}})
    loaded = load_benchmark(spec, root)
    assert loaded.counts.dropped_by_reason() == {"duplicate_item": 2}
    assert [d.item_id for d in loaded.counts.dropped] == ["again-3", "again-3b"]
    assert "repeats c3" in loaded.counts.dropped[0].message
    assert len(loaded.items["id"]) == 38 and loaded.counts.balanced()
    kept = load_benchmark(BenchmarkSpec.from_config(BENCH), root)  # default: kept, suite reports
    assert len(kept.items["id"]) == 40


def test_a_repeat_is_still_found_once_its_copies_are_shuffled_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """IndoCloze has one story twice under two ids; the shuffle orders the copies differently."""
    rows = _cloze(300)
    rows += [{**rows[n], "qid": f"again-{n}"} for n in range(10)]
    root = _workspace(tmp_path, rows, options=SHUFFLED)
    loaded = load_benchmark(_spec(root, options=SHUFFLED), root).items["id"]
    shown = {i.id: i.options for i in loaded}
    assert any(shown[f"again-{n}"] != shown[f"c{n}"] for n in range(10))  # orders differ
    monkeypatch.chdir(root)
    assert _validate()(["--benchmark", "cloze"]) == 1
    err = capsys.readouterr().err
    assert "expect_questions_to_be_unique: 10 items repeat an earlier item" in err


def test_a_passing_skew_is_a_warning_in_the_check_output_and_mlflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    golds = "A" * 280 + "B" * 160 + "C" * 160  # 47 % at A of 3 options: bound 0.073 < 0.10
    rows = [{"qid": f"s{n}", "q": f"Q {n}?", "o1": f"x{n}", "o2": f"y{n}", "o3": f"z{n}", "a": g}
            for n, g in enumerate(golds)]  # fmt: skip
    monkeypatch.chdir(_workspace(tmp_path, rows, options=["o1", "o2", "o3"]))
    assert _validate()(["--benchmark", "cloze"]) == 0
    out = capsys.readouterr().out
    warning = [line for line in out.splitlines() if line.startswith("WARNING [source]")]
    assert len(warning) == 1
    assert "A 47%, B 27%, C 27%; largest gap 0.133 (A), 99% lower bound 0.073" in warning[0]
    assert "past half the tolerance (0.050)" in warning[0]
    summary = json.loads(Path("metrics/validate/cloze.json").read_text())
    assert summary["success"] is True and summary["warnings"][0]["on"] == "source"
    details = {"validation": {"found": True, "gold_balance": summary["gold_balance"]}}
    assert source_metrics(details)["gold_balance.source.warning"] == 1.0


def test_the_report_marks_a_passing_skew_as_a_warning() -> None:
    from cultureqa.evaluation.report import _data_checks

    gold = {"success": True, "warning": True, "line": "gold positions over 600 items: A 47%"}
    lines = "".join(_data_checks({"gold_balance": {"source": gold, "sample": None}}))
    assert "## Data checks (validate)" in lines
    assert "- **warning** [source] gold positions over 600 items: A 47%" in lines
    assert _data_checks(None) == []
