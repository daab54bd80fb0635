"""The generic MCQ family (IndoCulture and every benchmark config) on the evaluation engine.

Each setting of a benchmark spec becomes one batch of requests; scoring lives in
:mod:`cultureqa.evaluation.runner` and everything else in :mod:`cultureqa.evaluation.engine`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cultureqa.benchmarks.regions import RegionNamer, region_namer
from cultureqa.benchmarks.source_files import source_provenance
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.benchmarks.stored_load import StoredLoad, load_key, read_stored, store
from cultureqa.benchmarks.tracking import check_tracked
from cultureqa.core.config import Params, lookup, typed
from cultureqa.core.io import SourceError
from cultureqa.core.records import PREDICTION_COLUMNS, McqItem, Setting
from cultureqa.evaluation.engine import Batch, ModelView, RunSpec, Skip
from cultureqa.evaluation.prompts import find_template, style_skip_reason
from cultureqa.evaluation.record import conform, group_metrics
from cultureqa.evaluation.runner import SettingPlan, UnsupportedSetting, setting_batch

if TYPE_CHECKING:  # the source is read through pandas only when no stored load fits
    import pandas as pd

    from cultureqa.benchmarks.load import LoadedSource

log = logging.getLogger(__name__)


def load_benchmark_items(
    spec: BenchmarkSpec, root: Path
) -> tuple[dict[str, list[McqItem]], str, pd.DataFrame]:
    """Items per language, the source label, and the raw frame (for hashing and validation)."""
    loaded = load_source(spec, root)
    return loaded.items, loaded.origin, loaded.source


def load_source(spec: BenchmarkSpec, root: Path) -> LoadedSource:
    """The benchmark's items under its row policy, with the metadata booleans checked."""
    from cultureqa.benchmarks.load import load_benchmark

    loaded = load_benchmark(spec, root)
    for column in spec.columns.metadata:
        _check_boolean_column(loaded.source, column, spec.columns.id, loaded.origin, loaded.items)
    return loaded


def _check_boolean_column(
    frame: pd.DataFrame,
    column: str,
    id_column: str | None,
    origin: str,
    items: Mapping[str, list[McqItem]],
) -> None:
    """A metadata column read as True/False must be True/False on every row.

    A blank among booleans would otherwise reach ``predictions.parquet`` as a mixed column and
    fail there with a pyarrow traceback, far from the source cell that caused it.
    """
    values = {i.id: i.metadata.get(column) for batch in items.values() for i in batch}
    if not any(isinstance(v, bool) for v in values.values()):
        return
    # Ids that are templates or synthesized have no source column: the message names the item.
    ids = frame[id_column].tolist() if id_column in frame.columns else []
    rows = {str(v): pos for pos, v in enumerate(ids, start=1)}
    for item_id, value in values.items():
        if not isinstance(value, bool):
            raise SourceError(
                origin,
                f"item {item_id}: expected True/False like the other rows, got {value!r}",
                row=rows.get(item_id),
                column=column,
            )


def stored_or_loaded(spec: BenchmarkSpec, root: Path) -> StoredLoad:
    """The benchmark's load from the store when one fits it, else from the source (then stored).

    Either way the stage's log says which, and why a load was not stored.
    """
    key = load_key(spec, root)
    stored = read_stored(key) if key is not None else None
    if stored is not None:
        log.info("%s: items from the stored load of this source and code (%s)", spec.name, key)
        return stored
    loaded = load_source(spec, root)
    load = StoredLoad(loaded.items, loaded.origin, loaded.counts.record())
    why = "a hub source has no local files to key it on" if key is None else store(key, load)
    if why is None:
        log.info("%s: items loaded from the source and stored (%s)", spec.name, key)
    else:
        log.warning("%s: items loaded from the source, not stored: %s", spec.name, why)
    return load


