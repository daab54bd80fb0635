"""Analysis of the cross-cultural benchmark (DESIGN.md §6): how often models fail, and how.

Input is the predictions table of every roster entry and seed (plus human rows, if any); output
is a set of plain tables. Every statistic comes from :mod:`cultureqa.analysis.stats`, so a number
in a report has one tested implementation. Error types are the distractor types A–E behind the
chosen letter; an *error* is a wrong answer with a readable selection, so error-type shares of a
unit sum to one, and unreadable replies are counted separately (``n_untyped``).

Slices, error types, WEIRD trends and regressions use the primary seed; the other seed only
enters the overall table and the robustness gap.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cultureqa.analysis import stats
from cultureqa.cases import trends
from cultureqa.cases.ingest import DOMAINS
from cultureqa.cases.topics import analysis_categories, explode_categories
from cultureqa.cases.weird import DIMENSIONS

ERROR_TYPES = trends.ERROR_TYPES
BINS = trends.BINS
POOLED = "all models"
"""Model label of rows pooled over the models that form "across models"."""
REQUIRED: tuple[str, ...] = (
    "model", "kind", "seed", "case_id", "correct", "status", "pred_type",
    "domain", "continent", "weird_bin", "topic_categories",
)  # fmt: skip


@dataclass(frozen=True)
class AnalysisOptions:
    """The ``cases.analysis`` params (plus the robustness threshold)."""

    primary_seed: int
    min_topic_n: int = 50
    topic_exclude: tuple[str, ...] = ("uncategorized",)
    small_cell_n: int = 10
    sensitivity_without: str | None = None
    include_baselines: bool = False
    fdr_alpha: float = 0.05
    fdr_by: tuple[str, ...] = ("measure",)
    dimensions: tuple[str, ...] = DIMENSIONS
    robustness_threshold_pp: float = 2.0
    macro: str = "all_declared"
    """Macro-accuracy definition, one of :data:`MACRO_DEFINITIONS`."""

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], threshold_pp: float = 2.0) -> AnalysisOptions:
        """Build from the params section; list-valued keys become tuples."""
        known = {k: v for k, v in cfg.items() if k in cls.__dataclass_fields__}
        for key in ("topic_exclude", "fdr_by", "dimensions"):
            if key in known:
                known[key] = tuple(known[key])
        return cls(**known, robustness_threshold_pp=threshold_pp)


@dataclass
class CasesAnalysis:
    """Named result tables; :mod:`cultureqa.cases.report` turns them into files."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    aggregate_models: tuple[str, ...] = ()
    """Models averaged in the across-model tables (no baselines unless asked, no humans)."""
    notes: dict[str, str] = field(default_factory=dict)
    """Why a table is empty, per table name, so a report section says so instead of vanishing."""


def prepare(predictions: pd.DataFrame) -> pd.DataFrame:
    """Check the columns and add ``is_error`` (wrong with a typed selection) and ``untyped``."""
    if missing := [c for c in REQUIRED if c not in predictions.columns]:
        raise KeyError(f"predictions lack column(s) {missing}")
    out = predictions.copy()
    out["correct"] = out["correct"].astype(bool)
    out["pred_type"] = out["pred_type"].fillna("").astype(str)
    out["is_error"] = ~out["correct"] & out["pred_type"].isin(ERROR_TYPES)
    out["untyped"] = ~out["correct"] & ~out["pred_type"].isin(ERROR_TYPES)
    out["weird_bin"] = pd.to_numeric(out["weird_bin"]).astype("Int64")
    return out


def aggregate_models(pred: pd.DataFrame, include_baselines: bool) -> tuple[str, ...]:
    """Models averaged "across models": kind ``model`` (and ``baseline`` if asked), never humans."""
    kinds = {"model", "baseline"} if include_baselines else {"model"}
    return tuple(sorted(pred.loc[pred["kind"].isin(kinds), "model"].unique()))


MACRO_DEFINITIONS: tuple[str, ...] = ("all_declared", "present_domains")
"""``all_declared``: the paper's macro accuracy, the sum of per-domain accuracies over all ten
declared domains divided by ten (a domain without cases contributes 0 and is flagged);
``present_domains``: the mean over the domains that have cases (a named alternative)."""


