"""Validate a config benchmark: pre-flight checks, the whole source and the evaluated sample.

One function for the ``validate`` stage and ``cultureqa benchmark check``, so both say the same
thing. The suite runs on every item the source yields and, when a sample or limit is declared, on
the evaluated items too: a defect outside the sample is still reported, and an imbalance the sample
alone shows is caught. A benchmark may declare an expectation ``report`` instead of ``fail``
(``severity:``): a published dataset's gold imbalance is a fact about it, shown in the report and
MLflow, not a reason to refuse evaluating it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cultureqa.benchmarks.checks import Loaded, load_checked, preflight
from cultureqa.benchmarks.load import LoadCounts
from cultureqa.benchmarks.sources import sample_record, source_provenance
from cultureqa.benchmarks.spec import BenchmarkSpec, SpecError
from cultureqa.evaluation.prompts import Template
from cultureqa.validation.suites import SuiteReport, load_suite, run_suite

GOLD_BALANCE = "expect_gold_positions_to_be_balanced"


@dataclass
class Validation:
    """The outcome: which checks fail the benchmark and which are reported only."""

    spec: BenchmarkSpec
    loaded: Loaded
    templates: dict[str, Template]
    reports: dict[str, SuiteReport]
    """``source`` (every item) and, when sampled, ``sample`` (the evaluated items)."""
    failing: list[dict[str, Any]] = field(default_factory=list)
    reported: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No failing expectation and no crashed one."""
        return not self.failing and not any(r.crashes for r in self.reports.values())

    def lines(self) -> list[str]:
        """Readable sentences: what loading did, then each failing and reported check."""
        counts = self.loaded.counts
        lines = [_load_sentence(self.loaded)]
        if counts.languages:
            each = ", ".join(f"{lang} {n}" for lang, n in sorted(counts.languages.items()))
            lines.append(f"items per language: {each}")
        if counts.dropped:
            lines += [
                f"  dropped {d.file}, row {d.row} ({d.item_id}){d.in_column}: {d.message}"
                for d in counts.dropped[:10]
            ]
        for on, gold in self.gold().items():
            if gold.get("success"):
                lines.append(f"{'WARNING' if gold.get('warning') else 'ok'} [{on}] {gold['line']}")
        for entry in self.failing:
            lines.append(f"FAIL [{entry['on']}] {entry['expectation']}: {entry['detail']}")
        for entry in self.reported:
            lines.append(f"REPORTED [{entry['on']}] {entry['expectation']}: {entry['detail']}")
        for on, report in self.reports.items():
            lines += [f"CRASHED [{on}] {c['expectation']}: {c['detail']}" for c in report.crashes]
        return lines

    def gold(self) -> dict[str, dict[str, Any]]:
        """The gold-balance facts per suite run (``source``, ``sample``) that have them."""
        found = {on: _gold(r) for on, r in self.reports.items()}
        return {on: g for on, g in found.items() if g}

    def warnings(self) -> list[dict[str, Any]]:
        """Passing checks that still show a real skew (gold gap past half the tolerance)."""
        return [
            {"on": on, "expectation": GOLD_BALANCE, "detail": gold["line"]}
            for on, gold in self.gold().items()
            if gold.get("warning")
        ]

    def summary(self, root: Path) -> dict[str, Any]:
        """The JSON written to ``metrics/validate/<name>.json`` (a DVC-tracked output).

        It carries every source file's MD5, so a source edit changes it and reruns ``evaluate``.
        """
        loaded = self.loaded
        return {
            "source": loaded.origin,
            "rows": len(loaded.frame),
            "source_items": len(loaded.whole_frame),
            **sample_record(self.spec, loaded.source),
            "load": loaded.counts.record(),
            "templates": {n: str(t.path.relative_to(root)) for n, t in self.templates.items()},
            "source_tracked_by_dvc": bool(self.spec.source.path),
            "dataset": source_provenance(self.spec, root),
            "success": self.ok,
            "failing": self.failing,
            "reported": self.reported,
            "warnings": self.warnings(),
            "gold_balance": {on: _gold(r) for on, r in self.reports.items()},
            "suites": {on: asdict(r) for on, r in self.reports.items()},
        }


def validate_benchmark(spec: BenchmarkSpec, root: Path, style: str) -> Validation:
    """Run every check ``validate`` runs; raises SpecError/SourceError on config or load errors."""
    if not spec.expectations:
        raise SpecError(f"benchmark '{spec.name}' declares no expectations suite")
    suite = root / spec.expectations
    _check_severity(spec, suite, root)
    templates = preflight(spec, root, style)
    loaded = load_checked(spec, root, keep_items=False)
    overrides = suite_overrides(spec)
    reports = {"source": run_suite(suite, loaded.whole_frame, overrides, root=root)}
    if loaded.sampled:
        reports["sample"] = run_suite(suite, loaded.frame, overrides, root=root)
    found = Validation(spec, loaded, templates, reports)
    for on, report in reports.items():
        for failure in report.failures:
            entry = {"on": on, **{k: failure[k] for k in ("expectation", "column", "detail")}}
            level = spec.severity.get(str(failure["expectation"]), "fail")
            (found.reported if level == "report" else found.failing).append(entry)
    return found


def suite_overrides(spec: BenchmarkSpec) -> dict[str, dict[str, Any]]:
    """Suite kwargs the benchmark's declarations imply (declared mixed option counts)."""
    if len(spec.columns.option_counts) > 1:
        return {"expect_option_counts_to_be_consistent": {"allow_mixed": True}}
    return {}


def _check_severity(spec: BenchmarkSpec, suite: Path, root: Path) -> None:
    """Every ``severity`` key names an expectation of the benchmark's suite."""
    if not spec.severity:
        return
    types = {e["type"] for e in load_suite(suite, root)["expectations"]}
    unknown = sorted(set(spec.severity) - types)
    if unknown:
        raise SpecError(
            f"benchmark '{spec.name}': severity names {unknown}, which are not in "
            f"{spec.expectations} (its expectations: {sorted(types)})"
        )


def _gold(report: SuiteReport) -> dict[str, Any] | None:
    """The gold-balance facts of a suite run (also when they pass), for the report and MLflow."""
    return report.details.get(GOLD_BALANCE)


def _load_sentence(loaded: Loaded) -> str:
    counts = loaded.counts
    reasons = ", ".join(f"{r} {n}" for r, n in counts.dropped_by_reason().items())
    dropped = f"{len(counts.dropped)} dropped ({reasons})" if counts.dropped else "none dropped"
    sample = (
        f"; {len(loaded.frame)} item rows evaluated (sample)"
        if loaded.sampled
        else f"; {len(loaded.frame)} item rows"
    )
    return (
        f"{loaded.origin}: {counts.rows_read} rows read, {counts.skipped} skipped by rows.keep, "
        f"{counts.blank} blank rows skipped, {dropped}{sample}; option labels stripped on "
        f"{counts.labels_stripped} items, "
        f"reordered on {counts.labels_reordered}; {counts.multi_gold} items with several golds"
        + _case_only(counts)
    )


def _case_only(counts: LoadCounts) -> str:
    """Items kept with options that differ only in case, named so a reader can look."""
    if not counts.case_only_options:
        return ""
    first = ", ".join(counts.examples.get("case_only_options", []))
    return (f"; {counts.case_only_options} items with options that differ only in case, kept "
            f"as distinct answers (first: {first})")  # fmt: skip
