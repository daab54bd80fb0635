"""A short digest of a composed config's values, declared in ``dvc.yaml`` in their place.

DVC re-reads and re-writes the whole ``dvc.lock`` after every stage, and each declared params key
is stored there with its values: a region set's lists (indicators, facts, templates) were 8-9 KB
in each of the six two-hop entries, 68 KB of the lock, and a benchmark config about 1.4 KB in each
of the stages that read it (docs/measured.md). A composed region set or benchmark carries
``digest``, a hash of its other values computed when ``conf/`` is composed (the
``${cultureqa_digest:}`` resolver in ``conf/region_set/*.yaml`` and ``conf/benchmark/*.yaml``,
registered for ``make params``, ``python -m cultureqa.compose`` and, through the Hydra plugin,
``dvc exp run -S``), so the stages declare ``region_sets.<set>.digest`` or
``benchmarks.<name>.digest`` and still rerun on any change of its values (a set whose source is a
benchmark carries that benchmark's digest among its own values, ``source.benchmark_digest``). A
params.yaml edited by hand without recomposing would leave the digest behind: :func:`check`
refuses such a config in every stage that reads it and in ``params_check``, which reruns on any
change of params.yaml.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

KEY = "digest"
RESOLVER = "cultureqa_digest"


class DigestError(ValueError):
    """A composed mapping's ``digest`` is missing or does not match its values."""


def digest(values: Mapping[str, Any]) -> str:
    """SHA-256 (16 hex digits) of every value but ``digest`` itself, as canonical JSON.

    ``values`` is a plain mapping or an OmegaConf node (``load_params``), resolved first.
    """
    if type(values).__module__.startswith("omegaconf"):  # not imported where params are plain
        from omegaconf import OmegaConf

        values = OmegaConf.to_container(values, resolve=True)  # type: ignore[assignment]
    rest = {str(k): v for k, v in values.items() if k != KEY}
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def check(values: Mapping[str, Any], where: str) -> None:
    """Raise :class:`DigestError` unless ``values[digest]`` is the digest of the other values."""
    want, got = digest(values), values.get(KEY)
    if got is None:  # a config written by hand without the line: recomposing cannot help
        raise DigestError(
            f"params.yaml {where}: no digest; its config in conf/ needs the line "
            f"`{KEY}: ${{{RESOLVER}:}}` (DVC reruns its stages on that hash), then `make params`"
        )
    if got != want:
        raise DigestError(
            f"params.yaml {where}: digest {got}, but its values give {want} (edited without "
            "recomposing?); run `make params` or `dvc exp run -S ...`, which compose conf/"
        )


def _resolve(*, _parent_: Any) -> str:
    """The resolver: the digest of the mapping that holds the key, its interpolations resolved."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    values = {}
    for key in _parent_:
        if key == KEY:
            continue
        value = _parent_[key]
        if isinstance(value, DictConfig | ListConfig):
            value = OmegaConf.to_container(value, resolve=True)
        values[str(key)] = value
    return digest(values)


def register() -> None:
    """Register ``${cultureqa_digest:}`` (region sets, benchmarks) once per process."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, _resolve)
