"""DVC stage: check params.yaml's keys and values on every ``dvc repro``, even when all is cached.

Every stage checks the keys it loads, but when no stage needs to run DVC only says "up to date"
and a misspelt key passes. This stage is ``always_changed`` and feeds no other stage, so it runs
on every ``dvc repro`` / ``dvc exp run`` without invalidating anything: unknown keys, out-of-range
values and a params.yaml older than conf/ fail it (rc 2); an applied experiment's values are named.
"""

from __future__ import annotations

import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.config import ParamsError, run_stage, setup_stage
from cultureqa.params_state import params_state


def main() -> int:
    setup_stage()
    state = params_state(Path.cwd())
    if state.kind == "stale":
        raise ParamsError(
            f"params.yaml is older than conf/ and differs from it ({state.describe()}); run "
            "`make params` (or `dvc exp run`, which composes conf/)"
        )
    if state.kind == "experiment":
        print(f"params.yaml: an applied experiment's values: {state.describe()}")
    else:
        print("params.yaml: keys and values match the conf/ schema")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
