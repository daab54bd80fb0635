"""Floating-point noise moves scores, never picks: scores perturbed, batches resized.

A log-likelihood score depends on the CPU, the thread count and, for the embedded model, on the
other items of its padded batch (~1e-5). predictions.parquet keeps each item's per-option scores
(at :data:`cultureqa.core.records.SCORE_SIGNIFICANT` digits, with their normalisation) so
researchers can compare scoring rules and harnesses; run.json and every column decided from the
scores (pick, correctness) stay byte-identical under noise, and the scores move by the noise alone.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cultureqa.core.records import pick_best
from cultureqa.core.runlog import NEAR_TIE, read_run, runlog_dir, write_run
from cultureqa.evaluation.engine import RunSpec, evaluate
from cultureqa.llm import registry
from cultureqa.llm.base import LoglikRequest
from cultureqa.llm.fake import ScriptedModel
from tests.evaluation.test_engine import FAMILIES, make_family

ROOT = Path(__file__).resolve().parents[1]


def _on_rounding_edges(request: LoglikRequest) -> list[float]:
    """Distinct scores (1e-3 apart or more) that sit exactly between two 1e-4 steps."""
    out = []
    for option in request.continuations:
        digest = hashlib.sha256(f"{request.context}|{option}".encode()).hexdigest()
        out.append(-(int(digest, 16) % 10**6) / 1000 - 0.00005)
    return out


def _perturbed(request: LoglikRequest) -> list[float]:
    """The same scores moved by ±1e-6, in alternating directions across options."""
    base = _on_rounding_edges(request)
    return [s + (1e-6 if i % 2 else -1e-6) for i, s in enumerate(base)]


def _install(monkeypatch: pytest.MonkeyPatch, client: Any, chunk: int = 64) -> dict[str, Any]:
    built = registry.BuiltModel(client, {"backend": "scripted", "id": client.model_id}, chunk)
    monkeypatch.setitem(registry._FACTORIES, "scripted", lambda cfg: built)
    return {"id": client.model_id, "backend": "scripted", "decoding": {"max_tokens": 8}}


def _evaluate_to(
    out: Path, family: str, client: Any, monkeypatch: pytest.MonkeyPatch, store: Path
) -> pd.DataFrame:
    run = RunSpec("model", _install(monkeypatch, client), store, 0.1, "zero_shot")
    record, predictions = evaluate(make_family(family), run)
    write_run(out, predictions, record.as_dict(), ROOT)
    return predictions


@pytest.mark.parametrize("family", FAMILIES)
def test_scores_moved_by_1e_6_move_only_the_scores_in_the_tracked_outputs(
    family: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runs: dict[str, Callable[[LoglikRequest], list[float]]] = {
        "a": _on_rounding_edges,
        "b": _perturbed,
    }
    frames = {
        name: _evaluate_to(
            tmp_path / name, family, ScriptedModel("scorer", loglik_fn=fn), monkeypatch,
            tmp_path / f"{name}.sqlite",
        )
        for name, fn in runs.items()
    }  # fmt: skip
    assert (tmp_path / "a/run.json").read_bytes() == (tmp_path / "b/run.json").read_bytes()
    tracked = {n: pd.read_parquet(tmp_path / n / "predictions.parquet") for n in runs}
    noisy = ["scores", "margin"]
    pd.testing.assert_frame_equal(
        tracked["a"].drop(columns=noisy), tracked["b"].drop(columns=noisy)
    )
    # the scores are in the tracked predictions, beside the item id, moved by the noise alone
    unit = "case_id" if family == "cases" else "item_id"
    assert {unit, "scores", "score_normalisation"} <= set(tracked["a"].columns)
    assert (tracked["a"]["score_normalisation"] != "").all()
    assert tracked["a"]["scores"].tolist() != tracked["b"]["scores"].tolist()
    moved = [abs(x - y) for a, b in zip(tracked["a"]["scores"], tracked["b"]["scores"],
                                        strict=True) for x, y in _pairs(a, b)]  # fmt: skip
    assert 0 < max(moved) < 2.1e-6
    joined, record = read_run(tmp_path / "b")
    assert joined["scores"].tolist() == frames["b"]["scores"].tolist()
    assert record["near_ties"] == {"below": NEAR_TIE, "count": 0}
    assert (runlog_dir(tmp_path / "b") / "calls.parquet").is_file()
    assert "scores" not in pd.read_parquet(runlog_dir(tmp_path / "b") / "calls.parquet").columns


def _pairs(a: str, b: str) -> list[tuple[float, float]]:
    """Matching numbers of two score documents (lists, or ID-MoCQA's dict of lists)."""
    x, y = json.loads(a), json.loads(b)
    if isinstance(x, dict):
        return [p for k in x for p in zip(x[k], y[k], strict=True)]
    return list(zip(x, y, strict=True))


def test_a_pick_within_noise_is_counted_as_a_near_tie_and_exact_ties_go_to_the_first() -> None:
    assert pick_best([-1.0, -1.0, -3.0]) == (0, 0.0)
    best, margin = pick_best([-2.0, -1.0, -1.0004])
    assert best == 1 and margin == pytest.approx(0.0004) and margin < NEAR_TIE
    assert pick_best([-1.0]) == (0, math.inf)


def test_near_ties_reach_the_run_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    def close_call(request: LoglikRequest) -> list[float]:
        return [-1.0, -1.0 - NEAR_TIE / 2, -5.0][: len(request.continuations)]

    model = ScriptedModel("scorer", loglik_fn=close_call)
    predictions = _evaluate_to(tmp_path / "o", "indoculture", model, monkeypatch, tmp_path / "s")
    _, record = read_run(tmp_path / "o")
    assert record["near_ties"]["count"] == len(predictions) > 0


torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _small_indoculture(per_language: int = 4) -> Any:
    family = make_family("indoculture")
    family.items = {lang: items[:per_language] for lang, items in family.items.items()}
    return family


@pytest.fixture(scope="module")
def tiny_lm() -> tuple[Any, Any]:
    """A tiny random LM whose word-level vocabulary covers the items, so options differ."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    from tests.llm.test_local_hf import SPECIALS, make_model

    text = " ".join(
        f"{i.question} {' '.join(i.options)}"
        for items in _small_indoculture().items.values()
        for i in items
    )
    words = sorted(set(text.lower().split()) | set("abc"))
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(SPECIALS + words)}, "<unk>"))
    core.normalizer = normalizers.Lowercase()
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
        unk_token="<unk>",
    )  # fmt: skip
    return make_model("llama", len(tok)), tok


def test_another_batch_size_leaves_every_pick_and_the_run_record_identical(
    tiny_lm: tuple[Any, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local backend's padded batches change scores in the last float bits, not the picks."""
    from tests.llm.test_local_hf import make_client

    monkeypatch.chdir(tmp_path)
    model, tok = tiny_lm
    frames = {}
    for size in (1, 5):
        client = make_client(model, tok, batch_size=size)
        run = RunSpec("model", _install(monkeypatch, client), tmp_path / f"{size}.sqlite", 0.1)
        record, frames[size] = evaluate(_small_indoculture(), run)
        write_run(tmp_path / str(size), frames[size], record.as_dict(), ROOT)
    assert (tmp_path / "1/run.json").read_bytes() == (tmp_path / "5/run.json").read_bytes()
    decided = ["item_id", "setting", "pred", "correct", "status"]
    assert frames[1][decided].equals(frames[5][decided])
    margins = {size: f["margin"].to_numpy() for size, f in frames.items()}
    noise = abs(margins[1] - margins[5]).max()
    assert 0 < noise < 1e-4  # batching did move the raw scores, in the last float bits
    assert margins[1].min() > 100 * noise  # no pick here was within noise of flipping
