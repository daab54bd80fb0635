"""The sections of ``reports/cases/tables.md``: one markdown table, one CSV and a figure each.

Each :class:`Section` names the analysis table it shows, the rows and columns that go into the
markdown (the CSV under ``tables/`` keeps every row and column) and the figure that belongs to it.
A section whose table is empty is still written, with the reason recorded by the analysis, so a
reader never has to guess whether a statistic was forgotten or could not be computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cultureqa.analysis import plots
from cultureqa.analysis.tables import to_markdown
from cultureqa.cases.analysis import POOLED, CasesAnalysis, withheld_summary
from cultureqa.cases.trends import ERROR_TYPES
from cultureqa.core.io import write_csv

TREND_COLUMNS = ("measure", "error_type", "level_low", "level_high", "n_low", "n_high", "p_low",
                 "p_high", "delta_pp", "z", "p_value", "q_value", "reject", "min_expected",
                 "sparse", "chance")  # fmt: skip
TREND_NOTE = ("`sparse`: Cochran's rule fails (an expected count under no trend below 1, or more "
              "than 20% of the 2 × k cells below 5; `min_expected` is the smallest), so the "
              "normal approximation is rough. `chance`: the unit holds a chance baseline's "
              "answers; its z and p are a calibration reference, it enters no BH family and is "
              "never marked significant.")  # fmt: skip
OR_COLUMNS = ["dimension", "error_type", "fixed_effects", "n", "odds_ratio", "ci_low", "ci_high",
              "p_value", "note"]  # fmt: skip
SHARE_COLUMNS = ["n", "n_wrong", "n_untyped", "n_errors", *(f"share_{e}" for e in ERROR_TYPES)]


@dataclass(frozen=True)
class Section:
    """One report section: a view of one analysis table."""

    name: str
    """File stem of the CSV (and key of the empty-table reason)."""
    title: str
    table: str
    """Name of the analysis table."""
    view: Callable[[pd.DataFrame], pd.DataFrame] | None = None
    """Rows of the table this section shows (None = all); the CSV holds the same rows."""
    columns: tuple[str, ...] = ()
    """Columns shown in the markdown (empty = all); the CSV keeps every column."""
    figure: str = ""
    """PNG under the report folder that belongs to this section (empty = none in the paper)."""
    note: str = ""


def _pooled(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["model"] == POOLED]


def _scope(scope: str) -> Callable[[pd.DataFrame], pd.DataFrame]:
    return lambda frame: frame[frame["scope"] == scope]


def _fe(label: str) -> Callable[[pd.DataFrame], pd.DataFrame]:
    return lambda frame: frame[(frame["model"] == POOLED) & (frame["fixed_effects"] == label)]


SECTIONS: tuple[Section, ...] = (
    Section("overall", "Accuracy (Wilson 95% CI) and macro accuracy", "overall",
            note="`macro_accuracy` follows `cases.analysis.macro` (shown in `macro_definition`): "
            "`all_declared` (the paper: sum over all ten declared domains / 10, a domain without "
            "cases counts 0 and is named in `missing_domains`) or `present_domains`."),
    Section("robustness", "Robustness across shuffle seeds", "robustness"),
    Section("weird_bins", "Countries and cases per WEIRD bin", "weird_bins",
            figure="weird_bin_counts.png"),
    Section("error_types_by_model", "Error-type shares by model", "error_types_by_model",
            columns=("model", *SHARE_COLUMNS), figure="error_types_by_model.png"),
    *(Section(f"error_types_by_{key}", f"Error-type shares by {label} ({POOLED})",
              f"error_types_by_{key}", _pooled, (key, *SHARE_COLUMNS), fig,
              "Per-model rows are in the CSV.")
      for key, label, fig in (("continent", "continent", "error_types_by_continent.png"),
                              ("domain", "domain", "error_types_by_domain.png"),
                              ("weird_bin", "WEIRD bin", "weird_bins.png"))),
    Section("trends_pooled", f"Cochran–Armitage trends over WEIRD bins, pooled ({POOLED})",
            "weird_trends", _scope("pooled"), TREND_COLUMNS, "weird_bins.png",
            "Answers of every model stacked (a case counts once per model); Δpp = (p_high − "
            "p_low)·100 between the outermost non-empty bins; BH q-values within each measure. "
            + TREND_NOTE),
    Section("trends_per_model", "Cochran–Armitage trends over WEIRD bins per model",
            "weird_trends", _scope("model"), ("model", *TREND_COLUMNS), "weird_bins.png",
            "BH families: the per-model tests of one measure. " + TREND_NOTE),
    Section("trends_by_domain", "Trends over WEIRD bins per domain (pooled over models)",
            "trends_by_domain", columns=("domain", *TREND_COLUMNS),
            note="BH families: the per-domain tests of one measure. " + TREND_NOTE),
    Section("trends_by_topic", "Trends over WEIRD bins per topic category (pooled over models)",
            "trends_by_topic", columns=("topic_category", *TREND_COLUMNS),
            note="BH families: the per-topic tests of one measure. " + TREND_NOTE),
    Section("dimension_trends", "Trends per WEIRD dimension with endpoint rates (pooled)",
            "dimension_trends", columns=("dimension", *TREND_COLUMNS),
            figure="dimension_levels.png",
            note="Scores are the dimension levels (W 0–1, E 0–2, I 0–3, R 0–3, D 0–2); p_low and "
            "p_high are the rates at the lowest and highest non-empty level. " + TREND_NOTE),
    Section("odds_ratios_pooled", "Logistic odds ratios per dimension, pooled, no fixed effects",
            "dimension_logits", _fe("none"), tuple(OR_COLUMNS), "odds_ratios.png",
            "Outcome: an error is of type t; predictor: the dimension level; odds ratio e^β per "
            "level with a Wald 95% CI; rows are the errors of every model."),
    Section("odds_ratios_pooled_continent", "Logistic odds ratios per dimension, pooled, "
            "continent fixed effects", "dimension_logits", _fe("continent"), tuple(OR_COLUMNS),
            "odds_ratios.png"),
    Section("odds_ratio_shrinkage", "Odds ratios without and with continent fixed effects, "
            f"and the shrinkage ({POOLED})", "odds_ratio_shrinkage", _pooled,
            ("dimension", "error_type", "n", "odds_ratio_none", "odds_ratio_continent",
             "shrinkage"), "odds_ratios.png",
            "The paper's Table 9: shrinkage = 100 · (OR_none − OR_continent) / (OR_none − 1), the "
            "share of the raw OR's distance from 1 that continent fixed effects remove (negative: "
            "the effect grows); a withheld row reads n/a with its reason (listed below the "
            "table). CIs and notes of both fits and per-model rows are in the CSV."),
    Section("odds_ratios_per_model", "Logistic odds ratios per model (CSV only)",
            "dimension_logits", lambda f: f[f["model"] != POOLED], ("model",),
            note="Per-model fits are in the CSV; the markdown lists the models only."),
    Section("domain_topics", "Cases and most frequent topic categories per domain",
            "domain_topics",
            note="The paper's Table 1: normalized topic categories (a case counts once per "
            "category), the five most frequent per domain with their case counts."),
    Section("across_models_by_domain", "Across models by domain", "across_models_by_domain",
            figure="across_models_by_domain.png"),
    Section("across_models_by_continent", "Across models by continent",
            "across_models_by_continent", figure="across_models_by_continent.png"),
    Section("across_models_by_topic", "Across models by topic (n ≥ threshold)",
            "across_models_by_topic", figure="across_models_by_topic.png"),
    Section("across_models_by_continent_domain", "Across models by continent × domain",
            "across_models_by_continent_domain", figure="continent_domain_mean_accuracy.png"),
)  # fmt: skip


def _reason(section: Section, result: CasesAnalysis) -> str:
    notes = result.notes
    if section.table in notes:
        return notes[section.table]
    if section.view is not None and "pooled" in notes:
        return notes["pooled"]
    return "no rows: nothing in the predictions falls in this view"


def render(section: Section, result: CasesAnalysis, out_dir: Path) -> str:
    """Markdown of one section; writes its CSV under ``out_dir/tables/``."""
    table = result.tables.get(section.table, pd.DataFrame())
    rows = section.view(table) if section.view is not None and not table.empty else table
    head = f"## {section.title}\n\n"
    if section.note:
        head += f"{section.note}\n\n"
    if rows.empty:
        return head + f"_Empty: {_reason(section, result)}._\n"
    write_csv(out_dir / "tables" / f"{section.name}.csv", rows)
    shown = rows[[c for c in section.columns if c in rows.columns]] if section.columns else rows
    if section.name == "odds_ratios_per_model":
        shown = shown.drop_duplicates()
    links = f"CSV: `tables/{section.name}.csv`"
    if section.figure and (out_dir / section.figure).exists():
        links += f"; figure: `{section.figure}`"
    if section.name == "odds_ratio_shrinkage":  # why each withheld row is blank
        links += "".join(f"\n- {line}" for line in withheld_summary(rows))
    return head + to_markdown(shown.reset_index(drop=True)) + f"\n{links}\n"


def section_figures(result: CasesAnalysis, out_dir: Path) -> list[Path]:
    """The figures only these sections have: bin counts, dimension levels, odds ratios."""
    t, paths = result.tables, []
    bins = t.get("weird_bins", pd.DataFrame())
    if not bins.empty:
        counts = bins.set_index("weird_bin")[["n_countries", "n_cases"]]
        paths.append(plots.grouped_bars(counts, out_dir / "weird_bin_counts.png",
                                        "countries and cases per WEIRD bin", "count"))  # fmt: skip
    dims = t.get("dimension_trends", pd.DataFrame())
    if not dims.empty:
        acc = dims[dims["measure"] == "accuracy"].set_index("dimension")
        levels = acc[[c for c in acc.columns if c.startswith("p_level")]]
        levels.columns = [c.removeprefix("p_level") for c in levels.columns]
        title = f"accuracy per dimension level ({POOLED})"
        paths.append(plots.level_lines(levels, out_dir / "dimension_levels.png", title, "accuracy"))
    logits = t.get("dimension_logits", pd.DataFrame())
    pooled = logits[logits["model"] == POOLED] if not logits.empty else logits
    if not pooled.dropna(subset=["odds_ratio"]).empty:
        shown = pooled.assign(label=pooled["dimension"] + " · type " + pooled["error_type"],
                              group=pooled["fixed_effects"].map(
                                  {"none": "no FE", "continent": "continent FE"}))  # fmt: skip
        paths.append(plots.forest(shown, out_dir / "odds_ratios.png",
                                  f"error type ~ dimension level ({POOLED})"))  # fmt: skip
    paths += _across_model_figures(result, out_dir)
    return paths


ACROSS_FIGURES = {"domain": "accuracy_by_domain", "topic": "accuracy_by_topic",
                  "continent": "accuracy_by_continent"}  # fmt: skip
"""The paper's Figures 1 and 2 (domain, topic) and the continent panel: mean ± SD with points."""


