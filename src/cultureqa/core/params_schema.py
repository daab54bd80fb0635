"""The key schema that ``conf/`` can compose, so a misspelt or stale params key fails loudly.

OmegaConf reads any key, and stages read most with ``.get`` defaults: a typo such as
``evaluate.max_eror_share`` would be ignored and the default used. The schema is the union of the
keys of every option of every config group at every place ``conf/`` mounts it (a group mounted at
``benchmarks.indoculture`` may be mounted at any ``benchmarks.<name>``), so ``-S model=...`` and
added benchmarks pass while a key no option defines is named with its nearest valid key (difflib).
A ``null`` or ``{}`` in conf/ is an open slot (``cases.construct.model: null`` takes a whole model).
Keys that every option of a group defines are required: their absence means params.yaml predates
conf/ (stale) and ``make params`` recomposes it.
"""

from __future__ import annotations

import copy
import difflib
import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

WILDCARD = "*"


@dataclass
class Node:
    """One key of the schema: its children, or an open slot that accepts any sub-tree."""

    children: dict[str, Node] = field(default_factory=dict)
    open: bool = False
    required: set[str] = field(default_factory=set)
    kinds: set[str] = field(default_factory=set)
    """Types of the leaf values conf/ gives this key (``bool``, ``int``, ``float``, ``str``)."""

    def merge(self, other: Node, *, union_required: bool) -> None:
        """Widen this node by ``other`` (keys of either; required only where both require)."""
        self.open = self.open or other.open
        self.kinds |= other.kinds
        if union_required:
            self.required |= other.required
        else:
            self.required &= other.required
        for key, child in other.children.items():
            if key in self.children:
                self.children[key].merge(child, union_required=union_required)
            else:
                self.children[key] = child


def _from_value(value: Any) -> Node:
    interpolation = isinstance(value, str) and value.startswith("${") and value.endswith("}")
    if value is None or value == {} or interpolation:  # ${source}: whatever that group holds
        return Node(open=True)
    if not isinstance(value, dict):
        return Node(kinds={type(value).__name__})
    node = Node(children={str(k): _from_value(v) for k, v in value.items()})
    node.required = set(node.children)
    return node


def _at(root: Node, dotted: str) -> Node:
    node = root
    for part in dotted.split("."):
        node = node.children.setdefault(part, Node())
    return node


def _mounts(key: str, prefix: str) -> tuple[str, list[str]]:
    """Group name and package path(s) of a defaults entry such as ``model@baselines.random``."""
    group, _, package = key.lstrip("/").partition("@")
    package = package or group
    full = f"{prefix}.{package}" if prefix else package
    paths = [full]
    if "." in package:  # benchmarks.indoculture -> benchmarks.* (another benchmark may be added)
        paths.append(full.rsplit(".", 1)[0] + "." + WILDCARD)
    return group, paths


def _file_tree(conf_dir: Path, path: Path, prefix: str) -> Node:
    """Schema of one config file mounted at ``prefix``, its own defaults list included."""
    raw = dict(_load(path))
    defaults = raw.pop("defaults", [])
    tree = Node()
    (_at(tree, prefix) if prefix else tree).merge(_from_value(raw), union_required=True)
    for entry in defaults:
        if isinstance(entry, str):
            if entry != "_self_":
                tree.merge(_here_tree(conf_dir, path, entry, prefix), union_required=True)
            continue
        for key in entry:
            group, mounts = _mounts(str(key), prefix)
            options = copy.deepcopy(_group_tree(conf_dir, group))
            for mount in mounts:
                target = _at(tree, mount)
                target.merge(options, union_required=True)
                if mount.endswith(WILDCARD):
                    target.required = set()
    return tree


def _here_tree(conf_dir: Path, path: Path, entry: str, prefix: str) -> Node:
    """Schema of a shared base such as ``base/api@_here_``, merged into the including config.

    A base without ``@_here_`` would compose under ``<package>.base`` (Hydra's default package),
    leaving the model node without its keys; that is refused here, naming the file.
    """
    name, _, package = entry.partition("@")
    if package != "_here_":
        raise ValueError(
            f"{path}: defaults entry '{entry}' would nest its keys under a package of its own; "
            f"write '{name}@_here_' to merge them into this config"
        )
    base = conf_dir / name.lstrip("/") if name.startswith("/") else path.parent / name
    return _file_tree(conf_dir, base.with_suffix(".yaml"), prefix)


