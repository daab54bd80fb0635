"""The generic GX suite and the pre-model checks of ``validate``, each on a planted violation."""

from __future__ import annotations

import json
import runpy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.core.config import run_stage
from cultureqa.core.params_digest import digest
from cultureqa.validation import run_suite
from cultureqa.validation.mcq_expectations import gold_balance

ROOT = Path(__file__).resolve().parents[2]
GENERIC = ROOT / "expectations" / "generic_mcq_items.json"


def _frame(golds: list[str], k: int = 3, **over: Any) -> pd.DataFrame:
    rows = [
        {"item_id": f"i{n}", "language": "en", "question": f"Question {n}?",
         "options": json.dumps([f"o{n}-{j}" for j in range(k)]), "n_options": k, "answer": g}
        for n, g in enumerate(golds)
    ]  # fmt: skip
    for n, changes in over.items():
        rows[int(n[1:])].update(changes)
    return pd.DataFrame(rows)


def _failures(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    report = run_suite(GENERIC, frame)
    assert not report.crashes, report.message()
    return {f["expectation"]: f["details"] for f in report.failures}


def test_balanced_golds_pass() -> None:
    assert _failures(_frame(list("ABC" * 40))) == {}


def test_all_golds_at_a_fail_with_counts() -> None:
    found = _failures(_frame(["A"] * 120))
    assert set(found) == {"expect_gold_positions_to_be_balanced"}
    detail = found["expect_gold_positions_to_be_balanced"]
    assert detail["counts"] == {"A": 120, "B": 0, "C": 0}
    assert detail["max_deviation"] == pytest.approx(2 / 3, abs=1e-3) and detail["chi_square"] > 200


def test_decision_is_on_the_effect_not_the_sample_size() -> None:
    shares = {"A": 0.36, "B": 0.32, "C": 0.32}  # 2.7 points from uniform
    small = gold_balance(_frame([k for k, s in shares.items() for _ in range(round(100 * s))]), 0.1)
    large_golds = [k for k, s in shares.items() for _ in range(round(100_000 * s))]
    large = gold_balance(pd.DataFrame({"answer": large_golds, "n_options": 3}), 0.1)
    assert small["success"] and large["success"]
    assert (
        large["chi_square_p_value"] < 1e-10 < small["chi_square_p_value"]
    )  # reported, not decisive
    skew = gold_balance(pd.DataFrame({"answer": list("AAB" * 40_000), "n_options": 3}), 0.1)
    assert not skew["success"] and skew["max_deviation"] == pytest.approx(1 / 3, abs=1e-3)


def test_mixed_option_counts_expect_the_mixed_shares() -> None:
    frame = pd.DataFrame({"answer": list("ABAB") + list("ABCD"), "n_options": [2] * 4 + [4] * 4})
    found = gold_balance(frame, 0.1)
    assert found["expected_counts"] == {"A": 3.0, "B": 3.0, "C": 1.0, "D": 1.0} and found["success"]


@pytest.mark.parametrize(
    ("over", "expectation", "item"),
    [
        ({"r4": {"question": "Question 3?", "options": json.dumps(["o3-0", "o3-1", "o3-2"])}},
         "expect_questions_to_be_unique", "i4 (en)"),
        ({"r4": {"options": json.dumps(["x", "X", ""])}},
         "expect_options_to_be_distinct_and_non_empty", "i4 (en)"),
        ({"r4": {"n_options": 4}}, "expect_option_counts_to_be_consistent", "i4"),
    ],
    ids=["duplicate-question", "duplicate-empty-options", "option-count"],
)  # fmt: skip
def test_item_invariants_name_the_items(over: dict[str, Any], expectation: str, item: str) -> None:
    frame = _frame(list("ABC" * 40), **over)
    if "n_options" in over["r4"]:
        frame.loc[4, "answer"] = "B"
    found = _failures(frame)
    assert expectation in found, found
    assert item in found[expectation]["items"] and found[expectation]["n_items"] == 1


def test_a_stem_repeated_with_other_options_is_two_items() -> None:
    assert _failures(_frame(list("ABC" * 40), r4={"question": "Question 3?"})) == {}


def test_failures_read_as_sentences() -> None:
    report = run_suite(GENERIC, _frame(["A"] * 60))
    assert "gold answers: A 60 of 60 (100%), B 0 of 60 (0%), C 0 of 60 (0%)" in report.message()
    assert "{" not in report.message()


# --- validate: checks before any model call -------------------------------------------------------

BENCH = {
    "name": "tiny",
    "source": {"kind": "file", "path": "data/sources/tiny/items.jsonl"},
    "columns": {"id": "qid", "question": "q", "options": ["o1", "o2", "o3"], "answer": "a",
                "metadata": ["region"]},
    "languages": {"en": {}},
    "settings": ["mcq-none-en"],
    "slices": [["region"]],
    "expectations": "expectations/generic_mcq_items.json",
}  # fmt: skip


def _validate() -> Callable[[list[str]], int]:
    main = runpy.run_path(str(ROOT / "stages" / "validate.py"), run_name="stage")["main"]
    return lambda argv: run_stage(lambda: main(argv))  # type: ignore[no-any-return]


def _workspace(path: Path, golds: str = "ABC" * 20, **bench: Any) -> Path:
    for folder in ("prompts", "expectations"):
        shutil.copytree(ROOT / folder, path / folder)
    shutil.copy(ROOT / "dvc.yaml", path / "dvc.yaml")
    rows = [
        {"qid": f"t{n}", "q": f"Which is option {n}?", "o1": f"a{n}", "o2": f"b{n}", "o3": f"c{n}",
         "a": g, "region": "Bali" if n % 2 else "Aceh"}
        for n, g in enumerate(golds)
    ]  # fmt: skip
    source = path / "data/sources/tiny/items.jsonl"
    source.parent.mkdir(parents=True)
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = {**BENCH, **bench}
    config["digest"] = digest(config)  # as composing conf/ writes it
    params = {"benchmarks": {"tiny": config}, "prompt": {"style": "zero_shot"}}
    OmegaConf.save(OmegaConf.create(params), path / "params.yaml")
    return path


def test_validate_passes_and_records_what_it_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_workspace(tmp_path))
    assert _validate()(["--benchmark", "tiny"]) == 0
    summary = json.loads((tmp_path / "metrics/validate/tiny.json").read_text())
    assert summary["templates"] == {"mcq-none-en": "prompts/default/mcq/zero_shot.en.txt"}
    assert summary["rows_read"] == 60 and summary["load"]["labels_stripped"] == 0


