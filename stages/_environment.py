"""First import of every stage script: one line, not a traceback, outside the project's env.

DVC runs each stage's ``python3`` from the caller's PATH. ``.venv/bin/dvc repro`` without an
activated environment therefore starts the system Python, which has neither cultureqa nor its
dependencies; say so, with the fix, before any import of them fails. Stage commands name
``python3``, not ``python``: every Unix install of Python 3 puts ``python3`` on PATH, many no
``python`` (Debian, Ubuntu), and there the shell's "python: not found" would come before this line.
"""

import importlib.util
import sys

_NEEDED = ("cultureqa", "pandas", "omegaconf")

if missing := [name for name in _NEEDED if importlib.util.find_spec(name) is None]:
    sys.stderr.write(
        f"error: {sys.executable} lacks {', '.join(missing)}: DVC runs stages with the `python3` "
        "on PATH; activate the project's environment first (`source .venv/bin/activate`), "
        "or run `make repro`\n"
    )
    sys.exit(2)
