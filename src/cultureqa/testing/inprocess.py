"""Run a stage script's ``main`` in the test process, as DVC would run it, minus the process.

A stage process pays its imports before its first line of work: an evaluate stage on the
batch path imports litellm (about 3 of its 4.7 CPU s on six items). A test whose subject is
what the stage writes (predictions, run records, the store, a fake server's log), not the
process's exit, start-up or death, calls the stage here instead; the worker imports each
library once for every such test. Tests where the exit code, the one-line ``error:`` on
stderr or a killed process is the subject keep a real process (at least one per entry point).

The call goes through :func:`cultureqa.core.config.run_stage`, the wrapper the script's
``__main__`` uses, so known errors still become exit code 2 and one ``error:`` line; it runs
in the workspace as cwd with the stage's environment (:func:`stage_env`) and restores both.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import runpy
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path

from cultureqa.core.config import run_stage


@cache
def _main(script: Path) -> Callable[[list[str]], int]:
    """The script's ``main`` (its module body runs once per test process, not per call)."""
    stages = str(script.parent)
    if stages not in sys.path:  # `import _environment`, as `python stages/x.py` finds it
        sys.path.insert(0, stages)
    main: Callable[[list[str]], int] = runpy.run_path(str(script), run_name="stage")["main"]
    return main


@contextlib.contextmanager
def _in(cwd: Path, env: Mapping[str, str]) -> Iterator[None]:
    """``cwd`` and exactly ``env`` as the process's, both restored after.

    Also the ``cultureqa`` logger's level and the root logger's handlers, which
    :func:`cultureqa.core.config.setup_stage` sets for a stage process (``CULTUREQA_LOG_LEVEL``):
    left set, a later test in this process would see the stage's level, not its own.
    """
    ours, root = logging.getLogger("cultureqa"), logging.getLogger()
    before_level, before_handlers = ours.level, list(root.handlers)
    before_env, before_cwd = dict(os.environ), Path.cwd()
    wanted = dict(env)  # a copy: ``env`` may be os.environ itself
    os.environ.clear()
    os.environ.update(wanted)
    os.chdir(cwd)
    try:
        yield
    finally:
        ours.setLevel(before_level)
        root.handlers[:] = before_handlers
        os.chdir(before_cwd)
        os.environ.clear()
        os.environ.update(before_env)


def run_stage_inprocess(
    script: Path, argv: list[str], cwd: Path, env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, script, *argv], cwd=cwd, env=env)``'s result, in this process.

    stdout and stderr are what the stage printed through ``sys.stdout``/``sys.stderr``
    (log records go to the test process's own logging, as in any in-process call).
    """
    main = _main(script.resolve())
    return call_inprocess(lambda: run_stage(lambda: main(argv)), [str(script), *argv], cwd, env)


def call_inprocess(
    call: Callable[[], int], args: list[str], cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``call()``'s exit code and what it printed, run in ``cwd`` (and ``env``, when given).

    For an entry point whose ``main`` already turns errors into exit codes (``cultureqa.cli``'s
    ``main`` goes through :func:`run_stage`); ``args`` only names the call in the result.
    """
    out, err = io.StringIO(), io.StringIO()
    with (
        _in(cwd, dict(os.environ) if env is None else env),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = call()
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())
