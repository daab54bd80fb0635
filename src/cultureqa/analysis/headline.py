"""One small headline metrics file per benchmark, the only files DVC declares as ``metrics:``.

``dvc exp show`` prints one column per metric leaf: the full summaries (hundreds of leaves) made
a sweep unreadable in a terminal. The headline keeps one accuracy per (roster slot, setting/prompt
[, seed]). Keys name the roster *slot* (``model``, ``baselines.random``, ...), never the model id:
a sweep over ``-S model=...`` changes the id in the ``model`` slot, and keys built from ids made
every experiment's columns disjoint (``dvc metrics diff`` all dashes). The id is a param
(``model.id``). Summaries, per-run metrics and build counts stay in their files (plain DVC
outputs), in the reports and in MLflow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def slot_order(slot: str) -> tuple[int, str]:
    """Plot panels: the model under test first, then the other slots, then humans (sort key)."""
    base = slot.split(" · ", 1)[0]  # plot panels are "<slot> · <prompt>"
    return (0 if base == "model" else 2 if base.startswith("human:") else 1, slot)


def by_slot(tree: Mapping[str, T], slots: Mapping[str, str]) -> dict[str, T]:
    """Re-key ``{label: ...}`` by roster slot; labels without a slot (human rows) stay as they are.

    ``slots`` maps each label (the display id, made unique by
    :func:`cultureqa.analysis.roster.key_by_roster`) to its roster entry.
    """
    keyed = {slots.get(label, label): value for label, value in tree.items()}
    if len(keyed) != len(tree):
        raise ValueError(f"two labels share a roster slot: {sorted(tree)} -> {dict(slots)}")
    return keyed


def indoculture_headline(
    summary: Mapping[str, Mapping[str, Mapping[str, Any]]], slots: Mapping[str, str]
) -> dict[str, Any]:
    """``{"accuracy": {slot: {setting: accuracy}}}`` from a generic benchmark's summary."""
    cells = {
        label: {setting: cell["accuracy"] for setting, cell in settings.items()}
        for label, settings in summary.items()
    }
    return {"accuracy": by_slot(cells, slots)}


def mocqa_headline(summary: Mapping[str, Any], slots: Mapping[str, str]) -> dict[str, Any]:
    """``{"multi_hop": {slot: {prompt: multi-hop accuracy, both languages}}}`` (ID-MoCQA)."""
    cells = {
        label: {prompt: cells["all"]["multi_hop"] for prompt, cells in prompts.items()}
        for label, prompts in summary.items()
    }
    return {"multi_hop": by_slot(cells, slots)}


def cases_headline(summary: Mapping[str, Any], slots: Mapping[str, str]) -> dict[str, Any]:
    """``{"accuracy": {slot: {seed: accuracy}}, "max_gap_pp": {slot: gap}}`` (cross-cultural)."""
    models = summary["models"]
    accuracy = {
        label: {seed: cell["accuracy"] for seed, cell in entry["seeds"].items()}
        for label, entry in models.items()
    }
    gaps = {
        label: entry["robustness"]["max_gap_pp"]
        for label, entry in models.items()
        if "robustness" in entry
    }
    return {"accuracy": by_slot(accuracy, slots), "max_gap_pp": by_slot(gaps, slots)}
