"""The report says how each run ended (never silent): failures, drops and skips per run.

Accuracies alone hide what they rest on: a run with 18 unparsable replies of 25, rows the loader
dropped, or a setting skipped for want of a template. The report's run accounting counts each
with its reason, from the DVC-tracked ``run.json`` only, so it is the same bytes after a pull.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cultureqa.evaluation.report import VOLATILE_NOTE, collect_records, run_accounting


def _record(**overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "counts": {
            "items": 10,
            "ok": 10,
            "errors": 0,
            "parse_errors": 0,
            "empty": 0,
            "not_sent": 0,
        },
        "error_share": 0.0,
        "max_error_share": 0.1,
        "skipped": {},
        "error_causes": {},
        "details": {"rows": {"rows_dropped": 0, "rows_skipped": 0, "dropped_by_reason": {}}},
    }
    record.update(overrides)
    return record


def test_a_clean_run_is_one_row_and_the_note_on_volatile_counts() -> None:
    section = "".join(run_accounting({"model": _record()}))
    assert "| model | 10 | 10 | 0 | 0 | 0 | 0 | 0.000 | 0.100 | 0 | 0 |" in section
    assert VOLATILE_NOTE in section
    assert "skipped:" not in section and "dropped by reason" not in section


def test_drops_skips_and_unusable_items_are_each_named_with_their_reason() -> None:
    planted = _record(
        counts={"items": 10, "ok": 5, "errors": 2, "parse_errors": 1, "empty": 1, "not_sent": 1},
        error_share=0.5,
        skipped={"mcq_no_location": "no template for language su"},
        error_causes={"failed": {"items": 3, "share": 0.3, "example": "HTTP 500"}},
        details={
            "rows": {
                "rows_dropped": 2,
                "rows_skipped": 1,
                "dropped_by_reason": {"duplicate options": 2},
            }
        },
    )
    section = "".join(run_accounting({"model": planted}))
    assert "| model | 10 | 5 | 2 | 1 | 1 | 1 | 0.500 | 0.100 | 2 | 1 |" in section
    assert "- model: rows dropped by reason: duplicate options 2" in section
    assert "- model: setting mcq_no_location skipped: no template for language su" in section
    assert "- model: failed: 3 items, e.g. 'HTTP 500'" in section


def test_no_records_no_section() -> None:
    assert run_accounting({}) == []


def test_records_come_from_the_tracked_run_json_never_the_run_log(tmp_path: Path) -> None:
    for folder in ("model", "baselines.random", "model/.runlog"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "run.json").write_text(json.dumps({"where": folder}))
    assert collect_records(tmp_path) == {
        "baselines.random": {"where": "baselines.random"},
        "model": {"where": "model"},
    }
