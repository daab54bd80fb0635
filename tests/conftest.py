"""Shared fixtures: offline environment, repo paths, tiny item builders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cultureqa.config import OFFLINE_ENV
from cultureqa.records import McqItem

for _key, _value in OFFLINE_ENV.items():
    os.environ.setdefault(_key, _value)

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
