"""Shared builders for the ID-MoCQA tests: composed params, settings in tmp, a full build."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cultureqa.compose import compose_params
from cultureqa.mocqa_build import runners
from cultureqa.mocqa_build.pipeline import MocqaSettings, write_stage
from cultureqa.mocqa_build.stage import StageResult

ROOT = Path(__file__).resolve().parents[2]
GROUPS = {"mocqa": "default", "generator": "template", "judge": "rules"}


def compose(tmp: Path, overrides: list[str] | None = None) -> dict[str, Any]:
    """Compose the repo's conf/ with the ID-MoCQA groups in the defaults list (added here if the
    lead has not wired them into conf/config.yaml yet)."""
    conf = tmp / "conf"
    if not conf.exists():
        shutil.copytree(ROOT / "conf", conf)
        text = (conf / "config.yaml").read_text(encoding="utf-8")
        extra = "".join(f"  - {g}: {o}\n" for g, o in GROUPS.items() if f"- {g}:" not in text)
        (conf / "config.yaml").write_text(
            text.replace("  - _self_\n", extra + "  - _self_\n", 1), encoding="utf-8"
        )
    return compose_params(conf, overrides)


def settings_for(params: dict[str, Any], out: Path) -> MocqaSettings:
    """Settings reading the repo's KB/templates/suite but writing under ``out``."""
    params["mocqa"]["build_dir"] = str(out / "build")
    params["mocqa"]["metrics_dir"] = str(out / "metrics")
    return MocqaSettings.from_params(params, ROOT)


def build(settings: MocqaSettings, params: dict[str, Any]) -> dict[str, StageResult]:
    """Run every stage up to finalize, writing outputs like the DVC stages do."""
    results = {"ingest": runners.run_ingest(settings, params["benchmarks"][settings.benchmark])}
    write_stage(settings, "ingest", results["ingest"])
    for step in ("expand", "judge", "verify", "rebalance"):
        results[step] = getattr(runners, f"run_{step}")(settings)
        write_stage(settings, step, results[step])
    metrics = {s: json.loads((settings.metrics_dir / f"{s}.json").read_text()) for s in results}
    final, card, markdown = runners.run_finalize(settings, metrics, "sample")
    write_stage(settings, "finalize", final)
    results["finalize"] = final
    results["card"] = StageResult(final.frame, metrics={"card": card, "markdown": markdown})
    return results


@pytest.fixture(scope="session")
def template_build(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[MocqaSettings, dict[str, StageResult]]:
    tmp = tmp_path_factory.mktemp("mocqa_template")
    params = compose(tmp)
    settings = settings_for(params, tmp)
    return settings, build(settings, params)


@pytest.fixture(scope="session")
def mocqa_helpers() -> dict[str, Any]:
    """The builders above, for test modules (conftest modules cannot be imported by name)."""
    return {"root": ROOT, "compose": compose, "settings_for": settings_for, "build": build}
