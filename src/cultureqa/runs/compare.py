"""One table across DVC experiments that cannot mislead: like with like, or an empty cell and why.

``dvc exp show --json`` lists the experiments (the workspace, the commit they branch from and every
experiment on it) with their params; the predictions of a roster slot are read at each
experiment's revision through DVC (``DVCFileSystem``), so intervals come from items, not from
rounded metrics. Three rules keep a reader from comparing what was not measured alike:

- **cells per family, with the prompt it used.** A generic benchmark (IndoCulture) runs under the
  experiment's ``prompt.style``; ID-MoCQA runs *both* prompt styles in every experiment, so each
  style is its own cell (``mocqa·zero_shot``, ``mocqa·cot``); the cases benchmark has its own
  prompt. The headline is the slot's accuracy over the cell's rows with a 95% t-interval over
  *items* (each item's mean over its rows: rows of one item are not independent, items are).
- **Δ paired over the intersection.** ``experiment − baseline`` over the rows (item × setting, or
  item × shuffle seed) both measured, averaged per item, with ``ttest_rel``'s interval over those
  items; the number of items and of shared settings is shown. Under ``cot`` IndoCulture skips its
  completion settings (4 of 7 run), so a cot/zero_shot Δ covers the 4 both have.
- **empty where nothing changed.** When the params the family's evaluate stage reads (from
  ``dvc.yaml``) are equal in both experiments and the predictions are identical, the factor that
  separates the experiments did not reach that family: the Δ cell is empty and the note names the
  params that do differ.

Each Δ reads three ways: a **difference** (``ttest_rel`` p, Holm-adjusted over every Δ of the
table, below 0.05), **no difference beyond ± margin** (two one-sided paired t-tests, statsmodels
``ttost_paired``, at ``evaluate.compare_margin``, Holm-adjusted the same way), or
**inconclusive** with the number of items that would decide it (statsmodels ``tt_solve_power``,
80% power). A Δ whose interval covers 0 is never read as "no difference" on that alone.

A cell whose predictions are not available at that revision (not run, or not in the DVC cache:
``dvc pull``) reads ``n/a``, never a number from elsewhere. A clean workspace (same params and
predictions as its commit) is one row, not two.
"""

from __future__ import annotations

import io
import textwrap
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml
from scipy import stats

from cultureqa.runs.exps import flatten
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


def difference(new: Measured, old: Measured, margin: float = MARGIN) -> Estimate | str:
    """``new − old`` over the rows both measured, per item, paired (``ttest_rel``).

    The Δ carries the difference and equivalence (TOST at ``margin``) p-values that the
    table's reading (:func:`read_deltas`) adjusts together.

    Rows are matched on all keys (item × setting, item × seed), so a setting only one side ran
    never enters; the note says how many items and shared settings the Δ stands on.
    """
    assert new.rows is not None and old.rows is not None
    keys = list(new.cell.keys)
    both = new.rows.merge(old.rows, on=keys, suffixes=("_new", "_old"))
    if both.empty:
        return NO_COMMON
    per_item = both.groupby(keys[0])[["correct_new", "correct_old"]].mean()
    a, b = per_item["correct_new"].to_numpy(float), per_item["correct_old"].to_numpy(float)
    shared = sorted(both[keys[1]].unique()) if len(keys) > 1 else []
    note = f"paired, n={len(a)}"
    if shared and (len(shared) < len(new.settings) or len(shared) < len(old.settings)):
        note += f" over {len(shared)} shared {keys[1]}s"
    if len(a) < 2:
        return Estimate(float((a - b).mean()), np.nan, np.nan, len(a), note)
    if np.ptp(a - b) == 0:  # every item moved alike (or not at all): no spread, no t-interval
        moved = float((a - b).mean())
        return Estimate(moved, moved, moved, len(a), note + ", no spread: no test")
    from statsmodels.stats.weightstats import ttost_paired

    test = stats.ttest_rel(a, b)
    low, high = test.confidence_interval(0.95)
    p_same = float(ttost_paired(a, b, -margin, margin)[0])
    sd = float(np.std(a - b, ddof=1))
    return Estimate(float((a - b).mean()), float(low), float(high), len(a), note,
                    float(test.pvalue), p_same, sd)  # fmt: skip


