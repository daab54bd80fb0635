"""Reading the composed parameters (``params.yaml``) that every stage runs on."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf


class ConfigTypeError(TypeError):
    """A parameter has the wrong type; the message names the key."""


def typed(cfg: DictConfig, key: str, kind: type[Any]) -> Any:
    """``cfg[key]`` converted to ``kind``, or a ConfigTypeError naming the key and value."""
    value = OmegaConf.select(cfg, key)
    try:
        return kind(value)
    except (TypeError, ValueError) as exc:
        raise ConfigTypeError(
            f"params.yaml: '{key}' must be {kind.__name__}, got {value!r}"
        ) from exc


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


def run_stage(main: Callable[[], int]) -> int:
    """Run a stage's main; input and config errors become one readable line and exit code 2.

    Outputs are written atomically, so a stage that stops here leaves earlier outputs intact.
    """
    from cultureqa.benchmarks.spec import SpecError
    from cultureqa.evaluation.prompts import TemplateError
    from cultureqa.io import SourceError
    from cultureqa.knowledge.provinces import KnowledgeBaseError
    from cultureqa.llm.registry import ModelConfigError
    from cultureqa.runlock import OutputBusy, StageInterrupted

    known = (
        SourceError,
        SpecError,
        TemplateError,
        KnowledgeBaseError,
        ModelConfigError,
        OutputBusy,
    )
    try:
        return main()
    except known as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (KeyError, FileNotFoundError, ConfigTypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StageInterrupted as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 130


def error_share_exit(share: float, limit: float, predictions: Path) -> int:
    """Exit code of an evaluation: 1 (with a pointer to the errors) past the allowed error share.

    Item failures never stop a run; only a failure rate above the configured limit fails the
    stage, after its outputs are written so the failures can be inspected.
    """
    if share <= limit:
        return 0
    print(
        f"error: {share:.1%} of items failed (limit {limit:.1%}); see {predictions} column 'error'",
        file=sys.stderr,
    )
    return 1


def setup_stage() -> None:
    """Offline-safe environment and readable logging for stage scripts."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    logging.basicConfig(
        level=os.environ.get("CULTUREQA_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
