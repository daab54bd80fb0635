"""Hydra compositions of a ``conf/`` and its key schema, computed once per test process.

Composing ``conf/`` costs about a second of CPU (Hydra parses every YAML file of the defaults
tree into OmegaConf nodes on each call), and dozens of tests compose the project's ``conf/``
with the same overrides to get the params a stage would read. Those tests need the
composition, not another run of Hydra, so it is memoized here. Tests whose subject is
composing (a refused override, a changed ``conf/``) call :func:`cultureqa.compose.compose_params`
directly.

The memo's key holds a digest of every file under ``conf_dir``, so an edited ``conf/`` composes
afresh; each call returns a deep copy, so a test may change its copy. A composition that
raises is not memoized (it raises again on the next call).
"""

from __future__ import annotations

import copy
import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cultureqa.compose import compose_params
from cultureqa.core.params_schema import Node, conf_schema


def conf_digest(conf_dir: Path) -> str:
    """SHA-256 over the relative path and bytes of every file under ``conf_dir``."""
    digest = hashlib.sha256()
    for path in sorted(p for p in conf_dir.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(conf_dir)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def composed(conf_dir: Path, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """``compose_params(conf_dir, overrides)``, composed once per process and ``conf_dir`` state."""
    conf_dir = conf_dir.resolve()
    return copy.deepcopy(_composed(conf_dir, tuple(overrides), conf_digest(conf_dir)))


def schema(conf_dir: Path) -> Node:
    """``conf_schema(conf_dir)``, built once per process and ``conf_dir`` state."""
    conf_dir = conf_dir.resolve()
    return copy.deepcopy(_schema(conf_dir, conf_digest(conf_dir)))


@functools.cache
def _composed(conf_dir: Path, overrides: tuple[str, ...], digest: str) -> dict[str, Any]:
    return compose_params(conf_dir, list(overrides))


@functools.cache
def _schema(conf_dir: Path, digest: str) -> Node:
    return conf_schema(conf_dir)