@functools.cache
def _load(path: Path) -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    raw = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    return raw if isinstance(raw, dict) else {}


@functools.cache
def _group_tree(conf_dir: Path, group: str) -> Node:
    """Union of the schemas of every option of a group (required: what all of them define)."""
    merged: Node | None = None
    for option in sorted((conf_dir / group).glob("*.yaml")):
        tree = _file_tree(conf_dir, option, "")
        if merged is None:
            merged = tree
        else:
            merged.merge(tree, union_required=False)
    return merged or Node(open=True)


def conf_schema(conf_dir: Path) -> Node:
    """The schema of ``conf_dir/config.yaml`` with every group option."""
    _load.cache_clear()
    _group_tree.cache_clear()
    return _file_tree(conf_dir.resolve(), conf_dir.resolve() / "config.yaml", "")


@dataclass(frozen=True)
class KeyProblem:
    """An unknown key (with its nearest valid key, if any) or a required key that is absent."""

    path: str
    kind: str  # "unknown" | "missing"
    nearest: str | None = None

    def describe(self) -> str:
        """One clause of the error line."""
        if self.kind == "missing":
            return f"missing key '{self.path}' that conf/ defines"
        hint = f" (did you mean '{self.nearest}'?)" if self.nearest else ""
        return f"unknown key '{self.path}'{hint}"


def check_keys(params: dict[str, Any], schema: Node, prefix: str = "") -> list[KeyProblem]:
    """Every unknown or missing key of ``params`` against ``schema``, in document order."""
    problems: list[KeyProblem] = []
    for key, value in params.items():
        path = f"{prefix}{key}"
        child = schema.children.get(str(key)) or schema.children.get(WILDCARD)
        if child is None:
            known = [k for k in schema.children if k != WILDCARD]
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            problems.append(KeyProblem(path, "unknown", f"{prefix}{close[0]}" if close else None))
        elif isinstance(value, dict) and not child.open and child.children:
            problems.extend(check_keys(value, child, f"{path}."))
    if isinstance(params, dict) and not schema.open:
        for key in sorted(schema.required - {str(k) for k in params}):
            problems.append(KeyProblem(f"{prefix}{key}", "missing"))
    return problems


# --- value ranges --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Range:
    """The values a numeric setting may take: bounds (inclusive unless ``open_low``), integers."""

    low: float | None = None
    high: float | None = None
    integer: bool = False
    nullable: bool = False
    open_low: bool = False

    def describe(self) -> str:
        """The range in words, e.g. ``an integer >= 1`` or ``a number in [0, 1]``."""
        kind = "an integer" if self.integer else "a number"
        if self.low is not None and self.high is not None:
            left = "(" if self.open_low else "["
            text = f"{kind} in {left}{self.low:g}, {self.high:g}]"
        elif self.low is not None:
            text = f"{kind} {'>' if self.open_low else '>='} {self.low:g}"
        else:
            text = kind
        return text + (" or null" if self.nullable else "")

    def admits(self, value: Any) -> bool:
        """Whether ``value`` is in range (a bool is no number; NaN and infinities never are)."""
        if value is None:
            return self.nullable
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if not math.isfinite(value) or (self.integer and not isinstance(value, int)):
            return False
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        return self.high is None or value <= self.high


_COUNT = Range(1, integer=True)
_COUNT0 = Range(0, integer=True)
_SECONDS = Range(0)
_SHARE = Range(0, 1)
_PRICE = Range(0, nullable=True)
_YEAR = Range(1960, 2100, integer=True)

