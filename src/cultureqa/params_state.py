"""Is params.yaml what conf/ composes, an applied experiment, or stale (issue 25 item 9)?

``dvc exp run`` composes conf/ plus its ``-S`` overrides into params.yaml and ``dvc exp apply``
writes an experiment's params back; plain ``dvc repro`` reads params.yaml as it is. So a
params.yaml that differs from conf/ is one of two things, told apart by which was written last:

- conf/ was edited after params.yaml was written: params.yaml is **stale** (``make params``);
- params.yaml was written after conf/ (``dvc exp run``, ``dvc exp apply``, an edit): it holds an
  **applied experiment's values**, which ``make repro`` runs and ``make params`` keeps unless
  told ``FORCE=1`` (it names every value it replaces).

Unknown keys and out-of-range values are a third, separate error (:func:`config.load_params`),
checked first, whatever the timestamps say.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from cultureqa.compose import compose_params
from cultureqa.core.config import load_params


@dataclass(frozen=True)
class ParamsState:
    """How params.yaml relates to conf/ (fresh, stale, experiment) and where they differ."""

    kind: str  # "fresh" | "stale" | "experiment"
    differences: list[str]

    def describe(self, limit: int = 5) -> str:
        """The differing keys with both values, ``key: params.yaml value (conf/ value)``."""
        shown = "; ".join(self.differences[:limit])
        more = f" (+{len(self.differences) - limit} more)" if len(self.differences) > limit else ""
        return f"{shown}{more}"


def params_state(root: Path) -> ParamsState:
    """Check keys and ranges (raises), then compare params.yaml with the composed conf/."""
    path = root / "params.yaml"
    load_params(path)  # unknown keys, missing keys and out-of-range values: ParamsError/TypeError
    current = OmegaConf.to_container(OmegaConf.load(path))
    composed = compose_params(root / "conf")
    assert isinstance(current, dict)
    differences = list(_differences(current, composed))
    if not differences:
        return ParamsState("fresh", [])
    newest_conf = max(p.stat().st_mtime for p in (root / "conf").rglob("*.yaml"))
    kind = "stale" if newest_conf > path.stat().st_mtime else "experiment"
    return ParamsState(kind, differences)


def _differences(ours: Any, theirs: Any, prefix: str = "") -> Iterator[str]:
    if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
        for key in sorted({*ours, *theirs}, key=str):
            name = f"{prefix}{key}"
            if key not in theirs:
                yield f"{name}: {ours[key]!r} (not in conf/)"
            elif key not in ours:
                yield f"{name}: absent ({theirs[key]!r} in conf/)"
            else:
                yield from _differences(ours[key], theirs[key], f"{name}.")
    elif ours != theirs:
        yield f"{prefix.rstrip('.')}: {ours!r} (conf/: {theirs!r})"
