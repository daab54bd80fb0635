"""`cultureqa compare`: like with like (paired over shared rows), the prompt each family used,
empty cells with their reason where a factor did not reach a family, a clean workspace once."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from cultureqa.runs.compare import (
    NOT_VARIED,
    SHARED,
    Cell,
    Estimate,
    Experiment,
    Measured,
    as_frame,
    compare,
    difference,
    estimate,
    experiments,
    measure,
    read_deltas,
    render,
)

ROOT = Path(__file__).resolve().parents[1]
MCQ = ["mcq-none-en", "mcq-none-id", "mcq-indonesia-id", "mcq-province-id"]
COMPLETION = ["completion-none-id", "completion-indonesia-id", "completion-province-id"]


def _params(style: str, model: str = "m1") -> dict[str, Any]:
    return {
        "model": {"id": model},
        "prompt": {"style": style},
        "evaluate": {"benchmarks": ["indoculture"], "max_error_share": 0.1},
        "benchmarks": {"indoculture": {"name": "indoculture"}},
        "mocqa_eval": {"roster": ["model"], "prompts": ["zero_shot", "cot"]},
        "cases": {"roster": ["model"], "seeds": [60, 40]},
    }


def test_rows_come_from_exp_show_json() -> None:
    data = {"params": {"params.yaml": {"data": _params("zero_shot")}}}
    show = [
        {"rev": "workspace", "name": None, "data": data},
        {"rev": "a" * 40, "name": "main", "data": {}, "experiments": [
            {"name": "sunny-cat", "revs": [{"rev": "b" * 40, "name": "sunny-cat", "data": {}}]},
        ]},
    ]  # fmt: skip
    rows = experiments(show)
    assert [(r.name, r.rev) for r in rows] == [
        ("workspace", None),
        ("main", "a" * 40),
        ("sunny-cat", "b" * 40),
    ]
    assert rows[0].params["model"]["id"] == "m1"


CELL = Cell("indoculture", "indoculture", "cot", (), ("item_id", "setting"), "evaluate", {})


def _measured(correct: dict[tuple[str, str], float]) -> Measured:
    rows = pd.DataFrame(
        [{"item_id": i, "setting": s, "correct": c} for (i, s), c in correct.items()]
    )
    return Measured(CELL, rows)


def test_the_paired_interval_is_over_the_items_both_measured() -> None:
    rng = np.random.default_rng(3)
    old = {(f"i{k}", s): float(rng.integers(0, 2)) for k in range(40) for s in ("a", "b")}
    new = {key: min(1.0, v + float(rng.integers(0, 2))) for key, v in old.items()}
    new |= {(f"i{k}", "c"): 1.0 for k in range(40)}  # a setting only the new side ran
    new |= {("extra", "a"): 1.0}  # an item only the new side has
    got = difference(_measured(new), _measured(old))
    assert isinstance(got, Estimate)
    per_item = (
        pd.Series(new).loc[list(old)].groupby(level=0).mean()
        - pd.Series(old).groupby(level=0).mean()
    ).to_numpy()
    half = stats.t.ppf(0.975, 39) * per_item.std(ddof=1) / np.sqrt(40)
    assert (got.value, got.low, got.high) == pytest.approx(
        (per_item.mean(), per_item.mean() - half, per_item.mean() + half)
    )
    assert got.n == 40 and got.note == "paired, n=40 over 2 shared settings"


def test_other_ids_cannot_be_paired() -> None:
    old = _measured({(f"i{k}", "a"): 1.0 for k in range(5)})
    new = _measured({(f"j{k}", "a"): 1.0 for k in range(5)})
    assert difference(new, old) == "no common items"


def _shifted(n: int, shift: float, noise: float, seed: int) -> tuple[Measured, Measured]:
    """Old and new per-item scores (one setting) whose true Δ is ``shift``."""
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    new = np.clip(base + shift + rng.normal(0, noise, n), 0, 1)
    return (_measured({(f"i{k}", "a"): float(v) for k, v in enumerate(new)}),
            _measured({(f"i{k}", "a"): float(v) for k, v in enumerate(base)}))  # fmt: skip


def test_each_delta_reads_as_a_difference_no_difference_or_inconclusive_with_its_n() -> None:
    found = [difference(*_shifted(400, 0.15, 0.1, 1)), difference(*_shifted(400, 0.0, 0.1, 2)),
             difference(*_shifted(20, 0.0, 0.3, 3))]  # fmt: skip
    assert all(isinstance(d, Estimate) for d in found)
    readings = read_deltas(found, margin=0.05)  # type: ignore[arg-type]
    assert [r for r, _ in readings] == ["difference", "no difference beyond the margin",
                                        "inconclusive"]  # fmt: skip
    small = found[2]
    assert isinstance(small, Estimate) and small.low < 0 < small.high  # the CI covers 0 …
    needed = readings[2][1]
    assert needed is not None and needed > 20  # … and only more items would decide it
    # the n it names does decide: the same effect at that n reads "no difference"
    again = difference(*_shifted(needed * 2, 0.0, 0.3, 4))
    assert read_deltas([again], margin=0.05)[0][0] == "no difference beyond the margin"  # type: ignore[list-item]


def test_the_table_corrects_the_deltas_for_their_number() -> None:
    """One Δ at p ≈ 0.02 is a difference alone and not among twenty (Holm)."""
    one = Estimate(0.1, 0.01, 0.19, 50, p_difference=0.02, p_equivalence=0.9, sd=0.3)
    quiet = Estimate(0.0, -0.1, 0.1, 50, p_difference=0.9, p_equivalence=0.9, sd=0.3)
    assert read_deltas([one], 0.05)[0][0] == "difference"
    assert read_deltas([one, *[quiet] * 19], 0.05)[0][0] == "inconclusive"


def test_one_item_has_no_interval() -> None:
    one = estimate(pd.Series([1.0], index=["i0"]))
    assert one.value == 1.0 and np.isnan(one.low) and one.text() == "1.000 (n=1)"


def _write(root: Path, path: str, frame: pd.DataFrame) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(target)


def _indoculture(root: Path, settings: list[str], seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = [{"item_id": f"q{k}", "setting": s, "correct": bool(rng.integers(0, 2))}
            for k in range(30) for s in settings]  # fmt: skip
    _write(root, "data/eval/indoculture/model/predictions.parquet", pd.DataFrame(rows))


def _families(root: Path) -> None:
    """ID-MoCQA (both prompts) and cases: what every experiment writes alike."""
    for prompt, seed in (("zero_shot", 1), ("cot", 2)):
        rng = np.random.default_rng(seed)
        frame = pd.DataFrame({"item_id": [f"m{k}" for k in range(20)],
                              "correct": rng.integers(0, 2, 20).astype(bool)})  # fmt: skip
        _write(root, f"data/eval/mocqa/model/{prompt}/predictions.parquet", frame)
    rows = [{"case_id": f"c{k}", "seed": s, "correct": bool((k + s) % 3)}
            for k in range(12) for s in (60, 40)]  # fmt: skip
    _write(root, "data/eval/cases/model/predictions.parquet", pd.DataFrame(rows))


@pytest.fixture
def two_prompts(tmp_path: Path) -> tuple[Path, Path]:
    """Two checkouts: zero_shot (7 IndoCulture settings) and cot (the 4 MCQ settings)."""
    zero, cot = tmp_path / "zero", tmp_path / "cot"
    for root, settings, seed in ((zero, MCQ + COMPLETION, 5), (cot, MCQ, 6)):
        root.mkdir()
        shutil.copy2(ROOT / "dvc.yaml", root / "dvc.yaml")
        _indoculture(root, settings, seed)
        _families(root)
    return zero, cot


def _compare_two(zero: Path, cot: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Both checkouts as two experiments of one repository (each read from its own folder)."""
    from cultureqa.runs import compare_data as module

    real = module._Reader.read
    homes = {"main": zero, "cot-exp": cot}

    def read(self: Any, path: str) -> pd.DataFrame:
        return pd.read_parquet(homes[self.rev] / path)

    monkeypatch.setattr(module._Reader, "read", read)
    rows = [Experiment("main", "main", _params("zero_shot")),
            Experiment("cot-exp", "cot-exp", _params("cot"))]  # fmt: skip
    result = compare(zero, rows, baseline="main")
    monkeypatch.setattr(module._Reader, "read", real)
    return result


