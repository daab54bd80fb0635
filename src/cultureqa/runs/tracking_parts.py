"""The parts one ``track`` stage logs, and which of them changed since their markers.

One DVC stage at the end of the pipeline logs every family's results and every dataset build to
MLflow, so a ``dvc repro`` imports MLflow and opens its store once, not once per family (six
stages did: 3–13 CPU s each, ``docs/measured.md``). A *part* is what one of those stages logged
for one roster entry (and prompt style) or one build; its marker is
``data/track/<part name>.json``. The marker records a digest of what the part logs (the files it
reads, the params it records or is named by, the tracking code): a part whose digest matches its
marker is skipped and counted, so re-running the stage because one family changed does not
re-log the others, as DVC did not re-run their stages.

This module imports no MLflow and no pandas: planning and the skip decision come before the
first MLflow write, and cost milliseconds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cultureqa.core.config import ParamsError
from cultureqa.core.provenance import file_md5

RUNLOG = ".runlog"
"""Where the run log lives (:data:`cultureqa.core.runlog.RUNLOG`; that module imports pandas)."""

TRACK_DIR = Path("data") / "track"
"""Every part's marker lives under it: the stage's one (persisted) DVC output."""

CODE = (
    "stages/track.py",
    "src/cultureqa/runs",
    "src/cultureqa/analysis",
    "src/cultureqa/mocqa/report.py",
    "src/cultureqa/cases/report.py",
)
"""The code that decides what a part logs: a change re-logs every part, as it re-ran the stages."""

BUILDS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "cases": (
        ("cases.construct", "cases.annotate", "cases.seeds"),
        tuple(
            f"metrics/cases/{step}.json"
            for step in ("ingest", "annotate", "construct", "shuffle", "validate")
        ),
    ),
}
"""Fixed dataset builds: ``name: (param paths recorded, per-step metrics files)``. Each two-hop set
of ``twohop.hop_sets`` adds ``twohop-<set>`` (:func:`twohop_build`)."""


def twohop_build(hop_set: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A two-hop set's build: its params and the build and hop steps' metrics."""
    steps = (f"metrics/twohop/{hop_set}/build.json", f"metrics/twohop/{hop_set}/hop.json")
    return ("twohop", f"region_sets.{hop_set}", "generator", "judge"), steps


@dataclass(frozen=True)
class Part:
    """One thing the stage logs: an evaluation of one roster entry (and prompt), or one build."""

    name: str
    """The marker's path under ``data/track`` without ``.json``: ``indoculture/model``,
    ``mocqa/model/cot``, ``cases/model``, ``build/cases``; ``--only`` selects by it."""
    family: str
    """``eval`` (a benchmark of ``evaluate.benchmarks``), ``mocqa``, ``cases`` or ``build``."""
    marker: Path
    files: tuple[Path, ...]
    """What it reads and logs (evaluation outputs, the report's figures, build metrics)."""
    recorded: Mapping[str, Any]
    """The params it logs or is named by (model id, prompt style, tracking settings, …)."""
    args: Mapping[str, Any] = field(default_factory=dict)
    """What its logger needs besides: benchmark, roster entry, prompt style, build."""


def plan(root: Path, params: Mapping[str, Any]) -> list[Part]:
    """Every part the params ask for, in pipeline order: benchmarks, ID-MoCQA, cases, builds."""
    tracking = dict(params["tracking"])
    named = {"model.id": params["model"]["id"], "prompt.style": params["prompt"]["style"]}
    base = {"tracking": tracking, **named}
    parts: list[Part] = []
    for benchmark in params["evaluate"]["benchmarks"]:
        slices = (params["benchmarks"][benchmark] or {}).get("slices") or []
        for entry in params["evaluate"]["roster"]:
            run_dir = root / "data" / "eval" / benchmark / entry
            files = (*_files(run_dir), *_figures(root / "reports" / benchmark))
            parts.append(
                _part(
                    root,
                    f"{benchmark}/{entry}",
                    "eval",
                    files,
                    base | {"slices": slices},
                    {"benchmark": benchmark, "entry": entry, "run_dir": run_dir},
                )
            )
    mocqa = params["mocqa_eval"]
    for entry in mocqa["roster"]:
        for prompt in mocqa["prompts"]:
            run_dir = root / "data" / "eval" / "mocqa" / entry / prompt
            files = (*_files(run_dir), *_figures(root / "reports" / "mocqa"))
            parts.append(
                _part(
                    root,
                    f"mocqa/{entry}/{prompt}",
                    "mocqa",
                    files,
                    {"tracking": tracking, "model.id": named["model.id"]},
                    {"entry": entry, "prompt": prompt, "run_dir": run_dir},
                )
            )
    cases = params["cases"]
    for entry in cases["roster"]:
        run_dir = root / cases["paths"]["eval"] / entry
        files = (*_files(run_dir), *_figures(root / cases["paths"]["reports"]))
        parts.append(
            _part(
                root,
                f"cases/{entry}",
                "cases",
                files,
                base,
                {"entry": entry, "run_dir": run_dir},
                root / cases["paths"]["track"] / f"{entry}.json",
            )
        )
    builds = dict(BUILDS) | {f"twohop-{s}": twohop_build(s) for s in params["twohop"]["hop_sets"]}
    for build, (keys, metrics) in builds.items():
        recorded = {key: _select(params, key) for key in keys}
        items = build_items(params, build)
        parts.append(
            _part(
                root,
                f"build/{build}",
                "build",
                (*(root / m for m in metrics), root / items),
                {"tracking": tracking, "recorded": recorded},
                {"build": build, "metrics": metrics, "recorded": recorded, "items": items},
            )
        )
    return parts


