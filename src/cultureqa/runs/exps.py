"""``make exps``: DVC experiments in a terminal, what differs and the model's headline first.

``dvc exp show`` lists every dep and the whole params.yaml; cut down with ``--drop`` it still
opened (200 columns) on a constant baseline metric and hid ``prompt.style`` and every metric of
the model under test behind ``…``. This view reads ``dvc exp show --json`` and puts first:

1. the experiment's name, then the params that differ between the experiments shown (a config
   group that differs is named by its ``id`` or ``style``, not by each of its leaves);
2. the headline metrics of the roster slot ``model`` (IndoCulture accuracy per setting, ID-MoCQA
   multi-hop per prompt, cases accuracy per shuffle seed and the seed gap), each under its
   benchmark's group header;
3. then the other slots' headline metrics, as far as the width allows.

Columns are added in that order while the table fits ``width`` (160); the last line names how
many were left out and how to see them (``make exps ALL=1``: every param and metric column).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WIDTH = 160
"""The width when the output is no terminal and ``COLUMNS`` is not set."""
SLOT = "model"
ALWAYS = ("model.id", "prompt.style")
"""What a sweep varies: shown even where every experiment has the same value."""
NAMED_BY = ("id", "style")
"""A config group (``model``, ``prompt``) that differs is shown by the first of these it has."""
SHORT = {"completion": "cmpl", "province": "prov", "country": "ctry", "indonesia": "indo"}
"""Words of setting names shortened in headers (the legend line spells them out)."""
GROUPS = {"indoculture": "IndoCulture accuracy", "mocqa": "ID-MoCQA multi-hop", "cases": "cases"}


@dataclass(frozen=True)
class Column:
    """One column: its group header (a benchmark, or '' for params), header and cells."""

    group: str
    header: str
    cells: list[str]
    key: str = ""
    """The full metric key (``indoculture.accuracy.model.mcq-none-id``) for CSV output."""

    @property
    def lines(self) -> tuple[str, str]:
        """The header on two rows: a setting ``completion-none-id`` as ``cmpl`` over ``none-id``."""
        if not self.group:
            return self.header, ""
        words = [SHORT.get(w, w) for w in self.header.split("-")]
        return words[0], "-".join(words[1:])

    @property
    def width(self) -> int:
        """Characters of the widest of header rows and cells."""
        return max(*(len(x) for x in self.lines), *(len(c) for c in self.cells), 1)


def read_show(root: Path) -> list[dict[str, Any]]:
    """``dvc exp show --json``: one entry per workspace/commit, experiments under each.

    ``make compare`` reads the same JSON (:func:`cultureqa.runs.compare.read_show`).
    """
    done = subprocess.run(
        ["dvc", "exp", "show", "--json", "--no-pager"],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"dvc exp show failed: {done.stderr.strip()[-500:]}")
    return list(json.loads(done.stdout))


def rows_of(show: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(name, flat params, flat metrics by file)`` for the workspace, commits and experiments."""
    out = []
    for entry in show:
        name = "workspace" if entry["rev"] == "workspace" else str(entry.get("name") or "")
        out.append((name or str(entry["rev"])[:7], *_flat_data(entry.get("data"))))
        for exp in entry.get("experiments") or []:
            for run in exp.get("revs") or []:
                label = str(run.get("name") or exp.get("name") or str(run["rev"])[:7])
                out.append((label, *_flat_data(run.get("data"))))
    return out


def _flat_data(data: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    data = data or {}
    params = ((data.get("params") or {}).get("params.yaml") or {}).get("data") or {}
    metrics: dict[str, Any] = {}
    for path, found in (data.get("metrics") or {}).items():
        family = Path(path).parent.name if Path(path).name == "headline.json" else ""
        if family:
            flatten(family, (found or {}).get("data") or {}, metrics)
    return flatten("", params, {}), metrics


def flatten(prefix: str, value: Any, out: dict[str, Any]) -> dict[str, Any]:
    """Nested params or metrics as dotted keys into ``out`` (as ``dvc exp show`` names them)."""
    if isinstance(value, Mapping):
        for key, sub in value.items():
            flatten(f"{prefix}.{key}" if prefix else str(key), sub, out)
    else:
        out[prefix] = value
    return out


def differing_params(rows: Sequence[tuple[str, dict[str, Any], dict[str, Any]]]) -> list[str]:
    """Param keys whose values differ between rows, a differing group named by its id/style."""
    keys = sorted({k for _, params, _ in rows for k in params})
    changed = [k for k in keys if len({json.dumps(p.get(k), default=str) for _, p, _ in rows}) > 1]
    named = {k.rsplit(".", 1)[0]: k for k in keys if k.rsplit(".", 1)[-1] in NAMED_BY}
    out: list[str] = []
    for key in changed:
        group = next((g for g in named if key.startswith(g + ".")), None)
        shown = named[group] if group else key
        if shown not in out:
            out.append(shown)
    out = [k for k in ALWAYS if any(k in p for _, p, _ in rows)] + [
        k for k in out if k not in ALWAYS
    ]
    return sorted(
        out, key=lambda k: (k not in ALWAYS, k.split(".")[0] not in ("model", "prompt"), k)
    )


def headline_keys(rows: Sequence[tuple[str, dict[str, Any], dict[str, Any]]]) -> list[str]:
    """Metric keys ``<benchmark>.<metric>.<slot>[.<setting>]``: the model slot's first."""
    keys = list(dict.fromkeys(k for _, _, metrics in rows for k in metrics))

    def rank(key: str) -> tuple[int, int]:
        parts = key.split(".")
        family = list(GROUPS).index(parts[0]) if parts[0] in GROUPS else len(GROUPS)
        return (0 if SLOT in parts[2:3] else 1, family)

    return sorted(keys, key=rank)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) >= 1 else f"{value:.3f}"
    return str(value)


