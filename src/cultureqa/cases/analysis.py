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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cultureqa.analysis import stats
from cultureqa.cases.ingest import DOMAINS
from cultureqa.cases.topics import analysis_categories, explode_categories
from cultureqa.cases.weird import DIMENSIONS

ERROR_TYPES: tuple[str, ...] = ("A", "B", "C", "D", "E")
BINS: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
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


def macro_accuracy(pred: pd.DataFrame) -> pd.DataFrame:
    """Mean of the per-domain accuracies over the ten domains, per model and seed."""
    by_domain = stats.accuracy_table(
        pred[pred["domain"].isin(DOMAINS)], ["model", "seed", "domain"]
    )
    grouped = by_domain.groupby(["model", "seed"], sort=True)["accuracy"]
    return grouped.agg(macro_accuracy="mean", n_domains="size").reset_index()


def overall_table(pred: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (Wilson 95% CI), macro accuracy and error rates per model and seed."""
    table = stats.accuracy_table(pred, ["model", "kind", "seed"])
    rates = pred.assign(
        parse_error=pred["status"] == "parse_error", error=pred["status"] == "error"
    ).groupby(["model", "seed"], sort=True)[["parse_error", "error"]]
    table = table.merge(rates.mean().add_suffix("_rate").reset_index(), on=["model", "seed"])
    return table.merge(macro_accuracy(pred), on=["model", "seed"], how="left")


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


def _bin_counts(primary: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per model × bin: n, correct, errors; per model × bin × type: error counts), bins 0–5."""
    rows = primary.dropna(subset=["weird_bin"])
    index = pd.MultiIndex.from_product([sorted(rows["model"].unique()), BINS])
    totals = rows.groupby(["model", "weird_bin"]).agg(
        n=("correct", "size"), correct=("correct", "sum"), errors=("is_error", "sum")
    )
    typed = rows[rows["is_error"]].groupby(["model", "weird_bin", "pred_type"]).size()
    by_type = typed.unstack(fill_value=0).reindex(columns=list(ERROR_TYPES), fill_value=0)
    return totals.reindex(index, fill_value=0), by_type.reindex(index, fill_value=0)


def _trend_row(model: str, measure: str, kind: str, x: np.ndarray, n: np.ndarray) -> dict[str, Any]:
    result = stats.cochran_armitage_trend(x.tolist(), n.tolist(), scores=list(BINS))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n > 0, x / np.maximum(n, 1), np.nan)
    bins = {**{f"p_bin{b}": p[b] for b in BINS}, **{f"n_bin{b}": int(n[b]) for b in BINS}}
    return {"model": model, "measure": measure, "error_type": kind, "z": result.z,
            "p_value": result.p_value, "delta_pp": result.endpoint_delta_pp, **bins}  # fmt: skip


def weird_trends(primary: pd.DataFrame, options: AnalysisOptions) -> pd.DataFrame:
    """Cochran–Armitage trends over WEIRD bins 0–5 (w_b = b), with BH q-values per family.

    Per model: accuracy (correct / answers) and each error-type share (type t / errors).
    ``delta_pp`` is (p5 − p0)·100 over the outermost non-empty bins. Families are the groups of
    ``options.fdr_by`` columns (default: one family per measure).
    """
    totals, by_type = _bin_counts(primary)
    rows = []
    for model in totals.index.get_level_values(0).unique():
        t, k = totals.loc[model], by_type.loc[model]
        rows.append(_trend_row(model, "accuracy", "", t["correct"].to_numpy(), t["n"].to_numpy()))
        errors = t["errors"].to_numpy()
        rows += [_trend_row(model, "error_share", e, k[e].to_numpy(), errors) for e in ERROR_TYPES]
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["q_value"], table["reject"] = np.nan, False
    for _, index in table.groupby(list(options.fdr_by), sort=False).groups.items():
        reject, q = stats.bh_fdr(table.loc[index, "p_value"].to_numpy(), options.fdr_alpha)
        table.loc[index, "q_value"], table.loc[index, "reject"] = q, reject
    return table


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


def dimension_logits(primary: pd.DataFrame, options: AnalysisOptions) -> pd.DataFrame:
    """Logistic regression of each error type on each WEIRD dimension, per model.

    Rows are a model's errors; the outcome is "the error is of type t", the predictor the
    dimension level, without and with continent fixed effects (odds ratio e^β, Wald 95% CI).
    """
    with _one_blas_thread():
        return pd.DataFrame(_logit_rows(primary[primary["is_error"]], options))


def _logit_rows(errors: pd.DataFrame, options: AnalysisOptions) -> list[dict[str, Any]]:
    rows = []
    for model, part in errors.groupby("model", sort=True):
        for dim in options.dimensions:
            data = part[[dim, "continent", "pred_type"]].astype({dim: "float64"})
            for kind in ERROR_TYPES:
                data = data.assign(y=(data["pred_type"] == kind).astype("int64"))
                for label, fe in (("none", []), ("continent", ["continent"])):
                    res = stats.logit_odds_ratio(data, "y", dim, fe)
                    rows.append({"model": model, "dimension": dim, "error_type": kind,
                                 "fixed_effects": label, **res._asdict()})  # fmt: skip
    return rows


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
    tables = {"overall": overall_table(pred)}
    tables["robustness"] = robustness_table(pred, options.robustness_threshold_pp)
    for name, (frame, by) in slices.items():
        table = stats.accuracy_table(frame, ["model", *by])
        tables[f"accuracy_by_{name}"] = table
        tables[f"across_models_by_{name}"] = across_models(table, by, models, options)
    for name, by in (("model", []), ("continent", ["continent"]), ("domain", ["domain"]),
                     ("weird_bin", ["weird_bin"])):  # fmt: skip
        tables[f"error_types_by_{name}"] = error_shares(primary, by, models)
    tables["weird_trends"] = weird_trends(primary, options)
    tables["dimension_logits"] = dimension_logits(primary, options)
    return CasesAnalysis(tables, models)
