"""Stored scores are stable under CPU float noise, so output hashes (and dvc.lock) are too."""

from __future__ import annotations

import json

from cultureqa.core.records import scores_json


def test_scores_are_written_at_ten_significant_digits() -> None:
    """The declared precision: float64 tails (BLAS kernels) go, a float32 model's digits stay."""
    assert json.loads(scores_json([-2.0451130867004395]))[0] == -2.045113087
    run_a = {"answer": [-1.2682225704193115, -1.9241368770599365], "province": [-6.7419662]}
    run_b = {"answer": [-1.2682225704193116, -1.9241368770599363], "province": [-6.7419662]}
    assert scores_json(run_a) == scores_json(run_b)  # kernel noise in the 16th digit
    batch = {"answer": [-1.2682160139083862, -1.924136996269226], "province": [-6.7419662]}
    assert scores_json(run_a) != scores_json(batch)  # a float32 batch effect (6.6e-6) shows


def test_a_real_difference_still_shows() -> None:
    assert scores_json([-1.2682]) != scores_json([-1.2692])
