"""What ``make compare`` compares: the experiments, their cells and the rows each one measured.

Loading and pairing for :mod:`cultureqa.runs.compare`: ``dvc exp show --json`` gives the
experiments and their params; :func:`cells` says which predictions files make each family ×
prompt cell of a roster slot; :func:`measure` reads them at the experiment's revision (through
DVC, or from disk for the workspace) down to one row per item × setting/seed; :func:`estimate`
is the headline's mean and 95% t-interval over items, the one ``make compare``, ``cultureqa
headline`` and the MLflow parent runs share. The readings of a Δ are in
:mod:`cultureqa.runs.compare`, the rendering in :mod:`cultureqa.runs.compare_render`.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from cultureqa.runs.exps import read_show as exp_show_json

NOT_AVAILABLE = "n/a"
"""The cell of a benchmark whose predictions the experiment does not have (not run, or not in the
local DVC cache: ``dvc pull``)."""
NOT_VARIED = "not varied"
"""The Δ of a family that the experiments' differences did not reach (the note says which)."""
NO_COMMON = "no common items"
ALPHA = 0.05
"""Family-wise error of the table's Δ readings (Holm over every Δ)."""
MARGIN = 0.05
"""The Δ margin when params.yaml declares none (``evaluate.compare_margin``); the legend says so."""
DIFFERENT, SAME, UNDECIDED = "difference", "no difference beyond the margin", "inconclusive"
SHARED = "baseline, same settings"
"""Column: the baseline's accuracy over the rows a Δ is paired on, where that is fewer settings
than the baseline ran (a cot row runs 4 of IndoCulture's 7 settings: its accuracy beside the
baseline's over all 7 would not compare like with like)."""


@dataclass(frozen=True)
class Experiment:
    """One row source: a DVC experiment, the commit it branches from, or the workspace."""

    name: str
    rev: str | None
    """Git revision; None for the workspace (files read from disk)."""
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Estimate:
    """A mean with its 95% interval and the number of items behind it."""

    value: float
    low: float
    high: float
    n: int
    note: str = ""
    p_difference: float = float("nan")
    """Two-sided paired t-test p (a Δ only), before the table's Holm adjustment."""
    p_equivalence: float = float("nan")
    """TOST p that |Δ| < margin (a Δ only), before the table's Holm adjustment."""
    sd: float = float("nan")
    """SD of the per-item differences (a Δ only): what the n that would decide it rests on."""

    def text(self, signed: bool = False) -> str:
        """``0.352 ± 0.051`` (t-intervals are symmetric), ``+`` sign for a difference."""
        if np.isnan(self.low):
            return f"{self.value:{'+' if signed else ''}.3f} (n={self.n})"
        half = (self.high - self.low) / 2
        return f"{self.value:{'+' if signed else ''}.3f} ± {half:.3f}"


@dataclass(frozen=True)
class Cell:
    """One family × prompt of one experiment: where its predictions are and what decides them."""

    column: str
    """``indoculture``, ``mocqa·cot``, ``cases``: one section of the table."""
    family: str
    prompt: str
    """The prompt the family actually used in this experiment."""
    paths: tuple[str, ...]
    keys: tuple[str, ...]
    """The columns that identify a measured row; the first is the item."""
    stage: str
    """The evaluate stage in ``dvc.yaml`` whose ``params`` decide the cell."""
    item: Mapping[str, str]
    """How ``${item…}`` resolves in that stage's params."""


@dataclass(frozen=True)
class Measured:
    """The rows of a cell one experiment has (or why it has none)."""

    cell: Cell
    rows: pd.DataFrame | None
    missing: str = ""

    @property
    def settings(self) -> list[str]:
        """The settings (or seeds) these rows cover: the second key, when there is one."""
        if self.rows is None or len(self.cell.keys) < 2:
            return []
        return sorted(self.rows[self.cell.keys[1]].astype(str).unique())


def experiments(show: Sequence[Mapping[str, Any]]) -> list[Experiment]:
    """The rows of ``dvc exp show --json``: workspace, baseline commits and their experiments."""
    rows = []
    for entry in show:
        rev = None if entry["rev"] == "workspace" else str(entry["rev"])
        name = "workspace" if rev is None else str(entry.get("name") or rev[:7])
        rows.append(Experiment(name, rev, _params(entry.get("data"))))
        for exp in entry.get("experiments") or []:
            for run in exp.get("revs") or []:
                label = str(run.get("name") or exp.get("name") or run["rev"][:7])
                rows.append(Experiment(label, str(run["rev"]), _params(run.get("data"))))
    return rows


