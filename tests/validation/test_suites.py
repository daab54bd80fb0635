"""Suite reports name failing items and checked columns; uniformity is decided on effect size.

The uniform-shares expectation (gold positions of ID-MoCQA and the scenario items) must mean the
same at 100 and at 100,000 rows: a 107k-row file 0.76 points from uniform passes (a chi-square
test would reject it, and the report says so), while all golds at A fails at any size.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cultureqa.validation import run_suite
from cultureqa.validation.expectations import share_deviation


def _suite(tmp_path: Path, *expectations: dict[str, object]) -> Path:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"name": "t", "expectations": list(expectations)}))
    return path


UNIFORM = {
    "type": "expect_column_value_shares_to_be_uniform",
    "kwargs": {"column": "answer", "value_set": ["A", "B", "C"], "tolerance": 0.05},
}


def _golds(counts: dict[str, int]) -> pd.DataFrame:
    answers = [letter for letter, n in counts.items() for _ in range(n)]
    return pd.DataFrame({"item_id": [f"q{i}" for i in range(len(answers))], "answer": answers})


def test_large_file_close_to_uniform_passes_though_chi_square_rejects(tmp_path: Path) -> None:
    counts = {"A": 36_481, "B": 34_865, "C": 35_654}  # 107,000 rows; A is 0.76 points over 1/3
    details = share_deviation(counts, ["A", "B", "C"], alpha=0.01)
    assert details["max_deviation"] == pytest.approx(0.0076, abs=1e-4)
    assert details["chi_square_rejects_at_alpha"]  # the old p-value rule failed this file
    report = run_suite(_suite(tmp_path, UNIFORM), _golds(counts))
    assert report.success, report.message()


@pytest.mark.parametrize("rows", [99, 107_001])
def test_all_golds_at_a_fail_at_any_size(tmp_path: Path, rows: int) -> None:
    report = run_suite(_suite(tmp_path, UNIFORM), _golds({"A": rows}))
    assert not report.success
    detail = report.failures[0]["detail"]
    assert "answer: A " in detail and "largest gap 0.67 (A), 99% bound" in detail
    assert "> tolerance 0.05: fails" in detail
    assert f"A {rows} of {rows} (100%)" in detail and "chi-square" in detail


def test_small_file_within_tolerance_passes(tmp_path: Path) -> None:
    """37/31/31 of 99 is 4 points off: passes, as it would at 99,000 rows (no size effect)."""
    small = run_suite(_suite(tmp_path, UNIFORM), _golds({"A": 37, "B": 31, "C": 31}))
    large = run_suite(_suite(tmp_path, UNIFORM), _golds({"A": 37_000, "B": 31_000, "C": 31_000}))
    assert small.success and large.success


def test_a_value_outside_the_set_fails(tmp_path: Path) -> None:
    report = run_suite(_suite(tmp_path, UNIFORM), _golds({"A": 33, "B": 33, "C": 33, "D": 1}))
    assert not report.success and "values outside the set ['D']" in report.message()


def test_failures_list_up_to_ten_item_ids_with_language_and_value(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "item_id": [f"q{i}" for i in range(30)],
            "language": ["id"] * 30,
            "answer": ["A", "B", "F"] * 10,
            "question": ["same"] * 2 + [f"q{i}" for i in range(28)],
        }
    )
    suite = _suite(
        tmp_path,
        {
            "type": "expect_column_values_to_be_in_set",
            "kwargs": {"column": "answer", "value_set": ["A", "B", "C"]},
        },
        {
            "type": "expect_compound_columns_to_be_unique",
            "kwargs": {"column_list": ["language", "question"]},
        },
    )
    report = run_suite(suite, frame)
    failed = {f["expectation"]: f for f in report.failures}
    in_set = failed["expect_column_values_to_be_in_set"]
    assert in_set["detail"].startswith("10 of 30 rows fail; items: q2/id (answer='F'), q5/id")
    assert len(in_set["items"]) == 10 and in_set["items"][0] == "q2/id (answer='F')"
    unique = failed["expect_compound_columns_to_be_unique"]
    assert unique["column"] == "language, question"
    assert unique["items"] == ["q0/id (question='same')", "q1/id (question='same')"]
    message = report.message()
    assert "expect_column_values_to_be_in_set(answer): 10 of 30 rows fail; items: q2/id" in message


def test_no_batch_fingerprint_is_computed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GX's batch fingerprint (hash_pandas_object over every column) cost 540 MB on a million
    items; the suite must run without it. The plant: a fingerprint that raises."""
    from great_expectations.execution_engine import pandas_execution_engine

    def fingerprint(frame: pd.DataFrame) -> str:
        raise AssertionError("GX fingerprinted the batch")

    monkeypatch.setattr(pandas_execution_engine, "hash_pandas_dataframe", fingerprint)
    report = run_suite(_suite(tmp_path, UNIFORM), _golds({"A": 5, "B": 5, "C": 5}))
    assert report.success and not report.crashes


def test_a_repeated_item_is_found_by_its_folded_cells_not_their_concatenation() -> None:
    from cultureqa.validation.mcq_expectations import duplicate_questions

    frame = pd.DataFrame({
        "item_id": ["a", "b", "c", "d"],
        "language": ["en", "en", "en", "id"],
        "question": ["Where is  Rendang from?", "where is rendang FROM?", "Where is", "Where is"],
        "options": ['["Padang", "Bali"]', '["bali", "padang"]', '["Padang", "Bali"]', '["x"]'],
    })  # fmt: skip
    found = duplicate_questions(frame, ["language", "question", "options"])
    assert found == {"b (en)": "same language/question/options as a"}


def test_options_repeat_by_their_spacing_not_by_their_case() -> None:
    """The suite agrees with the loader: ``GG``/``gg`` are two options, ``x``/`` x `` one."""
    from cultureqa.validation.mcq_expectations import option_problems

    frame = pd.DataFrame({
        "item_id": ["genes", "spaced", "empty"],
        "language": ["en", "en", "en"],
        "options": ['["GG", "Gg", "gg"]', '["x  y", " x y", "z"]', '["a", " "]'],
    })  # fmt: skip
    assert option_problems(frame) == {"spaced (en)": "'x y' repeated", "empty (en)": "empty ['B']"}