def read_deltas(
    deltas: Sequence[Estimate], margin: float, alpha: float = ALPHA
) -> list[tuple[str, int | None]]:
    """Each Δ's reading and, where inconclusive, the items that would decide it.

    Holm (statsmodels ``multipletests``) runs over every Δ of the table, once for the
    difference tests and once for the equivalence tests; a Δ without a test (fewer than two
    items, no spread) is inconclusive and enters neither family.
    """
    from statsmodels.stats.multitest import multipletests
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    diff = np.array([d.p_difference for d in deltas], dtype=float)
    same = np.array([d.p_equivalence for d in deltas], dtype=float)
    tested = np.isfinite(diff) & np.isfinite(same)
    diff_adj, same_adj = np.full(diff.shape, np.nan), np.full(same.shape, np.nan)
    if tested.any():
        diff_adj[tested] = multipletests(diff[tested], alpha=alpha, method="holm")[1]
        same_adj[tested] = multipletests(same[tested], alpha=alpha, method="holm")[1]
    family = max(int(tested.sum()), 1)
    out: list[tuple[str, int | None]] = []
    for d, p_diff, p_same in zip(deltas, diff_adj, same_adj, strict=True):
        if p_diff < alpha:
            out.append((DIFFERENT, None))
        elif p_same < alpha:
            out.append((SAME, None))
        else:
            with warnings.catch_warnings():  # a power that never converges returns NaN: no n
                warnings.simplefilter("ignore", ConvergenceWarning)
                needed = _n_to_decide(d, margin, alpha / family)
            out.append((UNDECIDED, needed))
    return out


@dataclass(frozen=True)
class Comparison:
    """The table (one row per experiment × cell column) and what its cells mean."""

    rows: list[dict[str, Any]]
    """Per row: ``column``, ``experiment``, ``<slot>.id``, ``prompt``, ``settings``, ``accuracy``
    (:class:`Estimate` or ``n/a``), ``Δ`` (:class:`Estimate`, ``(baseline)``, ``not varied``…)
    and ``note``."""
    columns: list[str]
    baseline: str | None
    slot: str
    notes: dict[str, list[str]] = field(default_factory=dict)
    """Per column: why a Δ is empty, which prompt the family used."""
    folded: str = ""
    """``workspace = <commit>`` when the clean workspace was shown once."""
    spans: dict[str, str] = field(default_factory=dict)
    """Per column: what its ``settings`` count (``setting``, ``seed``)."""
    margin: float = MARGIN
    """The Δ equivalence margin the readings used."""
    margin_source: str = "default"
    """Where the margin came from (``evaluate.compare_margin`` or the default)."""


def compare(
    root: Path,
    rows: Sequence[Experiment],
    baseline: str | None,
    slot: str = "model",
    margin: float | None = None,
) -> Comparison:
    """Headline per cell and Δ to ``baseline`` (paired over shared rows) for every experiment.

    ``margin``: the Δ equivalence margin; None reads ``evaluate.compare_margin`` from the
    workspace's params.yaml (:data:`MARGIN` when it has none, said in the legend).
    """
    margin, margin_source = _margin(root) if margin is None else (margin, "given")
    measured = {exp.name: measure(root, exp, slot) for exp in rows}
    rows, folded = _fold_clean_workspace(rows, measured)
    base = _baseline(rows, baseline, measured)
    stages = _stage_params(root)
    columns = list(dict.fromkeys(c for exp in rows for c in measured[exp.name]))
    universe = {c: _settings_union(measured, c) for c in columns}
    table: list[dict[str, Any]] = []
    notes: dict[str, list[str]] = {c: [] for c in columns}
    by_name = {exp.name: exp for exp in rows}
    for column in columns:
        for exp in rows:
            mine = measured[exp.name].get(column)
            if mine is None:
                continue
            ref = measured[base].get(column) if base else None
            delta, why = _delta(exp, by_name.get(base or ""), mine, ref, stages, slot, margin)
            if why and why not in notes[column]:
                notes[column].append(why)
            table.append({
                "column": column, "experiment": exp.name, f"{slot}.id": _model_id(exp, slot),
                "prompt": mine.cell.prompt, "settings": _settings_text(mine, universe[column]),
                "accuracy": estimate(item_means(mine)) if mine.rows is not None else mine.missing,
                "Δ": delta, SHARED: _baseline_on_shared(mine, ref, delta),
                "note": delta.note if isinstance(delta, Estimate) else why,
            })  # fmt: skip
    spans = {c: m.cell.keys[1] for per in measured.values() for c, m in per.items()
             if len(m.cell.keys) > 1}  # fmt: skip
    deltas = [row for row in table if isinstance(row["Δ"], Estimate)]
    for row, (reading, needed) in zip(
        deltas, read_deltas([r["Δ"] for r in deltas], margin), strict=True
    ):
        row["reading"] = reading + (f" (n≈{needed} would decide)" if needed else "")
    for row in table:
        row.setdefault("reading", "")
        row["note"] = row.pop("note")  # the note stays the last column
    return Comparison(table, columns, base, slot, notes, folded, spans, margin, margin_source)


