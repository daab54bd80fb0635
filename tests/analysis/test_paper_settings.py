"""The IndoCulture settings in the default config cover the paper's grid.

The paper scores both strategies (sentence completion by log-likelihood and multiple choice)
under all three location contexts (none, "Indonesia", the province); dropping one silently would
leave a column of its table without a number.
"""

from __future__ import annotations

import itertools

from omegaconf import OmegaConf

from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.paths import project_root


def test_indoculture_runs_every_context_for_both_strategies() -> None:
    cfg = OmegaConf.to_container(OmegaConf.load(project_root() / "params.yaml"), resolve=True)
    assert isinstance(cfg, dict)
    spec = BenchmarkSpec.from_config(cfg["benchmarks"]["indoculture"])
    grid = {(s.scoring, s.location) for s in spec.settings if s.language == "id"}
    wanted = set(itertools.product(("completion", "mcq"), ("none", "country", "province")))
    assert wanted <= grid, sorted(wanted - grid)
