"""One small headline metrics file per benchmark, the only files DVC declares as ``metrics:``.

``dvc exp show`` prints one column per metric leaf: the full summaries (hundreds of leaves) made
a sweep unreadable in a terminal. The headline keeps one accuracy per (model, setting/prompt[,
seed]); summaries, per-run metrics and build counts stay in their files (plain DVC outputs),
in the reports and in MLflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def indoculture_headline(summary: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """``{"accuracy": {model: {setting: accuracy}}}`` from a generic benchmark's summary."""
    return {
        "accuracy": {
            model: {setting: cell["accuracy"] for setting, cell in settings.items()}
            for model, settings in summary.items()
        }
    }


def mocqa_headline(summary: Mapping[str, Any]) -> dict[str, Any]:
    """``{"multi_hop": {model: {prompt: multi-hop accuracy, both languages}}}`` (ID-MoCQA)."""
    return {
        "multi_hop": {
            model: {prompt: cells["all"]["multi_hop"] for prompt, cells in prompts.items()}
            for model, prompts in summary.items()
        }
    }


def cases_headline(summary: Mapping[str, Any]) -> dict[str, Any]:
    """``{"accuracy": {model: {seed: accuracy}}, "max_gap_pp": {model: gap}}`` (cross-cultural)."""
    models = summary["models"]
    return {
        "accuracy": {
            model: {seed: cell["accuracy"] for seed, cell in entry["seeds"].items()}
            for model, entry in models.items()
        },
        "max_gap_pp": {
            model: entry["robustness"]["max_gap_pp"]
            for model, entry in models.items()
            if "robustness" in entry
        },
    }