def _n_to_decide(delta: Estimate, margin: float, alpha: float) -> int | None:
    """Items at which the difference or the equivalence test would reject at 80% power.

    statsmodels ``tt_solve_power`` for a paired t-test of the observed Δ (two-sided) and for the
    binding one-sided test of TOST at the distance to the margin; the smaller n, or None where
    neither is defined (no spread, Δ on the margin, no convergence).
    """
    from statsmodels.stats.power import tt_solve_power

    if not (np.isfinite(delta.sd) and delta.sd > 0):
        return None
    needed = []
    if delta.value != 0:
        needed.append(tt_solve_power(abs(delta.value) / delta.sd, alpha=alpha, power=0.8))
    if abs(delta.value) < margin:
        distance = (margin - abs(delta.value)) / delta.sd
        needed.append(tt_solve_power(distance, alpha=alpha, power=0.8, alternative="larger"))
    finite = [float(n) for n in needed if np.isfinite(n)]
    return int(np.ceil(min(finite))) if finite else None


def _margin(root: Path) -> tuple[float, str]:
    """``evaluate.compare_margin`` of the workspace's params.yaml, and where it came from."""
    path = root / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    value = _at(params or {}, "evaluate.compare_margin")
    if value is None:
        return MARGIN, "default: params.yaml declares no evaluate.compare_margin"
    return float(value), "evaluate.compare_margin"


def _fold_clean_workspace(
    rows: Sequence[Experiment], measured: Mapping[str, Mapping[str, Measured]]
) -> tuple[list[Experiment], str]:
    """Drop the workspace when a revision has its params and the very same predictions.

    That is a clean workspace at its commit, or the workspace right after ``dvc exp run`` (it
    holds that experiment's results): one row, named after the revision, not two.
    """
    if not rows or rows[0].rev is not None:
        return list(rows), ""
    work = rows[0]
    for other in rows[1:]:
        if dict(other.params) == dict(work.params) and _same(measured[work.name],
                                                             measured[other.name]):  # fmt: skip
            return list(rows[1:]), f"workspace = {other.name} (same params and predictions)"
    return list(rows), ""


def _same(mine: Mapping[str, Measured], theirs: Mapping[str, Measured]) -> bool:
    if mine.keys() != theirs.keys() or all(m.rows is None for m in mine.values()):
        return False
    for column, m in mine.items():
        t = theirs[column]
        if (m.rows is None) != (t.rows is None):
            return False
        if m.rows is not None and t.rows is not None and not m.rows.equals(t.rows):
            return False
    return True


def _stage_params(root: Path) -> dict[str, list[str]]:
    """Each evaluate stage's ``params`` list from ``dvc.yaml`` (``${item…}`` still in place)."""
    path = root / "dvc.yaml"
    if not path.is_file():
        return {}
    stages = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("stages") or {}
    out = {}
    for name in ("evaluate", "mocqa_evaluate", "cases_evaluate", "twohop_hop"):
        body = stages.get(name) or {}
        body = body.get("do", body)
        out[name] = [str(p) for p in body.get("params") or [] if isinstance(p, str)]
    return out