def macro_accuracy(pred: pd.DataFrame, definition: str = "all_declared") -> pd.DataFrame:
    """Macro accuracy over the declared domains per model and seed, with both definitions.

    ``macro_accuracy`` follows ``definition``; ``macro_accuracy_all_declared`` and
    ``macro_accuracy_present`` hold both, ``missing_domains`` names the declared domains a
    model has no answers in (so a lower all-declared value is never a silent zero).
    """
    if definition not in MACRO_DEFINITIONS:
        raise ValueError(f"macro definition {definition!r} is not one of {MACRO_DEFINITIONS}")
    by_domain = stats.accuracy_table(
        pred[pred["domain"].isin(DOMAINS)], ["model", "seed", "domain"]
    )
    grouped = by_domain.groupby(["model", "seed"], sort=True)
    out = grouped["accuracy"].agg(macro_accuracy_present="mean", n_domains="size")
    out["macro_accuracy_all_declared"] = grouped["accuracy"].sum() / len(DOMAINS)
    present = grouped["domain"].agg(set)
    out["missing_domains"] = present.map(lambda s: ", ".join(d for d in DOMAINS if d not in s))
    chosen = (
        "macro_accuracy_all_declared" if definition == "all_declared" else "macro_accuracy_present"
    )
    out["macro_accuracy"] = out[chosen]
    out["macro_definition"] = definition
    return out.reset_index()


def overall_table(pred: pd.DataFrame, macro: str = "all_declared") -> pd.DataFrame:
    """Accuracy (Wilson 95% CI), macro accuracy and error rates per model and seed."""
    table = stats.accuracy_table(pred, ["model", "kind", "seed"])
    rates = pred.assign(
        parse_error=pred["status"] == "parse_error",
        empty=pred["status"] == "empty",
        error=pred["status"] == "error",
    ).groupby(["model", "seed"], sort=True)[["parse_error", "empty", "error"]]
    table = table.merge(rates.mean().add_suffix("_rate").reset_index(), on=["model", "seed"])
    return table.merge(macro_accuracy(pred, macro), on=["model", "seed"], how="left")


def robustness_table(pred: pd.DataFrame, threshold_pp: float) -> pd.DataFrame:
    """Per model: accuracy per seed (pp) and the largest gap between seeds against the threshold."""
    acc = pred.groupby(["model", "seed"], sort=True)["correct"].mean().mul(100).unstack("seed")
    rows = []
    for model, values in acc.iterrows():
        per_seed = {str(s): float(v) for s, v in values.items() if pd.notna(v)}
        gap = stats.max_pairwise_gap(per_seed)
        robust = bool(gap <= threshold_pp) if np.isfinite(gap) else pd.NA
        seeds = {f"accuracy_pp_seed_{s}": v for s, v in per_seed.items()}
        rows.append({"model": model, **seeds, "max_gap_pp": gap, "threshold_pp": threshold_pp,
                     "robust": robust})  # fmt: skip
    return pd.DataFrame(rows)


def topic_rows(primary: pd.DataFrame, options: AnalysisOptions) -> pd.DataFrame:
    """One row per prediction × topic category, for categories with ``min_topic_n`` cases."""
    cases = primary.drop_duplicates("case_id")
    keep = analysis_categories(cases, options.min_topic_n, options.topic_exclude)
    exploded = explode_categories(primary)
    return exploded[exploded["topic_category"].isin(keep)]


def across_models(
    table: pd.DataFrame, by: list[str], models: Iterable[str], options: AnalysisOptions
) -> pd.DataFrame:
    """Mean and SD of accuracy across models per cell; small cells flagged; sensitivity columns.

    ``n`` is the number of cases in the cell (the largest per-model count, as every model answers
    every case). With ``sensitivity_without`` set, the mean and SD are recomputed without that
    model and ``delta_pp`` says how much it moved the mean.
    """
    sub = table[table["model"].isin(list(models))]
    out = sub.groupby(by, sort=True).agg(
        mean_accuracy=("accuracy", "mean"), sd_accuracy=("accuracy", "std"),
        n_models=("model", "nunique"), n=("n", "max"),
    )  # fmt: skip
    out["small_n"] = out["n"] < options.small_cell_n
    if options.sensitivity_without:
        rest = sub[sub["model"] != options.sensitivity_without].groupby(by, sort=True)["accuracy"]
        out["mean_accuracy_without"] = rest.mean()
        out["sd_accuracy_without"] = rest.std()
        out["delta_pp"] = (out["mean_accuracy"] - out["mean_accuracy_without"]) * 100
    return out.reset_index()


