"""How well ``benchmark add`` proposes the committed example configs, as docs/ counts them.

Each config's own source goes through the proposal (``draft``: sniff, YAML, spec, trial load),
and the proposal is compared with the committed config field by field, after both are parsed
into specs (so ``sep: "|"`` written out and left to its default compare equal).
docs/benchmark-configs.md states the counts; this test recomputes them, so the sentence cannot
drift from what the code does.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from cultureqa.authoring.add import draft
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.core.params_digest import register as register_digest

ROOT = Path(__file__).resolve().parents[2]
CORE = ("source.kind", "source.path", "source.hf_split", "id", "question", "options",
        "options_transform", "options_sep", "answer", "answer_format", "answer_sep",
        "option_counts", "option_labels")  # fmt: skip
"""Fields a proposal must get right to count as correct with no edit."""


def _layout_examples() -> list[str]:
    """The configs of the eight layout examples, from the table in LAYOUTS.md."""
    text = (ROOT / "data/sources/examples/LAYOUTS.md").read_text(encoding="utf-8")
    return re.findall(r"^\| `.*\| `(\w+)` \|$", text, re.M)


def _committed(name: str) -> BenchmarkSpec:
    """The config as committed (``${source}`` resolved as the params compose it)."""
    register_digest()  # its ${cultureqa_digest:}, resolved as composing conf/ does
    params = OmegaConf.load(ROOT / "params.yaml")
    tree = OmegaConf.create({"source": params.source, "b": OmegaConf.load(_config(name))})
    raw: Any = OmegaConf.to_container(tree.b, resolve=True)
    return BenchmarkSpec.from_config(raw)


def _config(name: str) -> Path:
    return ROOT / "conf" / "benchmark" / f"{name}.yaml"


def _values(spec: BenchmarkSpec) -> dict[str, Any]:
    cols = spec.columns
    found: dict[str, Any] = {f"source.{k}": getattr(spec.source, k) for k in
                             ("kind", "path", "hf_split")}  # fmt: skip
    found |= {k: getattr(cols, k) for k in CORE if not k.startswith("source.")}
    found["metadata"] = sorted(cols.metadata_fields.get(m, m) for m in cols.metadata)
    fields = {m: cols.metadata_fields.get(m, m) for m in cols.metadata}
    found["slices"] = sorted(tuple(fields.get(m, m) for m in s) for s in spec.slices)
    return found


def compare(name: str) -> dict[str, tuple[Any, Any]]:
    """Where the proposal for ``name``'s own source differs: field → (committed, proposed)."""
    committed = _committed(name)
    assert committed.source.path is not None
    language = next(iter(committed.languages))
    proposed = draft(ROOT, name, str(ROOT / committed.source.path), language).spec
    want, got = _values(committed), _values(proposed)
    return {k: (want[k], got[k]) for k in want if want[k] != got[k]}


def _counts() -> dict[str, tuple[int, int]]:
    layouts = _layout_examples()
    others = sorted(
        p.stem for p in (ROOT / "conf/benchmark").glob("*.yaml") if p.stem not in layouts
    )
    diffs = {name: compare(name) for name in [*layouts, *others]}
    for name, diff in diffs.items():
        print(name, diff or "as committed")
    out = {}
    for group, names in (("layouts", layouts), ("others", others)):
        out[f"{group}.core"] = (sum(not set(diffs[n]) & set(CORE) for n in names), len(names))
        for extra in ("metadata", "slices"):
            out[f"{group}.{extra}"] = (sum(extra not in diffs[n] for n in names), len(names))
    return out


def test_the_layout_examples_are_the_eight_of_layouts_md() -> None:
    assert len(_layout_examples()) == 8
    assert all((ROOT / f"conf/benchmark/{n}.yaml").exists() for n in _layout_examples())


def test_the_docs_state_the_measured_proposal_counts() -> None:
    counts = _counts()
    readme = " ".join((ROOT / "docs/benchmark-configs.md").read_text(encoding="utf-8").split())
    core = re.search(r"as committed in \*\*(\d+) of (\d+)\*\* layout examples .*?\*\*(\d+) of "
                     r"(\d+)\*\* other configs", readme)  # fmt: skip
    assert core is not None, "docs/benchmark-configs.md states the counts"
    stated = tuple(int(x) for x in core.groups())
    assert stated == (*counts["layouts.core"], *counts["others.core"]), counts
    extras = re.search(r"metadata in (\d+) of (\d+) \(.*?\) and slices in (\d+) of (\d+)", readme)
    assert extras is not None
    total = {k: tuple(map(sum, zip(counts[f"layouts.{k}"], counts[f"others.{k}"], strict=True)))
             for k in ("metadata", "slices")}  # fmt: skip
    assert tuple(int(x) for x in extras.groups()) == (*total["metadata"], *total["slices"])
