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

This module reads and pairs; what is measured comes from :mod:`cultureqa.runs.compare_data`
(experiments, cells, rows, the t-interval) and the text from
:mod:`cultureqa.runs.compare_render`. Their public names are importable from here too.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from scipy import stats

from cultureqa.runs.compare_data import (
    ALPHA,
    DIFFERENT,
    MARGIN,
    NO_COMMON,
    NOT_AVAILABLE,
    SAME,
    UNDECIDED,
)
from cultureqa.runs.compare_data import NOT_VARIED as NOT_VARIED
from cultureqa.runs.compare_data import SHARED as SHARED
from cultureqa.runs.compare_data import Cell as Cell
from cultureqa.runs.compare_data import Estimate as Estimate
from cultureqa.runs.compare_data import Experiment as Experiment
from cultureqa.runs.compare_data import Measured as Measured
from cultureqa.runs.compare_data import cells as cells
from cultureqa.runs.compare_data import estimate as estimate
from cultureqa.runs.compare_data import experiments as experiments
from cultureqa.runs.compare_data import item_means as item_means
from cultureqa.runs.compare_data import measure as measure
from cultureqa.runs.compare_data import read_show as read_show
from cultureqa.runs.compare_render import as_frame as as_frame
from cultureqa.runs.compare_render import render as render
from cultureqa.runs.exps import flatten


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
