"""Shared fixtures: offline environment, repo paths, tiny item builders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cultureqa.config import OFFLINE_ENV
from cultureqa.records import McqItem

for _key, _value in OFFLINE_ENV.items():
    os.environ.setdefault(_key, _value)
# `make test` runs 4 xdist workers on 2 cores: one torch/OpenMP thread per process, or their
# threads spin against each other (a tiny model's 2-second training loop took 40 s under load).
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def repo_root() -> Path:
    return ROOT


def make_item(
    item_id: str = "q1",
    options: tuple[str, ...] = ("kain ulos", "kain songket", "selendang batik"),
    answer: int = 0,
    language: str = "id",
    **metadata: object,
) -> McqItem:
    return McqItem(
        id=item_id,
        question="Saat upacara pernikahan adat Batak, keluarga pengantin perempuan memberikan",
        options=options,
        answer_index=answer,
        language=language,
        metadata=dict(metadata),
    )
