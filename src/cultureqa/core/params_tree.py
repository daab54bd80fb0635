"""Reading one key of the composed parameters, from a plain tree or an OmegaConf node.

Below :mod:`cultureqa.core.config` and :mod:`cultureqa.core.spend` alike (both read keys), importing
neither: the stage's request path reads params as a plain tree and never imports OmegaConf.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

Params = Mapping[str, Any]
"""Composed parameters: the plain tree ``config.read_params`` returns, or an OmegaConf node."""

_MISSING = object()


def lookup(cfg: Params, key: str, default: Any = None) -> Any:
    """The value at dotted ``key`` (``evaluate.progress``), or ``default`` where a part is absent.

    A plain tree is walked key by key; an OmegaConf node goes through ``OmegaConf.select`` (its
    interpolations resolve there).
    """
    if not isinstance(cfg, dict):
        from omegaconf import Container, OmegaConf

        return OmegaConf.select(cast(Container, cfg), key, default=default)
    node: Any = cfg
    for part in key.split("."):
        node = node.get(part, _MISSING) if isinstance(node, dict) else _MISSING
        if node is _MISSING:
            return default
    return node
