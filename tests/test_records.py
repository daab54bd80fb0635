"""Stored scores are stable under CPU float noise, so output hashes (and dvc.lock) are too."""

from __future__ import annotations

import json

from cultureqa.records import scores_json


def test_scores_survive_batching_noise_unchanged() -> None:
    run_a = {"answer": [-1.2682225704193115, -1.9241368770599365], "province": [-6.7419662]}
    run_b = {"answer": [-1.2682160139083862, -1.924136996269226], "province": [-6.7419662]}
    assert scores_json(run_a) == scores_json(run_b)
    assert json.loads(scores_json([-2.0451130867004395]))[0] == -2.0451


def test_a_real_difference_still_shows() -> None:
    assert scores_json([-1.2682]) != scores_json([-1.2692])
