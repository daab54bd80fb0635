"""The ``mocqa_hop`` stage's runner: the one build step that evaluates a model.

Kept apart from :mod:`.runners` because it imports :mod:`cultureqa.mocqa` (evaluation code):
the other build stages' DVC code deps follow their imports, so only ``mocqa_hop`` reruns when
evaluation code changes, not ingest → rebalance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from cultureqa.mocqa import hop
from cultureqa.mocqa_build.finalize import finalize
from cultureqa.mocqa_build.pipeline import MocqaSettings


def hop_config(settings: MocqaSettings) -> hop.HopConfig:
    """``mocqa.hop`` parsed; an unknown key fails here, naming it."""
    try:
        return hop.HopConfig(**dict(settings.hop))
    except TypeError as err:
        raise ValueError(f"params: mocqa.hop: {err}") from err


def run_hop(
    settings: MocqaSettings, model_cfg: Mapping[str, Any]
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Hop-necessity diagnostic on the items finalize will write (same shuffle, same seed)."""
    items = finalize(settings.read("rebalance"), settings.seed).frame
    _, predictions, summary = hop.run_hop(
        items, model_cfg, hop_config(settings), settings.root, settings.store_path, settings.kb()
    )
    return predictions, summary
