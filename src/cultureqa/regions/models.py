"""Which model-backed steps a build runs: the LLM generator, the judge panel, translation.

Selected in ``conf/twohop`` by param paths (``twohop.generator: generator``, ``twohop.judge:
judge``), so ``-S generator=llm -S judge=panel`` switches the two-hop build exactly as it does
the ID-MoCQA one. Offline (``generator: template``, ``judge: rules``) nothing here calls a model:
the tables write the clues, the rule judge decides, and a pair missing a language is dropped with
its reason. The generator model also translates (as in the paper).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from cultureqa.llm.store import StoreLocation
from cultureqa.regions.config import RegionSet
from cultureqa.regions.generation.clues import ClueBook, Clues
from cultureqa.regions.generation.generate_llm import LlmClueConfig, generate_clues
from cultureqa.regions.generation.tables import Knowledge
from cultureqa.regions.judges.judge import judge_items, rule_judgements
from cultureqa.regions.judges.judging import Judgement
from cultureqa.regions.judges.panel import PanelConfig, judge_counts
from cultureqa.regions.translate import Translator, llm_translator


def _section(params: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The params section at a dotted path, as plain data (``judge``, ``generator``)."""
    node: Any = params
    for key in path.split("."):
        if key not in node:
            raise KeyError(f"params have no '{path}' (named by twohop.generator/twohop.judge)")
        node = node[key]
    if isinstance(node, DictConfig):
        return dict(OmegaConf.to_container(node, resolve=True))  # type: ignore[arg-type]
    return dict(node)


@dataclass(frozen=True)
class ModelSteps:
    """The build's model-backed steps; the default is the offline build."""

    generator: LlmClueConfig | None = None
    panel: PanelConfig | None = None
    translate_prompt: Path | None = None
    store_path: StoreLocation | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any], root: Path) -> ModelSteps:
        """Read ``twohop.generator``/``twohop.judge`` (param paths) and ``twohop.prompts``."""
        from cultureqa.llm.store import store_location

        cfg = params["twohop"]
        prompts = dict(cfg.get("prompts") or {})
        generator = LlmClueConfig.from_params(
            _section(params, str(cfg["generator"])), str(prompts.get("generate", "")), root
        )
        panel = PanelConfig.from_params(_section(params, str(cfg["judge"])), root)
        if panel.kind == "panel" and prompts.get("panel"):  # the engine's prompt, not ID-MoCQA's
            panel = PanelConfig(
                panel.kind, panel.min_acceptable, panel.judges, root / prompts["panel"]
            )
        translate = root / str(prompts["translate"]) if prompts.get("translate") else None
        needs_store = generator is not None or panel.kind == "panel"
        return cls(generator, panel, translate, store_location() if needs_store else None)

    @property
    def offline(self) -> bool:
        """Whether no step calls a model."""
        return self.generator is None and (self.panel is None or self.panel.kind == "rules")

    def clue_book(self, clues: Clues, targets: list[str]) -> ClueBook:
        """The tables' clues, or the model's clues proved by the tables."""
        if self.generator is None:
            return clues.build(targets)
        assert self.store_path is not None
        return generate_clues(clues, targets, self.generator, self.store_path)

    @property
    def judge_name(self) -> str:
        """The judge whose keep decision stands last: ``panel`` when configured, else ``rules``."""
        return "panel" if self.panel is not None and self.panel.kind == "panel" else "rules"

    def judge(
        self, items: pd.DataFrame, removed: pd.DataFrame, rs: RegionSet, kb: Knowledge
    ) -> tuple[pd.DataFrame, pd.DataFrame, list[Judgement]]:
        """The rule judge's record of ``items`` (already checked), then the panel if configured."""
        judgements = rule_judgements(items, removed)
        if self.panel is None or self.panel.kind == "rules":
            return items, removed.iloc[0:0], judgements
        assert self.store_path is not None
        names = {rid: r.names[rs.languages[0]] for rid, r in kb.regions.items()}
        kept, gone, panel = judge_items(
            items, self.panel, rs.noun[rs.languages[0]], names, self.store_path
        )
        return kept, gone, judgements + panel

    def translator(self, rs: RegionSet) -> Translator | None:
        """The generator model as translator (None offline: missing sides are dropped)."""
        if self.generator is None:
            return None
        if rs.item_format != "case":
            raise ValueError(
                f"region set {rs.name}: translation writes the case format only; a "
                f"'{rs.item_format}' set with the LLM generator is not supported yet"
            )
        if self.translate_prompt is None:
            raise ValueError("twohop.prompts.translate: the LLM generator translates with it")
        assert self.store_path is not None
        return llm_translator(
            self.generator.model, self.translate_prompt, rs.noun[rs.languages[0]], self.store_path
        )

    def metrics(self, judgements: list[Judgement]) -> dict[str, Any]:
        """What the card reports about the model steps."""
        return {
            "generator": f"llm:{self.generator.model_id}" if self.generator else "template",
            "judge": self.panel.kind if self.panel else "rules",
            "min_acceptable": self.panel.min_acceptable if self.panel else 1,
            **judge_counts(judgements),
        }
