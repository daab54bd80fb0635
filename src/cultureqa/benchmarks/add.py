"""``cultureqa benchmark add``: sniff a source, check the proposal on it, then write it all.

Everything that can refuse (reading, sniffing, the spec, the trial load) runs before anything is
written, so an ``error:`` leaves the project as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cultureqa.benchmarks import scaffold
from cultureqa.benchmarks.fixture import ROWS, write_fixture
from cultureqa.benchmarks.sniff import Proposal, Sample, propose, read_sample
from cultureqa.benchmarks.sniff.trial import Trial, trial_load
from cultureqa.benchmarks.spec import BenchmarkSpec
from cultureqa.io import write_text


@dataclass
class Added:
    """What ``add`` wrote, and the notes the user should read."""

    source: str
    config: Path
    fixture: Path
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Drafted:
    """A proposal with its config text, parsed spec and trial load (nothing written yet)."""

    sample: Sample
    proposal: Proposal
    path: str
    text: str
    spec: BenchmarkSpec
    trial: Trial


def draft(root: Path, name: str, source: str, language: str) -> Drafted:
    """Read ``source``, propose its config and load the sample through it."""
    sample = read_sample(source)
    proposal = propose(sample, language)
    path = scaffold.target_path(source, root, name)
    text = scaffold.benchmark_yaml(name, proposal, path, language, root)
    raw: Any = yaml.safe_load(text)
    spec = BenchmarkSpec.from_config(raw)
    return Drafted(sample, proposal, path, text, spec, trial_load(spec, sample.frame, source))


def add(root: Path, name: str, source: str, language: str) -> Added:
    """Copy the source, write the config, its fixture and the ``conf/config.yaml`` entries."""
    config = root / "conf" / "benchmark" / f"{name}.yaml"
    drafted = draft(root, name, source, language)
    path = scaffold.copy_source(drafted.sample, root, name)
    fixtures = root / "tests" / "fixtures" / "benchmarks"
    fixture = write_fixture(source, drafted.trial.rows, fixtures, name, drafted.sample.split)
    write_text(config, drafted.text)
    scaffold.add_config_entries(root / "conf" / "config.yaml", name)
    notes = [*drafted.proposal.notes, drafted.trial.note()]
    if len(drafted.trial.rows) < ROWS:
        notes.append(f"only {len(drafted.trial.rows)} loadable rows for the {ROWS}-row fixture: "
                     "the contract test will say so")  # fmt: skip
    return Added(path, config, fixture, notes)