def _params(data: Mapping[str, Any] | None) -> dict[str, Any]:
    files = (data or {}).get("params") or {}
    return dict((files.get("params.yaml") or {}).get("data") or {})


def read_show(root: Path) -> list[Experiment]:
    """``dvc exp show --json`` in ``root``, parsed."""
    return experiments(exp_show_json(root))


def cells(params: Mapping[str, Any], slot: str) -> Iterator[Cell]:
    """Every cell of ``slot`` an experiment's params imply, with the prompt each family used."""
    style = str((params.get("prompt") or {}).get("style"))
    for name in (params.get("evaluate") or {}).get("benchmarks") or []:
        path = f"data/eval/{name}/{slot}/predictions.parquet"
        item = {"benchmark": str(name), "model": slot}
        yield Cell(str(name), str(name), style, (path,), ("item_id", "setting"), "evaluate", item)
    mocqa = params.get("mocqa_eval") or {}
    if slot in (mocqa.get("roster") or []):
        for prompt in mocqa.get("prompts") or []:
            path = f"data/eval/mocqa/{slot}/{prompt}/predictions.parquet"
            item = {"model": slot, "prompt": str(prompt)}
            yield Cell(f"mocqa·{prompt}", "mocqa", str(prompt), (path,), ("item_id",),
                       "mocqa_evaluate", item)  # fmt: skip
    if slot in ((params.get("cases") or {}).get("roster") or []):
        path = f"data/eval/cases/{slot}/predictions.parquet"
        yield Cell("cases", "cases", "own", (path,), ("case_id", "seed"), "cases_evaluate",
                   {"": slot})  # fmt: skip
    hop = (params.get("twohop") or {}).get("hop") or {}
    if slot == hop.get("model"):  # the reported set's items as built (clue shown), one prompt
        twohop = params.get("twohop") or {}
        build = (twohop.get("paths") or {}).get("build")
        path = f"{build}/{twohop.get('region_set')}/hop/clue/predictions.parquet"
        yield Cell("twohop", "twohop", str(hop.get("prompt") or "own"), (path,), ("case_id",),
                   "twohop_hop", {"": str(twohop.get("region_set"))})  # fmt: skip


class _Reader:
    """Predictions at one revision: from disk for the workspace, through DVC otherwise."""

    def __init__(self, root: Path, rev: str | None) -> None:
        self.root, self.rev = root, rev
        self._fs: Any = None

    def read(self, path: str) -> pd.DataFrame:
        if self.rev is None:
            return pd.read_parquet(self.root / path)
        if self._fs is None:
            from dvc.fs import DVCFileSystem

            self._fs = DVCFileSystem(repo=str(self.root), rev=self.rev)
        with self._fs.open(path, mode="rb") as fh:
            return pd.read_parquet(io.BytesIO(fh.read()))


def measure(root: Path, exp: Experiment, slot: str) -> dict[str, Measured]:
    """Per cell column: the rows (keys and correctness) the experiment has, or why not."""
    from dvc_data.index.index import DataIndexError  # a directory output not in the cache

    reader, out = _Reader(root, exp.rev), {}
    for cell in cells(exp.params, slot):
        try:
            frames = [reader.read(path) for path in cell.paths]
        except (OSError, KeyError, DataIndexError):  # not run, or not in the local DVC cache
            out[cell.column] = Measured(cell, None, NOT_AVAILABLE)
            continue
        rows = pd.concat(frames, ignore_index=True)
        keyed = rows[[*cell.keys, "correct"]].astype({k: str for k in cell.keys})
        keyed = keyed.groupby(list(cell.keys), sort=True)["correct"].mean().astype(float)
        out[cell.column] = Measured(cell, keyed.reset_index())
    return out


def estimate(scores: pd.Series) -> Estimate:
    """Mean over items with a 95% t-interval."""
    values = scores.to_numpy(float)
    if len(values) < 2:
        return Estimate(
            float(values.mean()) if len(values) else np.nan, np.nan, np.nan, len(values)
        )
    if np.ptp(values) == 0:  # all items alike: the interval is the point
        return Estimate(float(values[0]), float(values[0]), float(values[0]), len(values))
    low, high = stats.ttest_1samp(values, 0.0).confidence_interval(0.95)
    return Estimate(float(values.mean()), float(low), float(high), len(values))


def item_means(measured: Measured) -> pd.Series:
    """Each item's mean correctness over its rows."""
    assert measured.rows is not None
    unit = measured.cell.keys[0]
    return measured.rows.groupby(unit)["correct"].mean()
