"""Where the project root is, so stages work the same in the workspace and in DVC temp copies.

Queued DVC experiments run in ``.dvc/tmp/exps/tmpXXXX`` with ``DVC_ROOT`` pointing at the real
repository; shared state (MLflow database, response store) must live there, while stage inputs and
outputs stay relative to the working directory DVC gives the stage.
"""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    """The repository root: ``DVC_ROOT`` when DVC sets it, else the nearest ``pyproject.toml``."""
    env = os.environ.get("DVC_ROOT")
    if env:
        return Path(env).resolve()
    for parent in [Path.cwd(), *Path.cwd().parents]:
        if (parent / "pyproject.toml").exists() and (parent / "src" / "cultureqa").exists():
            return parent
    return Path.cwd().resolve()


def state_dir() -> Path:
    """Project-local, git-ignored state shared by every experiment (response store).

    A relative ``CULTUREQA_STATE_DIR`` is taken from the project root, not the working directory:
    queued experiments run in separate temp copies, and a store per copy would let two queue
    workers send the same prompt (``tests/test_scale_out.py``).
    """
    chosen = Path(os.environ.get("CULTUREQA_STATE_DIR") or ".cultureqa")
    return chosen if chosen.is_absolute() else project_root() / chosen


def user_cache_dir() -> Path:
    """Per-user cache shared across clones (converted model weights are ~1 GB)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cultureqa"
    return Path(os.environ.get("CULTUREQA_CACHE_DIR", default))
