"""Which two-hop dataset a human-validation run is about, and where its outputs go.

``mocqa`` is ID-MoCQA (``mocqa_eval.dataset``: Indonesia's build through the engine);
``twohop`` is the configured region set's build. Both are read from ``judged.parquet`` beside the
dataset: every variant the build's judge ruled on, kept and rejected, with the text the judge
read and its verdict (``judge_keep``). The sample is drawn over both, so the judge's precision and
recall against the human label are measured; a kept variant's row is the published one. Outputs: the
labels table ``data/human/<name>/labels.csv`` (added to DVC by ``pull``), the pushed projects
``data/human/<name>/projects.json`` and the metrics ``metrics/human/<name>.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cultureqa.core.config import load_params, select
from cultureqa.core.io import SourceError
from cultureqa.human import DATASETS
from cultureqa.human.items import two_hop_items


@dataclass
class Target:
    """A dataset ready for annotation: items, the judge's verdicts (if any), region matching."""

    name: str
    items: pd.DataFrame
    judge_keep: Mapping[str, bool] | None
    normalize: Callable[[str], str | None]
    noun: str
    seed: int
    per_stratum: int
    per_item: int
    overlap_percent: int
    root: Path

    @property
    def folder(self) -> Path:
        """``data/human/<name>``: the labels table and the pushed projects."""
        return self.root / "data" / "human" / self.name

    @property
    def metrics_path(self) -> Path:
        """``metrics/human/<name>.json``."""
        return self.root / "metrics" / "human" / f"{self.name}.json"


def _region_matcher(
    table: pd.DataFrame, id_column: str, name_columns: list[str], aliases: str | None
) -> Callable[[str], str | None]:
    """Typed region → id: exact id, name or alias, case and spacing ignored."""
    index: dict[str, str] = {}
    for row in table.to_dict("records"):
        rid = str(row[id_column])
        names = [rid, *(str(row[c]) for c in name_columns)]
        if aliases and isinstance(row.get(aliases), str):
            names += [a for a in row[aliases].split(";") if a]
        for name in names:
            index.setdefault(" ".join(name.lower().split()), rid)
    return lambda text: index.get(" ".join(str(text).lower().split()))


def judged_items(dataset: Path, stage: str) -> tuple[pd.DataFrame, dict[str, bool]]:
    """The variants the judge ruled on (``judged.parquet`` beside ``dataset``) and its verdicts.

    Raises:
        FileNotFoundError: When the build has not written the file; names it and ``stage``.
        SourceError: When the file lacks the ``judge_keep`` column.
    """
    path = dataset.with_name("judged.parquet")
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: run `dvc repro {stage}`")
    frame = pd.read_parquet(path)
    if "judge_keep" not in frame.columns:
        raise SourceError(str(path), "no 'judge_keep' column: not the build's judged variants")
    items = two_hop_items(frame, str(path))
    return items, dict(zip(items["item_id"], frame["judge_keep"].astype(bool), strict=True))


def load_target(root: Path, name: str) -> Target:
    """The named dataset (``mocqa`` or ``twohop``) with its settings from params.yaml."""
    params = load_params(root / "params.yaml")
    human = select(params, "human")
    per_stratum, per_item = int(human["per_stratum"]), int(human["annotators_per_item"])
    overlap = int(human["overlap_percent"])
    if name == "mocqa":
        from cultureqa.knowledge.gazetteer import normalize_province

        path = root / str(select(params, "mocqa_eval")["dataset"])
        items, judge_keep = judged_items(path, "twohop_build@indonesia")
        seed = int(select(params, "twohop")["seed"])
        return Target(
            name,
            items,
            judge_keep,
            normalize_province,
            "province",
            seed,
            per_stratum,
            per_item,
            overlap,
            root,
        )
    if name == "twohop":
        twohop = select(params, "twohop")
        region_set = dict(select(params, "region_sets")[twohop["region_set"]])
        path = root / twohop["paths"]["build"] / twohop["region_set"] / "dataset.parquet"
        items, judge_keep = judged_items(path, f"twohop_build@{twohop['region_set']}")
        regions = dict(region_set["regions"])
        table = pd.read_csv(root / regions["file"])
        names = list(dict(regions.get("names", {})).values())
        normalize = _region_matcher(table, regions["id"], names, regions.get("aliases"))
        noun = str(dict(region_set.get("noun", {})).get("en", "region"))
        seed = int(twohop["seed"])
        return Target(
            name, items, judge_keep, normalize, noun, seed, per_stratum, per_item, overlap, root
        )
    raise ValueError(f"unknown dataset {name!r}: one of {list(DATASETS)}")