def error_shares(primary: pd.DataFrame, by: list[str], models: Iterable[str]) -> pd.DataFrame:
    """Errors of each type / all errors of the unit, per model and pooled over ``models``.

    Columns: keys, ``n`` (answers), ``n_wrong``, ``n_untyped``, ``n_errors``, ``n_A`` … ``n_E``,
    ``share_A`` … ``share_E`` (NaN for a unit without errors).
    """
    pooled = primary[primary["model"].isin(list(models))].assign(model=POOLED)
    frame = pd.concat([primary, pooled], ignore_index=True)
    keys = ["model", *by]
    base = frame.assign(wrong=~frame["correct"]).groupby(keys, sort=True, observed=True)
    out = base.agg(n=("correct", "size"), n_wrong=("wrong", "sum"), n_untyped=("untyped", "sum"))
    errors = frame[frame["is_error"]]
    counts = errors.groupby([*keys, "pred_type"], observed=True).size().unstack(fill_value=0)
    counts = counts.reindex(columns=list(ERROR_TYPES), fill_value=0)
    out = out.join(counts.add_prefix("n_"), how="left").fillna({f"n_{t}": 0 for t in ERROR_TYPES})
    type_counts = out[[f"n_{t}" for t in ERROR_TYPES]].astype("int64")
    out["n_errors"] = type_counts.sum(axis=1)
    shares = type_counts.div(out["n_errors"].where(out["n_errors"] > 0), axis=0)
    out[[f"share_{t}" for t in ERROR_TYPES]] = shares.to_numpy()
    return out.reset_index()


def weird_trends(
    primary: pd.DataFrame, options: AnalysisOptions, models: Iterable[str] = ()
) -> pd.DataFrame:
    """Cochran–Armitage trends over WEIRD bins 0–5 (w_b = b), per model and pooled over models.

    Per unit: accuracy (correct / answers) and each error-type share (type t / errors).
    ``delta_pp`` is (p5 − p0)·100 over the outermost non-empty bins. Pooled rows (``model`` =
    :data:`POOLED`, ``scope`` = ``pooled``) stack the answers of ``models``. BH families are the
    groups of ``scope`` plus ``options.fdr_by`` (default: one family per scope and measure).
    """
    per_model = trends.trend_table(primary, "model", "weird_bin", "model")
    pooled_rows = primary[primary["model"].isin(list(models))].assign(model=POOLED)
    pooled = trends.trend_table(pooled_rows, "model", "weird_bin", "pooled")
    parts = [t for t in (pooled, per_model) if not t.empty]
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    return trends.add_q_values(table, ["scope", *options.fdr_by], options.fdr_alpha)


def unit_trends(
    frame: pd.DataFrame, unit: str, models: Iterable[str], options: AnalysisOptions
) -> pd.DataFrame:
    """Trends over WEIRD bins per ``unit`` (domain or topic), pooled over ``models``."""
    rows = frame[frame["model"].isin(list(models))]
    table = trends.trend_table(rows, unit, "weird_bin", unit)
    return trends.add_q_values(table, ["measure"], options.fdr_alpha)


def dimension_trends(
    primary: pd.DataFrame, models: Iterable[str], options: AnalysisOptions
) -> pd.DataFrame:
    """Trends over each dimension's levels (W 0–1, E 0–2, I 0–3, R 0–3, D 0–2), pooled.

    ``p_low``/``p_high`` are the endpoint rates at the lowest and highest non-empty level.
    """
    rows = primary[primary["model"].isin(list(models))]
    parts = [
        trends.trend_table(rows.assign(dimension=dim), "dimension", dim, "dimension", "level")
        for dim in options.dimensions
    ]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame()
    return trends.add_q_values(pd.concat(parts, ignore_index=True), ["measure"], options.fdr_alpha)