def columns(rows: Sequence[tuple[str, dict[str, Any], dict[str, Any]]]) -> list[Column]:
    """Every column in priority order (the caller keeps as many as fit)."""
    out = [Column("", "Experiment", [name for name, _, _ in rows])]
    params = differing_params(rows)
    out += [Column("", key, [_cell(p.get(key)) for _, p, _ in rows]) for key in params]
    for key in headline_keys(rows):
        family, metric, *rest = key.split(".")
        group = GROUPS.get(family, family)
        slot_and_setting = ".".join(rest)
        if family == "cases":
            group = f"cases {metric}"
        header = slot_and_setting.removeprefix(f"{SLOT}.") if rest[:1] == [SLOT] else (
            slot_and_setting.removeprefix("baselines."))  # fmt: skip
        if rest[:1] != [SLOT]:
            group = f"{group} (other slots)"
        cells = [_cell(m.get(key)) for _, _, m in rows]
        out.append(Column(group, header or SLOT, cells, key))
    return out


def fit(found: Sequence[Column], width: int) -> tuple[list[Column], list[Column]]:
    """The leading columns whose table fits ``width``, and those left out."""
    kept: list[Column] = []
    for column in found:
        if max(map(len, _table([*kept, column]))) > width:
            return kept, list(found[len(kept) :])
        kept.append(column)
    return kept, []


def _table(found: Sequence[Column]) -> list[str]:
    """Header rows (benchmark spans, two rows of names), the rule and one line per experiment."""
    widths = [c.width for c in found]
    bounds: list[tuple[int, int]] = []
    i = 0
    while i < len(found):
        j = i
        while j + 1 < len(found) and found[j + 1].group == found[i].group:
            j += 1
        span = sum(widths[i : j + 1]) + 3 * (j - i)
        widths[j] += max(0, len(found[i].group) - span)  # a label wider than its columns
        bounds.append((i, j))
        i = j + 1
    spans = [found[i].group.ljust(sum(widths[i : j + 1]) + 3 * (j - i)) for i, j in bounds]
    lines = ["| " + " | ".join(spans) + " |"] if any(c.group for c in found) else []
    for row in (0, 1):
        if row == 0 or any(c.lines[1] for c in found):
            cells = [c.lines[row].ljust(w) for c, w in zip(found, widths, strict=True)]
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in range(len(found[0].cells)):
        cells = [c.cells[r].ljust(w) for c, w in zip(found, widths, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render(found: Sequence[Column], left_out: Sequence[Column], width: int) -> str:
    """The fitted table, the header abbreviations used, and what was left out."""
    lines = _table(found)
    words = {w for c in found for line in c.lines for w in line.split("-")}
    used = [f"{v} = {k}" for k, v in SHORT.items() if v in words]
    notes = [f"headers: {', '.join(used)}"] if used else []
    if left_out:
        names = ", ".join(c.key or c.header for c in left_out[:2])
        more = f" and {len(left_out) - 2} more" if len(left_out) > 2 else ""
        notes.append(f"not shown to fit {width} columns: {names}{more}")
    notes.append("every param and metric: make exps ALL=1 (DVC's own table)")
    lines += textwrap.wrap("; ".join(notes), width)
    return "\n".join(lines) + "\n"


def terminal_width() -> int:
    """The terminal's columns (``COLUMNS``, else the terminal of stdout), else :data:`WIDTH`.

    An 80-column terminal gets an 80-column table instead of 160-character lines that wrap.
    """
    return shutil.get_terminal_size((WIDTH, 24)).columns


def table(show: Sequence[Mapping[str, Any]], width: int = WIDTH, csv: bool = False) -> str:
    """The ``make exps`` text fitted to ``width``; or every column of this view as CSV."""
    rows = rows_of(show)
    if not rows:
        return "no experiments\n"
    found = columns(rows)
    if csv:
        import pandas as pd

        frame = pd.DataFrame({c.key or c.header: c.cells for c in found})
        return str(frame.to_csv(index=False))
    kept, left_out = fit(found, width)
    return render(kept, left_out, width)