@dataclass
class McqFamily:
    """IndoCulture and every generic MCQ benchmark: one batch per setting of the spec.

    ``max_tokens_floor`` is the prompt style's generation budget floor (CoT needs room to
    reason); a setting the style does not apply to is skipped with its reason, never run
    half-way, and so is one the model cannot score (completions need log-likelihoods).
    """

    spec: BenchmarkSpec
    root: Path
    style: str
    max_tokens_floor: int = 0
    items: dict[str, list[McqItem]] = field(init=False)
    namer: RegionNamer = field(init=False)
    loaded: StoredLoad = field(init=False)

    def __post_init__(self) -> None:
        self.loaded = stored_or_loaded(self.spec, self.root)
        self.items = self.loaded.items
        self.namer = region_namer(self.spec.location.region_names)

    @classmethod
    def from_params(cls, params: Params, root: Path, benchmark: str) -> McqFamily:
        """The family as the ``evaluate`` stage runs it (the cost dry run builds the same one).

        A source outside the project is refused here exactly as ``validate`` refuses it, so a
        stage run by hand (``python stages/evaluate.py``) cannot evaluate an untracked file.
        """
        spec = BenchmarkSpec.from_params(params, benchmark)
        check_tracked(spec, root)
        floor = typed(params, "prompt.min_max_tokens", int)
        return cls(spec, root, str(lookup(params, "prompt.style")), floor)

    @property
    def benchmark(self) -> str:
        """The benchmark's name (``indoculture`` or a config's)."""
        return self.spec.name

    def plan(self, model: ModelView) -> Iterator[Batch | Skip]:
        """A batch per setting, or a skip naming why the setting cannot run.

        The skips are logged once per reason when the plan is complete (``skipping 3 of 7
        settings (a, b, c): reason``), not once per setting: a sweep of ``prompt=cot`` would
        otherwise repeat the same line for every completion setting of every roster entry. Each
        skip, with its reason, is in the run record (``skipped``).
        """
        spec = self.spec
        skipped: dict[str, list[str]] = {}
        for setting in spec.settings:
            batch = self.items[setting.language]
            reason = style_skip_reason(self.style, setting.scoring)
            if reason is None:
                try:
                    yield setting_batch(batch, self._plan(setting), self._location, model)
                    continue
                except UnsupportedSetting as exc:
                    reason = str(exc)
            skipped.setdefault(reason, []).append(setting.name)
            yield Skip(setting.name, reason, len(batch))
        for reason, names in skipped.items():
            log.warning("%s/%s: skipping %d of %d settings (%s): %s", spec.name, model.model_id,
                        len(names), len(spec.settings), ", ".join(names), reason)  # fmt: skip

    def _plan(self, setting: Setting) -> SettingPlan:
        language = setting.language
        fallback = self.spec.prompt_fallback.get(language)
        template = find_template(
            self.root, self.spec.name, setting.scoring, self.style, language, fallback
        )
        return SettingPlan(setting, template, self.spec.location.clause.get(language, ""))

    def _location(self, item: McqItem, level: str) -> str:
        if level == "none":
            return ""
        if level == "country":
            return self.spec.location.country.get(item.language, "")
        return self.namer(str(item.metadata[level]), item.language)

    def finish(self, rows: pd.DataFrame, run: RunSpec) -> pd.DataFrame:
        """Benchmark and model id first, then the predictions contract."""
        rows.insert(0, "model", str(run.model_cfg["id"]))
        rows.insert(0, "benchmark", self.spec.name)
        return conform(rows, PREDICTION_COLUMNS, self.spec.name)

    def dataset_record(self) -> dict[str, Any]:
        """Source files, MD5s, limit and sample."""
        return source_provenance(self.spec, self.root)

    def details(self, predictions: pd.DataFrame) -> dict[str, Any]:
        """What the source gave, and the chance accuracy of a uniform guess.

        Rows read, skipped by the filter, dropped (by reason, listed), items with several golds,
        option counts; chance is the mean over items of (golds / options).
        """
        evaluated = [i for batch in self.items.values() for i in batch]
        chance = (
            sum(len(i.golds) / len(i.options) for i in evaluated) / len(evaluated)
            if evaluated
            else 0.0
        )
        return {
            "rows": self.loaded.rows,
            "chance_accuracy": round(chance, 4),
            "validation": self._validation(),
        }

    def _validation(self) -> dict[str, Any]:
        """What ``validate`` found (the stage depends on its output).

        Checks reported rather than failed, and the gold balance of the source and the sample, so
        MLflow shows them either way.
        """
        path = self.root / "metrics" / "validate" / f"{self.spec.name}.json"
        if not path.exists():
            return {"found": False, "path": str(path.relative_to(self.root))}
        summary = json.loads(path.read_text(encoding="utf-8"))
        return {
            "found": True,
            "success": summary.get("success"),
            "reported": summary.get("reported", []),
            "warnings": summary.get("warnings", []),
            "gold_balance": summary.get("gold_balance", {}),
        }

    def metrics(self, predictions: pd.DataFrame) -> dict[str, Any]:
        """Per-setting accuracy and rates."""
        return group_metrics(predictions, "setting", {"accuracy": "correct"})
