"""``cultureqa benchmark add``: sniff a source, check the proposal on it, then write it all.

Everything that can refuse (reading, sniffing, the spec, the trial load) runs before anything is
written, so an ``error:`` leaves the project as it was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from cultureqa.authoring import scaffold
from cultureqa.authoring.sniff import Proposal, Sample, propose, read_sample
from cultureqa.authoring.sniff.trial import Trial, trial_load
from cultureqa.benchmarks.fixture import ROWS, fixture_size, write_fixture
from cultureqa.benchmarks.spec import BenchmarkSpec, RowPolicy
from cultureqa.core.io import SourceError, write_text

MAX_PROPOSED_DROP = 0.25
"""Largest share of sampled rows ``add`` proposes to drop; more means its proposal is wrong."""
DEFAULT_MAX_INVALID_SHARE = RowPolicy().max_invalid_share


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


def draft(root: Path, name: str, source: str, language: str | None) -> Drafted:
    """Read ``source``, propose its config and load the sample through it.

    ``language`` (None: not given) tags the items only when none carry their own.
    """
    sample = read_sample(source)
    proposal = propose(sample, language)
    language = proposal.language
    path = scaffold.target_path(source, root, name)
    text = scaffold.benchmark_yaml(name, proposal, path, language, root)
    spec = BenchmarkSpec.from_config(yaml.safe_load(text))
    trial = trial_load(spec, sample.frame, source)
    if trial.dropped or trial.repeats:
        if trial.dropped:
            _drop_defective(proposal, trial, source)
        if trial.repeats:
            _drop_repeats(proposal, trial)
        text = scaffold.benchmark_yaml(name, proposal, path, language, root)
        spec = BenchmarkSpec.from_config(yaml.safe_load(text))
    return Drafted(sample, proposal, path, text, spec, trial)


def _drop_defective(proposal: Proposal, trial: Trial, origin: str) -> None:
    """Propose ``rows.invalid: drop`` for the few sampled rows the proposal cannot load.

    A few such rows are defects of the file (a gold that is no option, an empty option); many are
    a sign that the proposal reads a field wrongly, which ``add`` says instead of dropping them.
    Blank lines (GeoMLAMA's separators between groups) are neither: the loader skips and counts
    them, so they are left out of both shares.
    """
    dropped = sum(trial.dropped.values())
    share = dropped / max(trial.kept, 1)
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(trial.dropped.items()))
    if share > MAX_PROPOSED_DROP:
        raise SourceError(
            origin,
            f"the proposed config ({_guesses(proposal)}) reads {trial.kept - dropped} of "
            f"{trial.kept} sampled rows (not loadable: {reasons}); so many failures mean add "
            "misread a field, not that the rows are defective: write conf/benchmark/<name>.yaml "
            "by hand (docs/adding-a-benchmark.md)",
        )
    rows = dict(proposal.rows or {})
    rows["invalid"] = "drop"
    limit = DEFAULT_MAX_INVALID_SHARE
    if share > limit:
        limit = math.ceil(share * 20) / 20  # the next multiple of 5 %
        rows["max_invalid_share"] = limit
    proposal.rows = rows
    proposal.notes.append(
        f"{dropped} of {trial.kept} sampled rows are defective ({reasons}): proposed "
        f"rows.invalid: drop (each dropped row is listed with its reason by validate"
        + (f"; rows.max_invalid_share: {limit}" if "max_invalid_share" in rows else "")
        + ")"
    )


def _drop_repeats(proposal: Proposal, trial: Trial) -> None:
    """Propose ``rows.duplicates: drop`` for items that repeat an earlier one.

    A repeat (CMMLU asks some questions twice, IndoCloze one story twice) would fail the
    uniqueness check; dropped, each is listed with the item it repeats.
    """
    proposal.rows = {**(proposal.rows or {}), "duplicates": "drop"}
    proposal.notes.append(
        f"{trial.repeats} of {trial.kept} sampled rows repeat an earlier item (same language, "
        "question and options): proposed rows.duplicates: drop (each dropped repeat is listed "
        "by validate with the item it repeats)"
    )


def _guesses(proposal: Proposal) -> str:
    """The proposal's question, options and answer fields, as the refusal shows them."""
    columns = proposal.columns
    options = columns["options"]
    shown = options.get("from", options) if isinstance(options, dict) else options
    return f"question {columns['question']!r}, options {shown!r}, answer {columns['answer']!r}"


def add(root: Path, name: str, source: str, language: str | None) -> Added:
    """Copy the source, write the config, its fixture and the ``conf/config.yaml`` entries.

    With per-item languages the fixture takes rows round robin over the languages (one at least
    of each, five or more in all), so the contract test evaluates every declared language.
    """
    config = root / "conf" / "benchmark" / f"{name}.yaml"
    drafted = draft(root, name, source, language)
    path = scaffold.copy_source(drafted.sample, root, name)
    fixtures = root / "tests" / "fixtures" / "benchmarks"
    per_item = drafted.proposal.item_language
    by, rows = (
        ("_file", ROWS) if per_item is None else (per_item.expr, fixture_size(len(per_item.codes)))
    )
    fixture = write_fixture(
        source, drafted.trial.rows, fixtures, name, drafted.sample.split, rows, by
    )
    write_text(config, drafted.text)
    scaffold.add_config_entries(root / "conf" / "config.yaml", name)
    notes = [*drafted.proposal.notes, drafted.trial.note()]
    if len(drafted.trial.rows) < rows:
        notes.append(f"only {len(drafted.trial.rows)} loadable rows for the {rows}-row fixture: "
                     "the contract test will say so")  # fmt: skip
    return Added(path, config, fixture, notes)