RANGES: dict[str, Range] = {
    # models: concurrency, decoding, retries, prices, batches, the local backend
    "concurrency": _COUNT, "batch_size": _COUNT, "ramp_up_s": _SECONDS,
    "max_tokens": _COUNT, "temperature": Range(0, 2), "top_p": Range(0, 1, open_low=True),
    "seed": Range(0, integer=True, nullable=True),
    "max_prompt_tokens": Range(1, integer=True, nullable=True),
    "attempts": _COUNT, "initial_wait_s": _SECONDS, "max_wait_s": _SECONDS, "retries": _COUNT0,
    "timeout_s": Range(0, open_low=True), "breaker_after": _COUNT, "empty_attempts": _COUNT,
    "input_per_token": _PRICE, "output_per_token": _PRICE,
    "batch_poll_s": Range(0, open_low=True), "batch_wait_s": _SECONDS,
    "max_length": _COUNT, "num_threads": _COUNT, "position": _COUNT0,
    # stages: error rules, spend, limits
    "max_error_share": _SHARE, "max_failed_share": _SHARE, "budget_usd": _PRICE,
    "limit": Range(1, integer=True, nullable=True), "min_max_tokens": _COUNT0,
    "zero_shot": _COUNT0, "cot": _COUNT0, "version": _COUNT0,
    # ID-MoCQA build and judges
    "copy_ngram": _COUNT, "repair_attempts": _COUNT0, "max_revisions": _COUNT0,
    "per_stratum": _COUNT, "min_acceptable": _COUNT, "max_attempts": _COUNT,
    "max_clue_words": _COUNT, "max_question_words": _COUNT, "min_question_words": _COUNT0,
    "min_answer_words": _COUNT0, "ok": Range(0, 16, integer=True),
    "minor": Range(0, 16, integer=True), "moderate": Range(0, 16, integer=True),
    # analysis
    "fdr_alpha": Range(0, 1, open_low=True), "alpha": Range(0, 1, open_low=True),
    "margin": Range(0, 1, open_low=True), "compare_margin": Range(0, 1, open_low=True),
    "min_models": _COUNT, "min_topic_n": _COUNT0,
    "small_cell_n": _COUNT0, "min_category_n": _COUNT0, "min_fragment_length": _COUNT0,
    "robustness_threshold_pp": Range(0, 100), "bootstrap": _COUNT, "resamples": _COUNT,
    # published benchmarks: the share of invalid rows a run may drop
    "max_invalid_share": _SHARE,
    # ID-MoCQA clue margins
    "min_gap_share": _SHARE, "min_condition_holders": _COUNT,
    "max_terms": _COUNT0,
    # a region set's coverage bar (the two-hop card measures the build against it)
    "min_items": _COUNT, "min_regions": _COUNT, "min_type_share": _SHARE,
    # WEIRD levels: reference years of the official files, proxy neighbours
    "gdp_year": _YEAR, "mys_year": _YEAR, "income_fiscal_year": _YEAR, "freedom_edition": _YEAR,
    "proxy_neighbours": _COUNT,
    # human validation (cultureqa human): annotators per overlapping item, overlap in percent
    "annotators_per_item": _COUNT, "overlap_percent": Range(0, 100),
}  # fmt: skip
"""Ranges of numeric settings by key name, wherever the key sits (a model's ``concurrency`` is
checked under ``model``, ``baselines.*``, a judge panel or ``cases.construct.model`` alike).
``tests/test_params_ranges.py`` fails when conf/ gains a numeric key without a range here."""


def check_values(params: dict[str, Any], schema: Node, prefix: str = "") -> list[str]:
    """Every out-of-range number and non-boolean flag of ``params``, as ``key = value: range``.

    Run with the key check when params.yaml is read, so a stage fails before any model call.
    """
    problems: list[str] = []
    for key, value in params.items():
        path = f"{prefix}{key}"
        node = schema.children.get(str(key)) or schema.children.get(WILDCARD) or Node(open=True)
        if isinstance(value, dict):
            problems.extend(check_values(value, node, f"{path}."))
            continue
        rule = RANGES.get(str(key))
        textual = isinstance(value, str) and "str" in node.kinds  # e.g. a version "2024-01"
        if rule is not None and not isinstance(value, list) and not textual:
            if not rule.admits(value):
                problems.append(f"'{path}' = {value!r} is out of range (must be {rule.describe()})")
        elif node.kinds == {"bool"} and not isinstance(value, bool):
            problems.append(f"'{path}' = {value!r} is not a boolean (must be true or false)")
    return problems
