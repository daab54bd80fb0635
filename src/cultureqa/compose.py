"""Compose ``conf/`` into the params DVC would write, the way ``dvc exp run`` does it.

DVC calls Hydra's compose API, resolves interpolations and dumps YAML; doing the same here lets
``make params`` refresh params.yaml and lets a test prove the committed file is current.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf


def compose_params(conf_dir: Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """The resolved composition of ``conf_dir/config.yaml`` with Hydra overrides.

    Raises:
        OverrideError: Hydra refused; the message is one line naming the nearest valid names.
    """
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    from cultureqa.overrides import OverrideError, explain

    try:
        with initialize_config_dir(config_dir=str(conf_dir.resolve()), version_base=None):
            cfg = compose(config_name="config", overrides=overrides or [])
    except HydraException as exc:
        raise OverrideError(explain(exc, overrides or [], conf_dir)) from exc
    OmegaConf.resolve(cfg)
    container = OmegaConf.to_container(cfg)
    assert isinstance(container, dict)
    return {str(k): v for k, v in container.items()}


def main(argv: list[str] | None = None) -> int:
    """Print the composed params as YAML (``python -m cultureqa.compose [overrides...]``).

    A bad override or config is one ``error:`` line with exit code 2, never a traceback.
    """
    parser = argparse.ArgumentParser(
        prog="python -m cultureqa.compose",
        description="Compose conf/ into the params.yaml `dvc exp run` writes; print it as YAML.",
    )
    parser.add_argument(
        "overrides", nargs="*", metavar="OVERRIDE",
        help="Hydra overrides as in `dvc exp run -S` (model=gpt_4o, evaluate.progress=false)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from cultureqa.overrides import OverrideError

    try:
        params = compose_params(Path("conf"), args.overrides)
    except OverrideError as exc:
        print(f"error: cannot compose conf/: {exc}", file=sys.stderr)
        return 2
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"error: cannot compose conf/ with {args.overrides}: {first}", file=sys.stderr)
        return 2
    sys.stdout.write(OmegaConf.to_yaml(OmegaConf.create(params)))  # what DVC writes
    return 0


if __name__ == "__main__":
    sys.exit(main())
