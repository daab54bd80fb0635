"""One table across DVC experiments: headline accuracy per benchmark, and the change to a baseline.

``dvc exp show --json`` lists the experiments (the workspace, the commit they branch from and every
experiment on it) with their params; the predictions of a roster slot are read at each
experiment's revision through DVC (``DVCFileSystem``), so intervals come from items, not from
rounded metrics:

- **headline**: the slot's accuracy over every scored row of the benchmark (all settings, prompts,
  languages or seeds), with a 95% t-interval over *items* (each item's mean over its rows): rows
  of one item are not independent, items are.
- **Δ**: the experiment minus the baseline experiment. Where items match (same ids), a paired
  95% interval over the per-item differences (``scipy.stats.ttest_rel``); otherwise Welch's
  interval over the two item sets, marked ``unpaired``.

A cell whose predictions are not available at that revision (not run, or not in the DVC cache:
``dvc pull``) reads ``n/a``, never a number from elsewhere.
"""

from __future__ import annotations

import io
import json
import subprocess
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

NOT_AVAILABLE = "n/a"
"""The cell of a benchmark whose predictions the experiment does not have (not run, or not in the
local DVC cache: ``dvc pull``)."""
UNITS = {"cases": "case_id", "twohop": "case_id"}
"""Item id column per benchmark family (default ``item_id``)."""


@dataclass(frozen=True)
class Experiment:
    """One row of the table: a DVC experiment, the commit it branches from, or the workspace."""

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

    def text(self, signed: bool = False) -> str:
        """``0.352 ± 0.051`` (t-intervals are symmetric); ``+`` sign and ``†`` if unpaired."""
        if np.isnan(self.low):
            return f"{self.value:.3f} (n={self.n})"
        half = (self.high - self.low) / 2
        mark = "†" if self.note.startswith("unpaired") else ""
        return f"{self.value:{'+' if signed else ''}.3f} ± {half:.3f}{mark}"


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
    done = subprocess.run(
        ["dvc", "exp", "show", "--json", "--no-pager"],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"dvc exp show failed: {done.stderr.strip()[-500:]}")
    return experiments(json.loads(done.stdout))


def prediction_files(params: Mapping[str, Any], slot: str) -> Iterator[tuple[str, str]]:
    """``(benchmark, path)`` of every predictions file of ``slot`` an experiment's params imply."""
    for name in (params.get("evaluate") or {}).get("benchmarks") or []:
        yield name, f"data/eval/{name}/{slot}/predictions.parquet"
    mocqa = params.get("mocqa_eval") or {}
    if slot in (mocqa.get("roster") or []):
        for prompt in mocqa.get("prompts") or []:
            yield "mocqa", f"data/eval/mocqa/{slot}/{prompt}/predictions.parquet"
    if slot in ((params.get("cases") or {}).get("roster") or []):
        yield "cases", f"data/eval/cases/{slot}/predictions.parquet"
    twohop = params.get("twohop") or {}
    if slot == (twohop.get("hop") or {}).get("model"):  # the two-hop items as built (clue shown)
        yield "twohop", f"{(twohop.get('paths') or {}).get('build')}/hop/clue/predictions.parquet"


def item_scores(root: Path, exp: Experiment, slot: str) -> dict[str, pd.Series | str]:
    """Per benchmark: each item's mean correctness, or why the predictions cannot be read."""
    frames: dict[str, list[pd.DataFrame]] = {}
    missing: dict[str, str] = {}
    fs = None
    for bench, path in prediction_files(exp.params, slot):
        try:
            if exp.rev is None:
                frame = pd.read_parquet(root / path)
            else:
                if fs is None:
                    from dvc.fs import DVCFileSystem

                    fs = DVCFileSystem(repo=str(root), rev=exp.rev)
                with fs.open(path, mode="rb") as fh:
                    frame = pd.read_parquet(io.BytesIO(fh.read()))
        except (OSError, KeyError):  # not run, or not in the local DVC cache
            missing[bench] = NOT_AVAILABLE
            continue
        frames.setdefault(bench, []).append(frame)
    out: dict[str, pd.Series | str] = {}
    for bench, _ in prediction_files(exp.params, slot):
        if bench in missing or bench in out:  # a benchmark with one file missing is n/a
            out.setdefault(bench, missing.get(bench, ""))
            continue
        rows = pd.concat(frames[bench], ignore_index=True)
        unit = UNITS.get(bench, "item_id")
        out[bench] = rows.groupby(rows[unit].astype(str))["correct"].mean().astype(float)
    return out


def estimate(scores: pd.Series) -> Estimate:
    """Mean over items with a 95% t-interval."""
    values = scores.to_numpy(float)
    if len(values) < 2:
        return Estimate(
            float(values.mean()) if len(values) else np.nan, np.nan, np.nan, len(values)
        )
    low, high = stats.ttest_1samp(values, 0.0).confidence_interval(0.95)
    return Estimate(float(values.mean()), float(low), float(high), len(values))