def bin_table(primary: pd.DataFrame, examples: int = 5) -> pd.DataFrame:
    """Countries and cases per WEIRD bin 0–5, with the countries with most cases as examples.

    A country whose levels are partly set by hand (no official figure) is marked ``(hand)`` in
    the examples and counted in ``n_hand_countries``.
    """
    cases = primary.drop_duplicates("case_id").dropna(subset=["weird_bin"])
    marked: set[str] = set()
    if "hand_annotated" in cases.columns:
        hand = cases["hand_annotated"].fillna(False).astype(bool)
        marked = set(cases.loc[hand, "country"].astype(str))
    rows = []
    for b in BINS:
        part = cases[cases["weird_bin"] == b]
        counts = part["country"].astype(str).value_counts()
        counts = counts.sort_index().sort_values(ascending=False, kind="stable")
        shown = ", ".join(f"{c}{' (hand)' if c in marked else ''} ({n})"
                          for c, n in counts.head(examples).items())  # fmt: skip
        rows.append({"weird_bin": b, "n_countries": len(counts), "n_cases": len(part),
                     "n_hand_countries": len(set(counts.index) & marked),
                     "example_countries": shown or "—"})  # fmt: skip
    return pd.DataFrame(rows)


def _one_blas_thread() -> contextlib.AbstractContextManager[Any]:
    """Single-threaded BLAS for the many small logistic fits.

    On tall, narrow design matrices extra BLAS threads only add contention (about 4x slower on
    2 shared cores). threadpoolctl comes with mlflow (through scikit-learn).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - an optional speed-up
        return contextlib.nullcontext()
    limits: contextlib.AbstractContextManager[Any] = threadpool_limits(limits=1, user_api="blas")
    return limits


def dimension_logits(
    primary: pd.DataFrame, options: AnalysisOptions, models: Iterable[str] = ()
) -> pd.DataFrame:
    """Logistic regression of each error type on each WEIRD dimension, per model and pooled.

    Rows are errors; the outcome is "the error is of type t", the predictor the dimension
    level, without and with continent fixed effects (odds ratio e^β, Wald 95% CI). Pooled rows
    (``model`` = :data:`POOLED`) fit the errors of every model in ``models`` together.
    """
    errors = primary[primary["is_error"]]
    pooled = errors[errors["model"].isin(list(models))].assign(model=POOLED)
    with _one_blas_thread():
        rows = trends.logit_rows(pooled, "model", options.dimensions)
        rows += trends.logit_rows(errors, "model", options.dimensions)
    return pd.DataFrame(rows)


SHRINKAGE_TOLERANCE = 0.05
"""|OR_raw − 1| below this leaves the shrinkage's denominator too near 0 to divide by."""
NEAR_ONE = "raw OR ≈ 1"
COVERS_ONE = "raw OR's 95% CI covers 1"
RAW_FIT_FAILED = "raw fit failed"
FE_FIT_FAILED = "fit with continent failed"
DETERMINED = "determined by continent"
WITHHELD = {
    NEAR_ONE: f"|OR_none − 1| < {SHRINKAGE_TOLERANCE}: no effect to shrink (a ratio over ~0)",
    COVERS_ONE: "OR_none's 95% CI covers 1: no effect shown to shrink",
    RAW_FIT_FAILED: "the fit without fixed effects failed (its note says how): no OR_none",
    FE_FIT_FAILED: "the fit with continent fixed effects failed to converge or separated "
    "(its note says how): no OR_continent",
    DETERMINED: "within each continent the dimension does not vary (it is collinear with the "
    "continent fixed effects, or no level is left once continents whose outcome never varies "
    "are dropped): the fit with continent cannot be made on this case bank, whatever the model",
}
"""Each reason a Table 9 row is withheld, as the report explains it; the printed cell is
``n/a (<reason>)``."""
_DETERMINED_NOTES = ("collinear with the fixed effects", "predictor has no variation")