def build_items(params: Mapping[str, Any], build: str) -> str:
    """A build's items, logged as traces of its run.

    The cases as constructed; a two-hop set's judged questions with the judge's verdicts (kept
    and removed ones).
    """
    if build == "cases":
        return f"{params['cases']['paths']['build']}/construct/items.parquet"
    return f"{params['twohop']['paths']['build']}/{build.removeprefix('twohop-')}/judged.parquet"


def select(parts: Sequence[Part], only: Iterable[str] | None) -> list[Part]:
    """The parts named by ``only`` (a part's name or a folder of names); all without ``only``."""
    wanted = [w.strip("/") for w in only or ()]
    if not wanted:
        return list(parts)
    chosen = [p for p in parts if any(p.name == w or p.name.startswith(f"{w}/") for w in wanted)]
    unknown = [
        w for w in wanted if not any(p.name == w or p.name.startswith(f"{w}/") for p in parts)
    ]
    if unknown:
        names = ", ".join(p.name for p in parts)
        raise ParamsError(f"--only {' '.join(unknown)}: no such part; the params' parts: {names}")
    return chosen


def digest(root: Path, part: Part, group: str) -> str:
    """What the part would log and where, hashed.

    Its files' bytes, its params, the tracking code and the DVC experiment (``group``: each
    experiment gets its own parent run).

    A missing input is hashed as missing, so the part is logged (and fails there with its own
    message) rather than skipped.
    """
    h = hashlib.md5(usedforsecurity=False)
    h.update(json.dumps([group, part.recorded], sort_keys=True, default=str).encode())
    h.update(_code_digest(root).encode())
    for path in part.files:
        h.update(_rel(root, path).encode())
        h.update(file_md5(path).encode() if path.is_file() else b"<missing>")
    return h.hexdigest()


def up_to_date(root: Path, part: Part, inputs: str) -> bool:
    """The part's marker says it logged with tracking on, and its run log names these inputs.

    The inputs live in the run log (``.runlog/``), not in the marker: the marker is a DVC output
    and stays the same in every experiment; a tree without a run log (pulled, or a queued
    experiment's temp copy) logs its parts again, which updates their runs in place.
    """
    side = root / RUNLOG / _rel(root, part.marker)
    try:
        marker = json.loads(part.marker.read_text(encoding="utf-8"))
        logged = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(marker.get("enabled")) and logged.get("inputs") == inputs


_code: dict[Path, str] = {}


def _code_digest(root: Path) -> str:
    if root not in _code:
        h = hashlib.md5(usedforsecurity=False)
        for name in CODE:
            path = root / name
            found = sorted(path.rglob("*.py")) if path.is_dir() else [path]
            for file in found:
                if file.is_file():
                    h.update(_rel(root, file).encode() + file_md5(file).encode())
        _code[root] = h.hexdigest()
    return _code[root]


def _part(
    root: Path,
    name: str,
    family: str,
    files: tuple[Path, ...],
    recorded: Mapping[str, Any],
    args: Mapping[str, Any],
    marker: Path | None = None,
) -> Part:
    return Part(name, family, marker or root / TRACK_DIR / f"{name}.json", files, recorded, args)


def _files(folder: Path) -> tuple[Path, ...]:
    """An evaluation's outputs (predictions, run record): the run log lives elsewhere."""
    return (
        tuple(sorted(p for p in folder.rglob("*") if p.is_file()))
        if folder.is_dir()
        else (folder / "run.json",)
    )


def _figures(folder: Path) -> tuple[Path, ...]:
    return tuple(sorted(folder.glob("*.png")))


def _select(params: Mapping[str, Any], key: str) -> Any:
    node: Any = params
    for part in key.split("."):
        node = node[part]
    return node


def _rel(root: Path, path: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