def difference(new: pd.Series, old: pd.Series) -> Estimate:
    """``new − old``: paired over matching items, else Welch over both item sets."""
    common = new.index.intersection(old.index)
    if len(common) >= 2 and len(common) == len(new) == len(old):
        a, b = new.loc[common].to_numpy(float), old.loc[common].to_numpy(float)
        if np.allclose(a, b):
            return Estimate(0.0, 0.0, 0.0, len(common), f"paired, n={len(common)}")
        low, high = stats.ttest_rel(a, b).confidence_interval(0.95)
        note = f"paired, n={len(common)}"
        return Estimate(float((a - b).mean()), float(low), float(high), len(common), note)
    a, b = new.to_numpy(float), old.to_numpy(float)
    low, high = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    note = f"unpaired, n={len(a)} vs {len(b)}"
    return Estimate(float(a.mean() - b.mean()), float(low), float(high), len(a), note)


@dataclass(frozen=True)
class Comparison:
    """The table (one row per experiment) and what its cells mean."""

    rows: list[dict[str, Any]]
    """Per experiment: ``experiment``, ``<slot>.id``, ``prompt``, and per benchmark an
    :class:`Estimate` (or ``n/a``) and its difference to the baseline (or a word)."""
    benchmarks: list[str]
    baseline: str | None
    slot: str


def compare(
    root: Path, rows: Sequence[Experiment], baseline: str | None, slot: str = "model"
) -> Comparison:
    """Headline per benchmark and Δ to ``baseline`` for every experiment in ``rows``."""
    scores = {exp.name: item_scores(root, exp, slot) for exp in rows}
    base = _baseline(rows, baseline, scores)
    benches = list(dict.fromkeys(b for per in scores.values() for b in per))
    table = []
    for exp in rows:
        row: dict[str, Any] = {"experiment": exp.name, **_swept(exp.params, slot)}
        for bench in benches:
            mine = scores[exp.name].get(bench, NOT_AVAILABLE)
            ref = scores[base].get(bench) if base else None
            row[bench] = estimate(mine) if isinstance(mine, pd.Series) else mine
            row[f"{bench} Δ"] = _delta(mine, ref, exp.name == base)
        table.append(row)
    return Comparison(table, benches, base, slot)


def as_frame(result: Comparison, text: bool) -> pd.DataFrame:
    """Cells as text (``0.352 ± 0.051``) or as numbers (value, CI bounds, items, pairing)."""
    out = []
    for row in result.rows:
        flat: dict[str, Any] = {}
        for key, cell in row.items():
            if not isinstance(cell, Estimate):
                flat[key] = cell
            elif text:
                flat[key] = cell.text(signed=key.endswith(" Δ"))
            else:
                flat |= {key: cell.value, f"{key} ci_low": cell.low}
                flat |= {f"{key} ci_high": cell.high, f"{key} n": cell.n}
                flat |= {f"{key} pairing": cell.note} if cell.note else {}
        out.append(flat)
    return pd.DataFrame(out)


def render(result: Comparison) -> str:
    """A padded markdown table (pastes into a paper's draft, reads in a 160-column terminal)."""
    frame = as_frame(result, text=True).rename(columns=lambda c: "Δ" if c.endswith(" Δ") else c)
    cells = [list(map(str, frame.columns)), *frame.astype(str).to_numpy().tolist()]
    widths = [max(len(r[i]) for r in cells) for i in range(len(frame.columns))]
    lines = ["| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |"
             for r in cells]  # fmt: skip
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    base = result.baseline or "(none: no experiment with predictions)"
    note = (
        f"Roster slot `{result.slot}`: accuracy over all its rows per benchmark ± 95% CI "
        f"(t over items); Δ = experiment − {base}, paired over matching items († unpaired, Welch); "
        f"{NOT_AVAILABLE}: no predictions at that revision."
    )
    return "\n".join([*lines, "", *textwrap.wrap(note, 100)]) + "\n"


def _baseline(
    rows: Sequence[Experiment], wanted: str | None, scores: Mapping[str, Mapping[str, Any]]
) -> str | None:
    names = [r.name for r in rows]
    if wanted is not None:
        if wanted not in names:
            raise ValueError(f"--baseline {wanted!r} is not an experiment here: {names}")
        return wanted
    with_data = [n for n in names if n != "workspace" and any(
        isinstance(v, pd.Series) for v in scores[n].values())]  # fmt: skip
    return with_data[0] if with_data else None


def _delta(mine: Any, ref: Any, is_base: bool) -> Estimate | str:
    if is_base:
        return "(baseline)"
    if not isinstance(mine, pd.Series) or not isinstance(ref, pd.Series):
        return NOT_AVAILABLE
    return difference(mine, ref)


def _swept(params: Mapping[str, Any], slot: str) -> dict[str, str]:
    node: Any = params
    for part in slot.split("."):
        node = (node or {}).get(part) if isinstance(node, Mapping) else None
    model = node.get("id") if isinstance(node, Mapping) else None
    prompt = (params.get("prompt") or {}).get("style")
    return {f"{slot}.id": str(model), "prompt": str(prompt)}
