"""``cultureqa cost``: expand a sweep, run each evaluation stage's own code dry, tabulate.

The stage functions are the ones the DVC stages call (:func:`evaluate_benchmark`,
:func:`evaluate_mocqa`, :func:`evaluate_entry`), with the arguments the stage scripts give them;
only the cache layer's dry-run hook differs. LLM build stages (generator, judge panel, hop
model, cases construction, semantic question analysis) are listed when configured but not
estimated: their later requests depend on earlier replies, which a dry run does not have.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from cultureqa.core.config import select
from cultureqa.cost import Group, Recorder, estimate
from cultureqa.llm.store import StoreLocation, store_location

if TYPE_CHECKING:
    from cultureqa.evaluation.engine import Family

STAGES = ("evaluate", "mocqa_evaluate", "cases_evaluate")
CHANCE_BACKENDS = ("random", "fixed")
"""Chance baselines: their "requests" never reach a model, so they are left out of the table."""
BUILD_MODELS = {
    "generator.model": "twohop_build (LLM generator)",
    "judge.judges": "twohop_build (judge panel)",
    "cases.construct.model": "cases_construct",
    "mocqa_eval.question_analysis.model": "mocqa_analyze (semantic question analysis)",
}


def expand_sweep(sets: Sequence[str]) -> list[list[str]]:
    """``-S`` overrides → one override list per experiment, exactly as ``dvc exp run --queue``."""
    from dvc.utils.cli_parse import to_path_overrides
    from dvc.utils.hydra import get_hydra_sweeps
    from hydra.errors import HydraException

    if not sets:
        return [[]]
    paths = to_path_overrides(sets)
    if other := sorted(set(paths) - {"params.yaml"}):
        raise ValueError(f"only params.yaml overrides are composed from conf/; got {other}")
    try:
        return [list(sweep["params.yaml"]) for sweep in get_hydra_sweeps(paths)]
    except HydraException as exc:
        raise ValueError(f"-S {' -S '.join(sets)}: {_first_line(exc)}") from exc


def _compose(root: Path, overrides: list[str]) -> DictConfig:
    """``conf/`` with one experiment's overrides; Hydra's complaint as one line."""
    from hydra.errors import HydraException

    from cultureqa.compose import OverrideError, compose_params

    try:
        return OmegaConf.create(compose_params(root / "conf", overrides))
    except OverrideError as exc:  # names the override at fault and the nearest valid names
        raise ValueError(str(exc)) from exc
    except HydraException as exc:
        raise ValueError(f"-S {' -S '.join(overrides)}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    return next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def plan(
    root: Path, sets: Sequence[str] = (), stages: Sequence[str] = STAGES
) -> tuple[list[Group], list[str]]:
    """Groups of every experiment of the sweep, and notes on what was not estimated.

    Without ``-S`` the committed params.yaml is planned (what ``dvc repro`` runs); with it,
    ``conf/`` is composed with each experiment's overrides (what ``dvc exp run`` runs).
    """
    from cultureqa.core.config import load_params

    groups: list[Group] = []
    notes: dict[str, list[str]] = {}  # note → experiments it applies to
    recorder = Recorder()  # one for the sweep: a key planned once is free for later experiments
    with _store(store_location()) as store:
        experiments = expand_sweep(sets)
        for overrides in experiments:
            label = " ".join(overrides) or "params.yaml"
            params = _compose(root, overrides) if overrides else load_params(root / "params.yaml")
            said: list[str] = []
            start = len(recorder.groups)
            for stage in stages:
                _STAGE_PLANNERS[stage](recorder, params, root, store, label, said)
            for group in recorder.groups[start:]:
                if group.backend in CHANCE_BACKENDS:  # answered in-process: no model call
                    continue
                groups.append(estimate(group, select(params, group.entry)))
            said += [f"{name} uses a model: not estimated (its requests depend on earlier "
                     "replies)" for name in _build_models(params)]  # fmt: skip
            for note in said:
                notes.setdefault(note, []).append(label)
    return groups, [_scoped(note, labels, len(experiments)) for note, labels in notes.items()]


def _scoped(note: str, labels: list[str], experiments: int) -> str:
    """A note once, with the experiments it applies to (all of them: said once, plainly)."""
    if len(labels) == experiments:
        return note if experiments == 1 else f"{note} (every experiment)"
    return f"{'; '.join(labels)}: {note}"


@contextlib.contextmanager
def _store(path: StoreLocation) -> Iterator[StoreLocation]:
    """The response store, or an empty temporary one where none exists yet (nothing created)."""
    if not isinstance(path, Path) or path.exists():  # a server's store is read where it is
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="cultureqa-cost-") as tmp:
        yield Path(tmp) / "responses.sqlite"


def _estimate(recorder: Recorder, group: Group, family: Family, entry: str, cfg: Any,
              store: StoreLocation, prompt: str = "") -> None:  # fmt: skip
    """Run ``family`` through the evaluation engine with the dry-run hook recording requests."""
    from cultureqa.evaluation.engine import RunSpec, evaluate

    with recorder.group(group):
        evaluate(family, RunSpec(entry, cfg, store, 1.0, prompt))


def _plan_evaluate(recorder: Recorder, params: DictConfig, root: Path, store: StoreLocation,
                   label: str, notes: list[str]) -> None:  # fmt: skip
    from cultureqa.evaluation.task import McqFamily

    style = str(params.prompt.style)
    for benchmark in params.evaluate.benchmarks:
        family = McqFamily.from_params(params, root, str(benchmark))
        for entry in params.evaluate.roster:
            cfg = select(params, str(entry))
            shape = "reasoning" if style == "cot" else "letter"
            group = Group(label, f"evaluate@{benchmark}", str(entry), str(cfg["id"]),
                          str(cfg.get("backend")), shape)  # fmt: skip
            _estimate(recorder, group, family, str(entry), cfg, store, style)


def _plan_mocqa(recorder: Recorder, params: DictConfig, root: Path, store: StoreLocation,
                label: str, notes: list[str]) -> None:  # fmt: skip
    from cultureqa.mocqa.evaluate import MocqaFamily

    cfg = select(params, "mocqa_eval")
    if not (root / str(cfg["dataset"])).exists():
        notes.append(f"mocqa_evaluate not estimated: {cfg['dataset']} does not exist (run "
                     "Indonesia's build first: dvc repro twohop_build@indonesia)")  # fmt: skip
        return
    for style in cfg["prompts"]:
        family = MocqaFamily.from_params(params, root, str(style))  # as the stage builds it
        for entry in cfg["roster"]:
            model_cfg = select(params, str(entry))
            shape = "reasoning" if style == "cot" else "json"
            group = Group(label, f"mocqa_evaluate@{style}", str(entry), str(model_cfg["id"]),
                          str(model_cfg.get("backend")), shape)  # fmt: skip
            _estimate(recorder, group, family, str(entry), model_cfg, store, str(style))


def _plan_cases(recorder: Recorder, params: DictConfig, root: Path, store: StoreLocation,
                label: str, notes: list[str]) -> None:  # fmt: skip
    from cultureqa.cases.evaluate import CasesFamily

    cfg = select(params, "cases")
    shuffle = root / cfg["paths"]["build"] / "shuffle"
    paths = [shuffle / f"items_seed{s}.parquet" for s in cfg["seeds"]]
    if missing := [str(p.relative_to(root)) for p in paths if not p.exists()]:
        notes.append(f"cases_evaluate not estimated: {missing[0]} does not exist "
                     "(run the cases build first: dvc repro cases_shuffle)")  # fmt: skip
        return
    family = CasesFamily.from_params(params, root)
    for entry in cfg["roster"]:
        model_cfg = select(params, str(entry))
        group = Group(label, "cases_evaluate", str(entry), str(model_cfg["id"]),
                      str(model_cfg.get("backend")), "cases")  # fmt: skip
        _estimate(recorder, group, family, str(entry), model_cfg, store)


_STAGE_PLANNERS = {
    "evaluate": _plan_evaluate,
    "mocqa_evaluate": _plan_mocqa,
    "cases_evaluate": _plan_cases,
}


def _build_models(params: DictConfig) -> list[str]:
    """LLM build stages this experiment configures with an API model (null means offline)."""
    found = []
    for key, name in BUILD_MODELS.items():
        value = OmegaConf.select(params, key, default=None)
        if isinstance(value, str):  # a param path (twohop.hop.model: baselines.random)
            value = OmegaConf.select(params, value, default=None)
        configs = list(value.values()) if key == "judge.judges" and value else [value]
        if any(isinstance(c, DictConfig) and c.get("backend") == "litellm" for c in configs):
            found.append(name)
    return found


# --- output --------------------------------------------------------------------------------------

COLUMNS = ("experiment", "stage", "entry", "model", "requests", "stored", "earlier", "to send",
           "prompt tok",
           "compl. tok typ/max", "typ. from", "USD typ/max", "USD w/o store", "tokens by",
           "price from")  # fmt: skip


def _usd(value: float | None) -> str:
    return "?" if value is None else f"{value:.4f}"


def _cells(g: Group) -> list[str]:
    return [
        g.experiment, g.stage, g.entry, g.model, str(g.requests), str(g.stored), str(g.earlier),
        str(g.to_send),
        str(g.prompt_tokens), f"{g.completion_tokens_typical}/{g.completion_tokens_max}",
        g.typical_from,
        f"{_usd(g.cost_typical_usd)}/{_usd(g.cost_max_usd)}", _usd(g.cost_without_store_usd),
        g.tokens_by, g.price_from,
    ]  # fmt: skip


def totals(groups: Sequence[Group]) -> dict[str, Any]:
    """Sums over groups; a cost total is a lower bound when some group's price is unknown."""
    out: dict[str, Any] = {
        "requests": sum(g.requests for g in groups),
        "stored": sum(g.stored for g in groups),
        "earlier": sum(g.earlier for g in groups),
        "to_send": sum(g.to_send for g in groups),
        "unpriced_groups": sum(g.cost_max_usd is None for g in groups),
    }
    for key in ("cost_typical_usd", "cost_max_usd", "cost_without_store_usd"):
        out[key] = sum(getattr(g, key) or 0.0 for g in groups)
    return out