def _resolve(template: str, item: Mapping[str, str]) -> str:
    for key, value in item.items():
        template = template.replace("${item." + key + "}" if key else "${item}", value)
    return template


def _at(params: Mapping[str, Any], dotted: str) -> Any:
    node: Any = params
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _delta(
    exp: Experiment,
    base: Experiment | None,
    mine: Measured,
    ref: Measured | None,
    stages: Mapping[str, list[str]],
    slot: str,
    margin: float = MARGIN,
) -> tuple[Estimate | str, str]:
    """The Δ cell and, where it is empty, the reason (one sentence for the section's notes)."""
    if base is None or exp.name == base.name:
        return ("(baseline)" if base else ""), ""
    if mine.rows is None or ref is None or ref.rows is None:
        return NOT_AVAILABLE, ""
    read = [_resolve(p, mine.cell.item) for p in stages.get(mine.cell.stage, [])]
    same_inputs = bool(read) and all(_at(exp.params, p) == _at(base.params, p) for p in read)
    if same_inputs and mine.rows.equals(ref.rows):
        differs = sorted(k for k, v in flatten("", exp.params, {}).items()
                         if flatten("", base.params, {}).get(k) != v)  # fmt: skip
        shown = ", ".join(differs[:3]) + (" …" if len(differs) > 3 else "")
        return NOT_VARIED, (
            f"{NOT_VARIED} ({exp.name}): it differs from {base.name} in {shown or 'nothing'}, "
            f"which {mine.cell.stage} does not read; same predictions"
        )
    found = difference(mine, ref, margin)
    return found, (f"{found}: {exp.name} and {base.name}" if isinstance(found, str) else "")


SHARED = "baseline, same settings"
"""Column: the baseline's accuracy over the rows a Δ is paired on, where that is fewer settings
than the baseline ran (a cot row runs 4 of IndoCulture's 7 settings: its accuracy beside the
baseline's over all 7 would not compare like with like)."""


def _baseline_on_shared(mine: Measured, ref: Measured | None, delta: Estimate | str) -> Any:
    """The baseline's accuracy over the keys both measured; "" where it left nothing out."""
    if not isinstance(delta, Estimate) or ref is None or ref.rows is None or mine.rows is None:
        return ""
    keys = list(mine.cell.keys)
    if len(keys) < 2 or set(ref.settings) <= set(mine.settings):
        return ""
    shared = ref.rows.merge(mine.rows[keys].drop_duplicates(), on=keys)
    return estimate(item_means(Measured(ref.cell, shared)))


def _settings_union(measured: Mapping[str, Mapping[str, Measured]], column: str) -> list[str]:
    found = {s for per in measured.values() if column in per for s in per[column].settings}
    return sorted(found)


def _settings_text(measured: Measured, universe: Sequence[str]) -> str:
    if measured.rows is None or len(measured.cell.keys) < 2:
        return ""
    return f"{len(measured.settings)}/{len(universe)}"


def _model_id(exp: Experiment, slot: str) -> str:
    node = _at(exp.params, slot)
    return str(node.get("id")) if isinstance(node, Mapping) else "None"


def _baseline(
    rows: Sequence[Experiment], wanted: str | None, measured: Mapping[str, Mapping[str, Measured]]
) -> str | None:
    names = [r.name for r in rows]
    if wanted is not None:
        if wanted not in names:
            raise ValueError(f"--baseline {wanted!r} is not an experiment here: {names}")
        return wanted
    with_data = [n for n in names if n != "workspace" and any(
        m.rows is not None for m in measured[n].values())]  # fmt: skip
    if with_data:
        return with_data[0]
    return names[0] if names and any(m.rows is not None for m in measured[names[0]].values()) \
        else None  # fmt: skip


