"""DVC stage: check params.yaml's keys and values on every ``dvc repro``, even when all is cached.

Every stage checks the keys it loads, but when no stage needs to run DVC only says "up to date"
and a misspelt key passes. This stage is ``always_changed`` and feeds no other stage, so it runs
on every ``dvc repro`` / ``dvc exp run`` without invalidating anything: unknown keys, out-of-range
values, a params.yaml older than conf/ and a region set or benchmark whose ``digest`` is not its
values' (``cultureqa.core.params_digest``) fail it (rc 2); an applied experiment's values are named.
"""

from __future__ import annotations

import sys
from pathlib import Path

import _environment  # noqa: F401  (before pandas, cultureqa: one line outside the env)

from cultureqa.core.config import ParamsError, run_stage, setup_stage
from cultureqa.core.params_digest import DigestError
from cultureqa.core.params_digest import check as check_digest
from cultureqa.params_state import params_state

DIGESTED = ("region_sets", "benchmarks")
"""Params whose entries reach ``dvc.yaml`` as ``<key>.<name>.digest`` in place of their values."""


def check_digests(path: Path) -> None:
    """Each region set's and benchmark's ``digest`` matches its values: stages declare only that.

    This stage reruns on any change of params.yaml (a file dep), so a set edited by hand without
    recomposing fails here even when DVC sees no change in the stages that read it.
    """
    import yaml

    params = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for key in DIGESTED:
        for name, values in (params.get(key) or {}).items():
            try:
                check_digest(values, f"{key}.{name}")
            except DigestError as exc:
                raise ParamsError(str(exc)) from None


def main() -> int:
    setup_stage()
    state = params_state(Path.cwd())
    if state.kind == "stale":
        raise ParamsError(
            f"params.yaml is older than conf/ and differs from it ({state.describe()}); run "
            "`make params` (or `dvc exp run`, which composes conf/)"
        )
    check_digests(Path.cwd() / "params.yaml")
    if state.kind == "experiment":
        print(f"params.yaml: an applied experiment's values: {state.describe()}")
    else:
        print("params.yaml: keys and values match the conf/ schema")
    return 0


if __name__ == "__main__":
    sys.exit(run_stage(main))
