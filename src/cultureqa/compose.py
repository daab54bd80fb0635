"""Compose ``conf/`` into the params DVC would write, the way ``dvc exp run`` does it.

DVC calls Hydra's compose API, resolves interpolations and dumps YAML; doing the same here lets
``make params`` refresh params.yaml and lets a test prove the committed file is current.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf


def compose_params(conf_dir: Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """The resolved composition of ``conf_dir/config.yaml`` with Hydra overrides."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(conf_dir.resolve()), version_base=None):
        cfg = compose(config_name="config", overrides=overrides or [])
    OmegaConf.resolve(cfg)
    container = OmegaConf.to_container(cfg)
    assert isinstance(container, dict)
    return {str(k): v for k, v in container.items()}


def main() -> int:
    """Print the composed params as YAML (``python -m cultureqa.compose [overrides...]``)."""
    params = compose_params(Path("conf"), sys.argv[1:])
    sys.stdout.write(OmegaConf.to_yaml(OmegaConf.create(params)))  # what DVC writes
    return 0


if __name__ == "__main__":
    sys.exit(main())