PROMPT_NOTES = {
    "mocqa": "ID-MoCQA runs every prompt style of mocqa_eval.prompts in each experiment: "
    "prompt.style does not apply",
    "cases": "the cases benchmark has its own prompt: prompt.style does not apply",
}
"""Why a family's prompt is not the experiment's ``prompt.style``."""


def as_frame(result: Comparison, text: bool) -> pd.DataFrame:
    """Long format: one row per cell column × experiment; text cells or numbers with CI and n."""
    out = []
    for row in result.rows:
        flat: dict[str, Any] = {}
        for key, cell in row.items():
            if not isinstance(cell, Estimate):
                flat[key] = cell
            elif text:
                flat[key] = cell.text(signed=key == "Δ")
            else:
                flat |= {key: cell.value, f"{key} ci_low": cell.low}
                flat |= {f"{key} ci_high": cell.high, f"{key} n": cell.n}
        out.append(flat)
    return pd.DataFrame(out)


def render(result: Comparison, width: int = 160) -> str:
    """One padded markdown table per cell column, its notes under it; lines fit ``width``."""
    if not result.rows:
        return f"no predictions of roster slot `{result.slot}` in any experiment\n"
    frame = as_frame(result, text=True)
    if "note" in frame.columns:  # the reason of an empty Δ is a section note, not a cell
        frame.loc[frame["Δ"].astype(str) == NOT_VARIED, "note"] = "see below"
    base = result.baseline or "(none)"
    frame = frame.rename(columns={"Δ": f"Δ vs {base}", "accuracy": "accuracy ± 95% CI"})
    out: list[str] = []
    for column in result.columns:
        part = frame[frame["column"] == column].drop(columns=["column"])
        if part.empty:
            continue
        if not part["settings"].astype(str).str.len().any():
            part = part.drop(columns=["settings"])
        part = part.drop(columns=[SHARED])  # a note under the table: the table fits the width
        part = part.rename(columns={"settings": f"{result.spans.get(column, 'setting')}s"})
        out += [f"## {column}", "", *_table(part), ""]
        notes = _section_notes(result, column) + _shared_notes(result, column)
        for note in notes:
            out += _wrap(f"- {note}", width, indent="  ")
        out += [""] if notes else []
    legend = (
        f"Roster slot `{result.slot}`: accuracy over its rows ± 95% CI (t over items); "
        f"Δ = experiment − {base}, paired by item over the rows both measured (n items shown); "
        f"reading: {DIFFERENT} (paired t, Holm over the table's Δs, α = {ALPHA}), {SAME} "
        f"± {result.margin:g} ({result.margin_source}; TOST, Holm) or {UNDECIDED}; "
        f"settings (seeds) = run here / run by any experiment; {NOT_AVAILABLE}: no "
        f"predictions at that revision; {NOT_VARIED}: the experiments' differences do not "
        "reach this benchmark."
    )
    out += _wrap(legend, width)
    if result.folded:
        out.append(result.folded)
    return "\n".join(out) + "\n"


def _shared_notes(result: Comparison, column: str) -> list[str]:
    """Per row that ran fewer settings than the baseline: the baseline over the same ones."""
    span = result.spans.get(column, "setting")
    return [
        f"{row['experiment']} ran {row['settings'] or 'fewer'} {span}s: {result.baseline} over"
        f" the same ones is {row[SHARED].text()} (n={row[SHARED].n}),"
        " the accuracy its Δ is paired against"
        for row in result.rows
        if row["column"] == column and isinstance(row.get(SHARED), Estimate)
    ]


def _section_notes(result: Comparison, column: str) -> list[str]:
    family = column.split("·")[0]
    notes = [PROMPT_NOTES[family]] if family in PROMPT_NOTES else []
    return notes + result.notes.get(column, [])


def _table(frame: pd.DataFrame) -> list[str]:
    cells = [list(map(str, frame.columns)), *frame.astype(str).to_numpy().tolist()]
    widths = [max(len(r[i]) for r in cells) for i in range(len(frame.columns))]
    lines = ["| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |"
             for r in cells]  # fmt: skip
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return lines


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(text, min(width, 120), subsequent_indent=indent)
