"""Contract test over EVERY benchmark config on its five-row fixture (lm-eval's BaseTasks idea).

A new ``conf/benchmark/<name>.yaml`` must ship ``tests/fixtures/benchmarks/<name>.<ext>``; the test
loads it through the declared mapping, renders every setting's prompt, runs a baseline, and checks
the predictions contract and the benchmark's GX suite.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from cultureqa.benchmarks.fixture import fixture_size
from cultureqa.benchmarks.load import items_frame
from cultureqa.benchmarks.regions import region_namer
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.params_digest import check as check_digest
from cultureqa.core.params_digest import register as register_digest
from cultureqa.core.records import PREDICTION_COLUMNS
from cultureqa.evaluation.engine import Decoding
from cultureqa.evaluation.prompts import find_template
from cultureqa.evaluation.record import conform
from cultureqa.evaluation.runner import SettingPlan, run_setting
from cultureqa.evaluation.task import load_benchmark_items
from cultureqa.llm.baselines import RandomBaseline
from cultureqa.validation import run_suite
from cultureqa.validation.benchmark import suite_overrides

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "conf" / "benchmark").glob("*.yaml"))
FIXTURES = ROOT / "tests" / "fixtures" / "benchmarks"


def _fixture(config: Path, declared: str) -> Path:
    """``<name>.<ext>``, or a folder ``<name>/`` mirroring the pattern part of the source path."""
    folder = FIXTURES / config.stem
    if folder.is_dir():
        parts = Path(declared).parts
        first = next((i for i, p in enumerate(parts) if "{" in p or "*" in p), len(parts))
        return folder.joinpath(*parts[first:])
    fixture = next(FIXTURES.glob(f"{config.stem}.*"), None)
    assert fixture is not None, f"{config.name} has no fixture in {FIXTURES}"
    return fixture


def _spec_on_fixture(config: Path) -> BenchmarkSpec:
    """The config as composing conf/ resolves it (its ``digest`` included), on its fixture."""
    register_digest()
    tree = OmegaConf.create({"source": {"kind": "file", "path": "?"}, "b": OmegaConf.load(config)})
    raw: Any = OmegaConf.to_container(tree.b, resolve=True)
    check_digest(raw, f"benchmarks.{config.stem}")  # every config carries the digest line
    raw["source"]["path"] = str(_fixture(config, raw["source"]["path"]))
    return BenchmarkSpec.from_config(raw)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_benchmark_contract(config: Path) -> None:
    spec = _spec_on_fixture(config)
    items, _, _ = load_benchmark_items(spec, ROOT)
    baseline = RandomBaseline("random", 0)
    namer = region_namer(spec.location.region_names)
    per_item = spec.columns.language is not None  # five rows over the languages, each one in
    for setting in spec.settings:
        batch = items[setting.language]
        if per_item:
            assert batch, f"the fixture has no {setting.language} item"
        else:
            assert len(batch) == 5, "fixtures have exactly five rows"
        for item in batch:
            assert item.question.strip() and len(item.options) >= 2
            assert all(isinstance(o, str) and o for o in item.options)
            assert 0 <= item.answer_index < len(item.options)
        template = find_template(
            ROOT,
            spec.name,
            setting.scoring,
            "zero_shot",
            setting.language,
            spec.prompt_fallback.get(setting.language),
        )
        plan = SettingPlan(setting, template, spec.location.clause.get(setting.language, ""))

        def location_of(item, level):  # type: ignore[no-untyped-def]
            if level == "none":
                return ""
            if level == "country":
                return spec.location.country[item.language]
            return namer(str(item.metadata[level]), item.language)

        frame = asyncio.run(run_setting(baseline, batch, plan, location_of, Decoding()))
        frame.insert(0, "model", "random")
        frame.insert(0, "benchmark", spec.name)
        assert len(conform(frame, PREDICTION_COLUMNS, spec.name)) == len(batch)
    if per_item:
        total = sum(map(len, items.values()))
        assert total == fixture_size(len(spec.languages)), "five rows, or one per language"
    assert spec.expectations, "every benchmark declares a GX suite"
    frame = items_frame([i for lang in sorted(items) for i in items[lang]])
    report = run_suite(ROOT / spec.expectations, frame, suite_overrides(spec))
    assert not report.crashes, report.message()
    # Five rows cannot be position-balanced; balance is checked on real sources by `validate`.
    failed = {f["expectation"] for f in report.failures}
    assert failed <= {"expect_gold_positions_to_be_balanced"}, report.message()