def _across_model_figures(result: CasesAnalysis, out_dir: Path) -> list[Path]:
    """Accuracy per domain, topic and continent across the pooled models (no baselines)."""
    paths = []
    for name, table_name in ACROSS_FIGURES.items():
        table = result.tables.get(table_name, pd.DataFrame())
        key = "topic_category" if name == "topic" else name
        rows = table[table["model"].isin(result.aggregate_models)] if not table.empty else table
        if rows.empty:
            continue
        title = f"accuracy by {name} across models (mean ± SD, one point per model)"
        paths.append(plots.mean_sd_points(rows, key, out_dir / f"across_models_by_{name}.png",
                                          title))  # fmt: skip
    return paths


def document(result: CasesAnalysis, out_dir: Path) -> str:
    """The whole ``tables.md``: every section in order, empty ones with their reason."""
    models = ", ".join(result.aggregate_models) or "none"
    answered = sorted({int(n) for n in result.tables["overall"].get("n", [])})
    intro = (f"# Cross-cultural scenario benchmark\n\nModels pooled as \"{POOLED}\": {models}. "
             f"Cases answered per model and seed: {', '.join(map(str, answered)) or 'none'} "
             "(`cases.evaluate.limit` takes a subset, round-robin over domains; null = every "
             "case). Every table is also a CSV under `tables/`.\n\n")  # fmt: skip
    return intro + "\n".join(render(s, result, out_dir) for s in SECTIONS)
