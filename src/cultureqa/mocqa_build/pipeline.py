"""Settings and stage runners behind the thin ``stages/mocqa_<step>.py`` scripts.

Each ``run_<step>`` reads its inputs from the previous stage's folder under
``data/build/mocqa/``, calls one library function, and returns a :class:`StageResult` that
:func:`write_stage` persists atomically (parquet + ``metrics/mocqa/<step>.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from cultureqa.io import write_json, write_parquet
from cultureqa.knowledge.national import load_national
from cultureqa.knowledge.national_clues import ClueFactTable, load_clue_facts
from cultureqa.knowledge.provinces import KnowledgeBase, load_knowledge_base
from cultureqa.llm.store import StoreLocation, store_location
from cultureqa.mocqa_build.judge import JudgeConfig
from cultureqa.mocqa_build.stage import StageResult, required
from cultureqa.mocqa_build.verify import VerifyConfig
from cultureqa.mocqa_shared.schema import CLUE_TYPES, LANGUAGES, empty_removed

MAIN_OUTPUT = {"ingest": "items.parquet", "finalize": "dataset.parquet"}
PATH_KEYS = (
    "knowledge_dir", "national_knowledge", "clue_facts", "templates", "build_dir", "metrics_dir",
    "expectations",
)  # fmt: skip


@dataclass(frozen=True)
class GeneratorSettings:
    """The ``generator`` section: ``template`` needs nothing else; ``llm`` names its model."""

    kind: str
    model: Mapping[str, Any] | None = None
    prompts_dir: Path | None = None
    max_revisions: int = 0

    @classmethod
    def from_params(cls, g: Mapping[str, Any], root: Path) -> GeneratorSettings:
        """Parse ``generator``; an unknown kind fails here, naming the key and the choices."""
        kind = str(required(g, "kind", "generator"))
        if kind == "template":
            return cls(kind)
        if kind != "llm":
            raise ValueError(f"params: generator.kind '{kind}' is neither 'template' nor 'llm'")
        return cls(
            kind,
            dict(required(g, "model", "generator")),
            root / str(required(g, "prompts_dir", "generator")),
            int(required(g, "max_revisions", "generator")),
        )


@dataclass(frozen=True)
class MocqaSettings:
    """The ``mocqa``, ``generator`` and ``judge`` params sections, paths resolved, parsed once."""

    root: Path
    benchmark: str
    seed: int
    languages: tuple[str, ...]
    clue_types: tuple[str, ...]
    knowledge_dir: Path
    national_path: Path
    clue_facts_path: Path
    min_gap_share: float
    templates: Path
    build_dir: Path
    metrics_dir: Path
    expectations: Path
    verify: VerifyConfig
    hop: Mapping[str, Any]
    """``mocqa.hop`` as written: parsed by :mod:`.hop_stage`, the one stage that evaluates."""
    human_per_stratum: int
    generator: GeneratorSettings
    judge: JudgeConfig

    @classmethod
    def from_params(cls, params: DictConfig | Mapping[str, Any], root: Path) -> MocqaSettings:
        """Parse params; unknown clue types or languages, or a missing key, fail here, named."""
        data: Any = (
            OmegaConf.to_container(params, resolve=True)
            if isinstance(params, DictConfig)
            else params
        )
        m = dict(required(data, "mocqa", ""))
        languages = tuple(required(m, "languages", "mocqa"))
        clue_types = tuple(required(m, "clue_types", "mocqa"))
        bad = [c for c in clue_types if c not in CLUE_TYPES] + [
            x for x in languages if x not in LANGUAGES
        ]
        if bad:
            raise ValueError(
                f"mocqa: unknown clue types/languages {bad} (known {CLUE_TYPES}, {LANGUAGES})"
            )
        path = {k: root / str(required(m, k, "mocqa")) for k in PATH_KEYS}
        return cls(
            root=root,
            benchmark=str(required(m, "benchmark", "mocqa")),
            seed=int(required(m, "seed", "mocqa")),
            languages=languages,
            clue_types=clue_types,
            knowledge_dir=path["knowledge_dir"],
            national_path=path["national_knowledge"],
            clue_facts_path=path["clue_facts"],
            min_gap_share=float(required(m, "min_gap_share", "mocqa")),
            templates=path["templates"],
            build_dir=path["build_dir"],
            metrics_dir=path["metrics_dir"],
            expectations=path["expectations"],
            verify=VerifyConfig(**dict(required(m, "verify", "mocqa"))),
            hop=dict(required(m, "hop", "mocqa")),
            human_per_stratum=int(
                required(dict(required(m, "human", "mocqa")), "per_stratum", "mocqa.human")
            ),
            generator=GeneratorSettings.from_params(dict(required(data, "generator", "")), root),
            judge=JudgeConfig.from_params(dict(required(data, "judge", "")), root),
        )

    @property
    def generator_kind(self) -> str:
        """``template`` or ``llm``."""
        return self.generator.kind

    @property
    def store_path(self) -> StoreLocation:
        """The response store shared with evaluation (outside DVC outputs)."""
        return store_location()

    def kb(self) -> KnowledgeBase:
        """The province knowledge base the build is grounded in."""
        return load_knowledge_base(self.knowledge_dir)

    def national(self) -> KnowledgeBase:
        """Every province of Indonesia: what comparison and intersection claims range over."""
        return load_national(self.national_path)

    def clue_facts(self) -> ClueFactTable:
        """National claims of the named facts (entity, geographical, temporal, commonsense)."""
        return load_clue_facts(self.clue_facts_path, self.national_path)

    def out_dir(self, step: str) -> Path:
        """``data/build/mocqa/<step>``."""
        return self.build_dir / step

    def read(self, step: str, name: str | None = None) -> pd.DataFrame:
        """A previous stage's main (or named) output; a missing file names the stage to run."""
        path = self.out_dir(step) / (name or MAIN_OUTPUT.get(step, "variants.parquet"))
        if not path.exists():
            raise FileNotFoundError(
                f"{path} not found: run stages/mocqa_{step}.py (or dvc repro) first"
            )
        return pd.read_parquet(path)

    def read_removed(self, steps: tuple[str, ...]) -> pd.DataFrame:
        """Removal records of earlier stages (missing ones skipped)."""
        frames = [
            pd.read_parquet(p) for s in steps if (p := self.out_dir(s) / "removed.parquet").exists()
        ]
        return pd.concat(frames, ignore_index=True) if frames else empty_removed()


def write_stage(settings: MocqaSettings, step: str, result: StageResult) -> Path:
    """Write the stage's outputs atomically; returns the metrics path."""
    out = settings.out_dir(step)
    write_parquet(out / MAIN_OUTPUT.get(step, "variants.parquet"), result.frame)
    write_parquet(out / "removed.parquet", result.removed)
    for name, table in result.tables.items():
        write_parquet(out / f"{name}.parquet", table)
    return write_json(settings.metrics_dir / f"{step}.json", result.metrics)


def summary_line(result: StageResult) -> str:
    """One line for the stage log: kept/removed and the main reasons."""
    m = result.metrics
    reasons = ", ".join(f"{k}: {v}" for k, v in m.get("removed_by_reason", {}).items())
    counts = f"{m.get('input')} in, {m.get('kept')} kept, {m.get('removed')} removed"
    return f"mocqa {m.get('stage')}: {counts}" + (f" ({reasons})" if reasons else "")