def test_a_prompt_sweep_leaves_the_families_it_does_not_reach_empty(
    two_prompts: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _compare_two(*two_prompts, monkeypatch)
    rows = {(r["column"], r["experiment"]): r for r in result.rows}
    assert result.columns == ["indoculture", "mocqa·zero_shot", "mocqa·cot", "cases"]
    indo = rows["indoculture", "cot-exp"]
    assert indo["prompt"] == "cot" and indo["settings"] == "4/7"
    assert rows["indoculture", "main"]["settings"] == "7/7"
    assert isinstance(indo["Δ"], Estimate)
    assert indo["Δ"].note == "paired, n=30 over 4 shared settings"
    for column in ("mocqa·zero_shot", "mocqa·cot", "cases"):
        cell = rows[column, "cot-exp"]
        assert cell["Δ"] == NOT_VARIED, column
        assert "prompt.style" in cell["note"] and "does not read" in cell["note"]
    assert rows["mocqa·cot", "cot-exp"]["prompt"] == "cot"  # what the family really used
    assert rows["mocqa·cot", "main"]["prompt"] == "cot"
    assert rows["cases", "main"]["prompt"] == "own"
    table = render(result)
    assert "+0.000 ± 0.000" not in table and NOT_VARIED in table
    assert max(map(len, table.splitlines())) <= 160
    assert "ID-MoCQA runs every prompt style" in table
    assert indo["reading"].split(" (")[0] in ("difference", "inconclusive",
                                              "no difference beyond the margin")  # fmt: skip
    assert "| reading" in table and indo["reading"] in table and "± 0.05" in table


def test_a_cot_row_is_shown_beside_the_baseline_over_the_same_settings(
    two_prompts: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """cot ran 4 of 7 settings: the baseline's accuracy over those 4 is shown, recomputed here."""
    zero, cot = two_prompts
    result = _compare_two(zero, cot, monkeypatch)
    rows = {(r["column"], r["experiment"]): r for r in result.rows}
    indo = rows["indoculture", "cot-exp"]
    base = pd.read_parquet(zero / "data/eval/indoculture/model/predictions.parquet")
    on_four = base[base["setting"].isin(MCQ)].groupby("item_id")["correct"].mean()
    shared = indo[SHARED]
    assert isinstance(shared, Estimate) and shared.n == 30
    assert shared.value == pytest.approx(on_four.mean())
    assert shared.value != pytest.approx(rows["indoculture", "main"]["accuracy"].value)
    assert indo["accuracy"].value - shared.value == pytest.approx(indo["Δ"].value)
    assert rows["indoculture", "main"][SHARED] == ""  # the baseline itself
    assert rows["cases", "cot-exp"][SHARED] == ""  # same seeds on both sides: nothing left out
    table = render(result)
    assert max(map(len, table.splitlines())) <= 160
    section = " ".join(table.split("## indoculture")[1].split("## ")[0].split())
    assert f"cot-exp ran 4/7 settings: main over the same ones is {shared.text()} (n=30)" in section
    assert "over the same ones" not in table.split("## cases")[1]  # same seeds: no note
    assert SHARED in as_frame(result, text=False).columns


def test_changed_predictions_under_equal_params_are_compared(
    two_prompts: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Equal stage params alone do not empty a cell: upstream data may have changed it."""
    zero, cot = two_prompts
    frame = pd.read_parquet(cot / "data/eval/cases/model/predictions.parquet")
    _write(cot, "data/eval/cases/model/predictions.parquet", frame.assign(correct=True))
    result = _compare_two(zero, cot, monkeypatch)
    cases = next(r for r in result.rows if r["column"] == "cases" and r["experiment"] != "main")
    assert isinstance(cases["Δ"], Estimate) and cases["Δ"].value > 0


def test_a_model_sweep_is_compared_in_every_family(
    two_prompts: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    zero, cot = two_prompts
    from cultureqa.runs import compare_data as module

    monkeypatch.setattr(module._Reader, "read", lambda self, path: pd.read_parquet(
        (zero if self.rev == "main" else cot) / path))  # fmt: skip
    rows = [Experiment("main", "main", _params("zero_shot")),
            Experiment("other", "other", _params("zero_shot", model="m2"))]  # fmt: skip
    result = compare(zero, rows, baseline="main")
    deltas = [r["Δ"] for r in result.rows if r["experiment"] == "other"]
    assert all(isinstance(d, Estimate) for d in deltas), deltas


def test_a_clean_workspace_is_shown_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy2(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    _indoculture(tmp_path, MCQ, 5)
    _families(tmp_path)
    from cultureqa.runs import compare_data as module

    monkeypatch.setattr(module._Reader, "read", lambda self, path: pd.read_parquet(tmp_path / path))
    clean = [Experiment("workspace", None, _params("zero_shot")),
             Experiment("main", "a" * 40, _params("zero_shot"))]  # fmt: skip
    result = compare(tmp_path, clean, baseline=None)
    assert {r["experiment"] for r in result.rows} == {"main"}
    assert result.folded.startswith("workspace = main") and result.folded in render(result)
    edited = [Experiment("workspace", None, _params("cot")), clean[1]]
    result = compare(tmp_path, edited, baseline=None)
    assert {r["experiment"] for r in result.rows} == {"workspace", "main"} and not result.folded


def test_missing_predictions_read_n_a_and_numbers_come_as_columns(tmp_path: Path) -> None:
    shutil.copy2(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    _indoculture(tmp_path, MCQ, 5)
    result = compare(tmp_path, [Experiment("workspace", None, _params("zero_shot"))], None)
    rows = {r["column"]: r for r in result.rows}
    assert rows["indoculture"]["accuracy"].n == 30 and rows["cases"]["accuracy"] == "n/a"
    numbers = as_frame(result, text=False)
    indo = numbers[numbers["column"] == "indoculture"].iloc[0]
    assert indo["accuracy n"] == 30 and indo["accuracy ci_low"] < indo["accuracy"]


def test_an_unknown_baseline_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not an experiment here"):
        compare(tmp_path, [Experiment("workspace", None, _params("zero_shot"))], baseline="nope")


def test_an_output_missing_from_the_dvc_cache_reads_n_a(tmp_path: Path) -> None:
    """A fresh clone before `dvc pull`: the directory output's listing is not in the local cache.
    DVC raises its own DataIndexDirError there, not an OSError; the cell reads n/a, no traceback."""
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_COMMITTER_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_EMAIL": "t@t",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}  # fmt: skip

    def run(*args: str) -> str:
        done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                              check=False, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr[-1000:]
        return done.stdout

    _indoculture(tmp_path, MCQ, 5)
    run("git", "init", "-q")
    run("dvc", "init", "-q")
    run("dvc", "add", "-q", "data/eval/indoculture/model")
    run("git", "add", "-A")
    run("git", "commit", "-qm", "predictions")
    rev = run("git", "rev-parse", "HEAD").strip()
    shutil.rmtree(tmp_path / ".dvc" / "cache")
    shutil.rmtree(tmp_path / "data" / "eval")
    found = measure(tmp_path, Experiment("main", rev, _params("zero_shot")), "model")
    assert found["indoculture"].rows is None and found["indoculture"].missing == "n/a"