def shrinkage_pct(or_raw: Any, or_fe: Any) -> Any:
    """The seed's Table 9 shrinkage: 100 · (OR_raw − OR_FE) / (OR_raw − 1).

    The share of the raw odds ratio's distance from 1 that continent fixed effects remove
    (0 = unchanged, 100 = gone, negative = the effect grows). Its five rows fit this definition
    (W: 1.86 → 2.56 gives −81.4 %, printed −80.7 % from unrounded ORs), not one on the log
    scale. Works on scalars and arrays alike; no guard here (see :func:`shrinkage_guarded`).
    """
    raw, fe = np.asarray(or_raw, dtype=float), np.asarray(or_fe, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100 * (raw - fe) / (raw - 1)


def shrinkage_guarded(
    or_raw: pd.Series,
    or_fe: pd.Series,
    ci_low: pd.Series,
    ci_high: pd.Series,
    fe_note: pd.Series | None = None,
) -> tuple[pd.Series, pd.Series]:
    """(shrinkage %, the :data:`WITHHELD` reason or ""), one reason per row.

    A failed fit comes first (there is no number to judge), split by the continent fit's note
    into "determined by continent" (the dimension does not vary within continents: no data can
    fit it) and other failures; then a raw OR near 1 (the default run printed −3279 % and
    1983 % from ratios over ~0); then a raw OR whose CI covers 1.
    """
    value = pd.Series(shrinkage_pct(or_raw, or_fe), index=or_raw.index)
    notes = (fe_note if fe_note is not None else pd.Series("", index=or_raw.index)).fillna("")
    determined = notes.astype(str).str.contains("|".join(_DETERMINED_NOTES), regex=True)
    reason = pd.Series("", index=or_raw.index, dtype=object)
    reason[(ci_low <= 1) & (ci_high >= 1)] = COVERS_ONE
    reason[(or_raw - 1).abs() < SHRINKAGE_TOLERANCE] = NEAR_ONE
    reason[or_fe.isna()] = FE_FIT_FAILED
    reason[or_fe.isna() & determined] = DETERMINED
    reason[or_raw.isna()] = RAW_FIT_FAILED
    return value.where(reason == ""), reason


def odds_ratio_shrinkage(logits: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table 9 columns: each OR without and with continent FE, and the shrinkage.

    ``shrinkage_pct`` = 100 · (OR_none − OR_continent) / (OR_none − 1) (:func:`shrinkage_pct`),
    NaN with ``shrinkage_withheld`` naming the reason (:data:`WITHHELD`); ``shrinkage`` is the
    printed form: the percentage to one decimal, or ``n/a (<reason>)``. ``note_none`` /
    ``note_continent`` keep each fit's own note (how it failed, which rows it dropped).
    """
    if logits.empty:
        return pd.DataFrame()
    keys = ["model", "dimension", "error_type"]
    logits = logits if "note" in logits.columns else logits.assign(note="")
    values = ["odds_ratio", "ci_low", "ci_high", "n", "note"]
    wide = logits.set_index([*keys, "fixed_effects"])[values].unstack("fixed_effects")
    out = pd.DataFrame(index=wide.index)
    for fe in ("none", "continent"):
        for column in ("odds_ratio", "ci_low", "ci_high"):
            out[f"{column}_{fe}"] = wide[(column, fe)].astype(float)
        out[f"note_{fe}"] = wide[("note", fe)].fillna("").astype(str)
    out["n"] = wide[("n", "none")]
    out["shrinkage_pct"], out["shrinkage_withheld"] = shrinkage_guarded(
        out["odds_ratio_none"], out["odds_ratio_continent"], out["ci_low_none"],
        out["ci_high_none"], out["note_continent"],
    )  # fmt: skip
    out["shrinkage"] = [
        f"n/a ({reason})" if reason else f"{value:.1f} %"
        for value, reason in zip(out["shrinkage_pct"], out["shrinkage_withheld"], strict=True)
    ]
    return out.reset_index()


def withheld_summary(table: pd.DataFrame) -> list[str]:
    """One line per withheld reason of a Table 9: how many rows, which dimensions, and why.

    A reason every row of a dimension shares (W determined by continent on the shipped case
    bank) is named with the dimension, so a reader sees why the row can never be fitted there.
    """
    if table.empty or "shrinkage_withheld" not in table.columns:
        return []
    withheld = table[table["shrinkage_withheld"] != ""]
    lines = [f"{len(withheld)} of {len(table)} rows withheld."]
    for reason, rows in withheld.groupby("shrinkage_withheld", sort=True):
        dims = ", ".join(sorted(rows["dimension"].astype(str).unique()))
        lines.append(f"n/a ({reason}): {len(rows)} rows (dimensions {dims}) — {WITHHELD[reason]}.")
    return lines


def domain_topics(primary: pd.DataFrame, top: int = 5, exclude: Sequence[str] = ()) -> pd.DataFrame:
    """The paper's Table 1: cases per domain and the domain's most frequent topic categories."""
    cases = primary.drop_duplicates("case_id")
    exploded = explode_categories(cases)
    exploded = exploded[~exploded["topic_category"].isin(list(exclude))]
    rows = []
    for domain in sorted(cases["domain"].astype(str).unique()):
        counts = exploded.loc[exploded["domain"] == domain, "topic_category"].value_counts()
        counts = counts.sort_index().sort_values(ascending=False, kind="stable")
        shown = ", ".join(f"{c} ({n})" for c, n in counts.head(top).items())
        rows.append({"domain": domain, "n_cases": int((cases["domain"] == domain).sum()),
                     "n_categories": len(counts), "top_topics": shown or "—"})  # fmt: skip
    return pd.DataFrame(rows)


def analyze(predictions: pd.DataFrame, options: AnalysisOptions) -> CasesAnalysis:
    """Every table of DESIGN.md §6 from the predictions of all models, seeds (and humans)."""
    pred = prepare(predictions)
    primary = pred[pred["seed"] == options.primary_seed]
    if primary.empty:
        raise ValueError(f"no predictions for the primary seed {options.primary_seed}")
    models = aggregate_models(pred, options.include_baselines)
    topics = topic_rows(primary, options)
    slices = {
        "domain": (primary, ["domain"]),
        "continent": (primary, ["continent"]),
        "topic": (topics, ["topic_category"]),
        "continent_domain": (primary, ["continent", "domain"]),
    }
    tables = {"overall": overall_table(pred, options.macro)}
    tables["robustness"] = robustness_table(pred, options.robustness_threshold_pp)
    for name, (frame, by) in slices.items():
        table = stats.accuracy_table(frame, ["model", *by])
        tables[f"accuracy_by_{name}"] = table
        tables[f"across_models_by_{name}"] = across_models(table, by, models, options)
    for name, by in (("model", []), ("continent", ["continent"]), ("domain", ["domain"]),
                     ("weird_bin", ["weird_bin"])):  # fmt: skip
        tables[f"error_types_by_{name}"] = error_shares(primary, by, models)
    tables["weird_bins"] = bin_table(primary)
    tables["weird_trends"] = weird_trends(primary, options, models)
    tables["trends_by_domain"] = unit_trends(primary, "domain", models, options)
    tables["trends_by_topic"] = unit_trends(topics, "topic_category", models, options)
    tables["dimension_trends"] = dimension_trends(primary, models, options)
    tables["dimension_logits"] = dimension_logits(primary, options, models)
    tables["odds_ratio_shrinkage"] = odds_ratio_shrinkage(tables["dimension_logits"])
    tables["domain_topics"] = domain_topics(primary, exclude=options.topic_exclude)
    return CasesAnalysis(tables, models, empty_reasons(tables, models, topics, options))


POOLED_TABLES = ("trends_by_domain", "trends_by_topic", "dimension_trends")


def empty_reasons(
    tables: Mapping[str, pd.DataFrame],
    models: Sequence[str],
    topics: pd.DataFrame,
    options: AnalysisOptions,
) -> dict[str, str]:
    """A reason for every empty table (and for the pooled parts, which need ≥ 1 model)."""
    no_models = (
        "no roster entry of kind 'model' to pool (baselines enter only with "
        f"cases.analysis.include_baselines: true; it is {options.include_baselines})"
    )
    notes = {"pooled": no_models} if not models else {}
    for name, table in tables.items():
        if not table.empty:
            continue
        if name.startswith("across_models") or name in POOLED_TABLES:
            notes[name] = no_models if not models else "no answers in any cell"
        if name.endswith("topic") and topics.empty:
            notes[name] = (
                f"no topic category has ≥ {options.min_topic_n} cases "
                f"(cases.analysis.min_topic_n; excluded: {list(options.topic_exclude)})"
            )
        notes.setdefault(name, "no rows: the predictions hold nothing this table counts")
    return notes