def render_table(groups: Sequence[Group], notes: Sequence[str]) -> str:
    """Aligned plain-text table, a total line, then the notes."""
    rows = [list(COLUMNS), *(_cells(g) for g in groups)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    t = totals(groups)
    unknown = f" (+ {t['unpriced_groups']} groups of unknown price)" if t["unpriced_groups"] else ""
    lines.append(
        f"total: {t['requests']} requests, {t['stored']} in the response store and "
        f"{t['earlier']} sent by an earlier experiment (free), {t['to_send']} to send: "
        f"USD {t['cost_typical_usd']:.4f} typical, "
        f"{t['cost_max_usd']:.4f} at most{unknown}; {t['cost_without_store_usd']:.4f} at most "
        "without the store"
    )
    return "\n".join(lines + [f"note: {n}" for n in notes])


def as_json(groups: Sequence[Group], notes: Sequence[str]) -> dict[str, Any]:
    """The same content for machines."""
    return {"groups": [g.as_dict() for g in groups], "totals": totals(groups), "notes": list(notes)}


@contextlib.contextmanager
def quiet_stage_logs() -> Iterator[None]:
    """Stage warnings (a CoT setting skipped for completion scoring) belong to real runs.

    The level is restored afterwards, so a caller in the same process keeps its warnings.
    """
    logger = logging.getLogger("cultureqa")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