def test_validate_fails_all_golds_at_a_with_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(_workspace(tmp_path, golds="A" * 60))
    assert _validate()(["--benchmark", "tiny"]) == 1
    err = capsys.readouterr().err
    assert "expect_gold_positions_to_be_balanced" in err
    assert "gold answers: A 60 of 60 (100%), B 0 of 60 (0%), C 0 of 60 (0%)" in err
    assert "balanced would be ≈ 33% each; largest gap 0.67 (A), 99% bound" in err


@pytest.mark.parametrize(
    ("bench", "message"),
    [
        ({"slices": [["regoin"]]}, "slice ['regoin'] names ['regoin'], which are not metadata"),
        ({"languages": {"sw": {}}, "settings": ["mcq-none-sw"]},
         "no 'mcq' template for style 'zero_shot' and language 'sw'"),
        ({"source": {"kind": "file", "path": "elsewhere/items.jsonl"}},
         "is not a DVC dependency of ['validate@tiny', 'evaluate@tiny']"),
    ],
    ids=["unknown-slice", "language-without-template", "untracked-source"],
)  # fmt: skip
def test_validate_config_errors_before_any_model_call(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    bench: dict[str, Any],
    message: str,
) -> None:
    monkeypatch.chdir(_workspace(tmp_path, **bench))
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(tmp_path / "data/sources/tiny/items.jsonl", tmp_path / "elsewhere/items.jsonl")
    assert _validate()(["--benchmark", "tiny"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_declared_fallback_language_is_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = {"languages": {"sw": {}}, "settings": ["mcq-none-sw"], "prompt_fallback": {"sw": "en"}}
    monkeypatch.chdir(_workspace(tmp_path, **bench))
    assert _validate()(["--benchmark", "tiny"]) == 0
