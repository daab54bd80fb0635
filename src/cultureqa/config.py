"""Reading the composed parameters (``params.yaml``) that every stage runs on."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf

OFFLINE_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "DVC_NO_ANALYTICS": "1",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def load_params(path: str | Path = "params.yaml") -> DictConfig:
    """Load params.yaml; a missing file names the command that composes it."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: run `dvc exp run` or `make params` to compose it"
        )
    cfg = OmegaConf.load(path)
    if not isinstance(cfg, DictConfig):
        raise TypeError(f"{path}: expected a mapping at the top level")
    return cfg


def select(cfg: DictConfig, key: str) -> dict[str, Any]:
    """A sub-tree as a plain dict; a missing key names itself."""
    node = OmegaConf.select(cfg, key, default=None)
    if node is None:
        raise KeyError(f"params.yaml has no '{key}'")
    return cast(dict[str, Any], OmegaConf.to_container(node, resolve=True))


def setup_stage() -> None:
    """Offline-safe environment and readable logging for stage scripts."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    logging.basicConfig(
        level=os.environ.get("CULTUREQA_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
