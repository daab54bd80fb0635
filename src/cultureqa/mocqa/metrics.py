"""ID-MoCQA metrics (DESIGN.md §6): both hops, their 4-way breakdown, deltas, ranges, shared errors.

Multi-hop accuracy is the share of items whose option is right (``correct``); first-hop accuracy
the share whose province is right (``province_correct``). Parse errors and failed calls are wrong
on both counts. Every rate carries a Wilson 95% interval from :mod:`cultureqa.analysis.stats`,
the one tested implementation every report uses. Models are keyed by (``model``, ``prompt``);
human rows use ``model = prompt = "human"`` and take part in slice tables, not in deltas, ranges
or shared errors (they have no prompt styles and are not a model).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from cultureqa.analysis.stats import accuracy_table
from cultureqa.mocqa.hop_reading import holm
from cultureqa.mocqa.paired import (
    INCONCLUSIVE,
    discordant,
    equivalence_p,
    mcnemar_p,
    n_to_decide,
    paired_difference,
    three_way,
)
from cultureqa.mocqa_shared.schema import CLUE_TYPES, LANGUAGES

KEYS = ["model", "prompt"]
OUTCOMES = ("both_right", "province_only", "answer_only", "both_wrong")
"""4-way breakdown: both hops right; province right, answer wrong; province wrong, answer right;
both wrong."""
SLICES: dict[str, list[str]] = {
    "overall": [],
    "language": ["language"],
    "clue_type": ["clue_type"],
    "clue_type_language": ["clue_type", "language"],
    "province": ["province"],
    "province_language": ["province", "language"],
    "topic": ["topic"],
}
"""Every table the analysis writes, by name: the grouping columns beyond (model, prompt)."""
HUMAN = "human"
PROMPT_ORDER = ("zero_shot", "cot", HUMAN)


def ordered(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows in reading order: model, prompt (zero-shot, CoT, human), language, clue type."""
    ranks = {
        "prompt": {p: i for i, p in enumerate(PROMPT_ORDER)},
        "clue_type": {c: i for i, c in enumerate((*CLUE_TYPES, "all"))},
        "language": {x: i for i, x in enumerate((*LANGUAGES, "all"))},
    }
    keys = [c for c in ("model", "prompt", "language", "clue_type") if c in frame.columns]
    if frame.empty or not keys:
        return frame
    by = {c: frame[c].map(ranks[c]).fillna(len(ranks[c])) if c in ranks else frame[c] for c in keys}
    order = pd.DataFrame(by).sort_values(keys, kind="stable").index
    return frame.loc[order].reset_index(drop=True)


def outcome(preds: pd.DataFrame) -> pd.Series:
    """Each prediction's cell of the 4-way breakdown (see :data:`OUTCOMES`)."""
    province, answer = preds["province_correct"].astype(bool), preds["correct"].astype(bool)
    labels = np.select(
        [province & answer, province & ~answer, ~province & answer],
        list(OUTCOMES[:3]),
        OUTCOMES[3],
    )
    return pd.Series(labels, index=preds.index, name="outcome", dtype="str")


def slice_table(preds: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Per (model, prompt, *by): n, multi-hop and first-hop accuracy with CIs, 4-way shares, rates.

    Columns: keys, ``n``, ``multi_hop`` (+ ``_ci_low``/``_ci_high``), ``first_hop`` (+ CIs),
    one share per :data:`OUTCOMES`, ``parse_error_rate``, ``province_parse_error_rate``,
    ``answer_parse_error_rate``, ``empty_rate`` (empty replies), ``error_rate``.
    """
    keys = [*KEYS, *by]
    table = None
    for column, name in (("correct", "multi_hop"), ("province_correct", "first_hop")):
        part = accuracy_table(preds, keys, column).drop(columns="correct")
        part = part.rename(
            columns={"accuracy": name, "ci_low": f"{name}_ci_low", "ci_high": f"{name}_ci_high"}
        )
        table = part if table is None else table.merge(part.drop(columns="n"), on=keys)
    assert table is not None
    parse = preds["parse_error"].astype(str)
    flags = pd.DataFrame(
        {
            **{o: outcome(preds) == o for o in OUTCOMES},
            "parse_error_rate": preds["status"] == "parse_error",
            "empty_rate": preds["status"] == "empty",
            "province_parse_error_rate": parse.str.contains("province"),
            "answer_parse_error_rate": parse.str.contains("answer"),
            "error_rate": preds["status"] == "error",
        }
    ).astype(float)
    rates = flags.groupby([preds[c] for c in keys], sort=True).mean().reset_index()
    return ordered(table.merge(rates, on=keys, how="left"))


def all_slices(preds: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every :data:`SLICES` table."""
    return {name: slice_table(preds, by) for name, by in SLICES.items()}


def main_table(preds: pd.DataFrame, metric: str = "multi_hop") -> pd.DataFrame:
    """The paper's main table: one row per (model, prompt), columns ``<lang>.<clue type>``.

    Each language block ends with ``<lang>.overall``; the last column is ``overall`` (both
    languages). Values are fractions; reports format them as percentages.
    """
    cells = slice_table(preds, ["language", "clue_type"])
    wide = cells.pivot_table(index=KEYS, columns=["language", "clue_type"], values=metric)
    per_lang = slice_table(preds, ["language"]).pivot_table(
        index=KEYS, columns="language", values=metric
    )
    overall = slice_table(preds, []).set_index(KEYS)[metric]
    languages = [x for x in LANGUAGES if x in per_lang.columns]
    columns: dict[str, pd.Series] = {}
    for lang in languages:
        for clue in (c for c in CLUE_TYPES if (lang, c) in wide.columns):
            columns[f"{lang}.{clue}"] = wide[(lang, clue)]
        columns[f"{lang}.overall"] = per_lang[lang]
    columns["overall"] = overall
    return ordered(pd.DataFrame(columns).reset_index())


DELTA_METRICS = {"multi_hop": "correct", "first_hop": "province_correct"}


DELTA_MARGIN = 0.05
"""Default ``mocqa_eval.margin``: a CoT − zero-shot delta reads "no difference" only when shown
within ± this share of accuracy."""


def cot_deltas(
    preds: pd.DataFrame,
    n_boot: int = 2000,
    seed: int = 0,
    margin: float = DELTA_MARGIN,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """CoT − zero-shot per model × clue type × language (clue type ``all`` = whole language).

    The two styles answer the same items, so each delta is paired: computed on the items both
    styles answered, with a seeded bootstrap 95% interval over items and an exact McNemar
    p-value. Only models evaluated with both prompt styles appear. Columns: model, clue_type,
    language, ``n``, then per metric (multi_hop, first_hop) ``_zero_shot``, ``_cot``,
    ``_delta``, ``_delta_ci_low``, ``_delta_ci_high``, ``_p``.
    """
    models = preds[(preds["model"] != HUMAN) & preds["prompt"].isin(["zero_shot", "cot"])]
    keys = ["model", "clue_type", "language", "item_id"]
    columns = list(DELTA_METRICS.values())
    both = (
        models[models["prompt"] == "zero_shot"][[*keys, *columns]]
        .merge(models[models["prompt"] == "cot"][[*keys, *columns]], on=keys, suffixes=("_z", "_c"))
    )  # fmt: skip
    if both.empty:
        return pd.DataFrame(columns=["model", "clue_type", "language", "n", "multi_hop_delta"])
    cells = [both, both.assign(clue_type="all")]
    rows = [
        _delta_row(model, clue_type, language, part, n_boot, seed, margin)
        for frame in cells
        for (model, clue_type, language), part in frame.groupby(keys[:3], sort=True)
    ]
    return read_deltas(ordered(pd.DataFrame(rows)), margin, alpha)


def read_deltas(table: pd.DataFrame, margin: float, alpha: float = 0.05) -> pd.DataFrame:
    """Each delta's reading: a difference, no difference beyond ± ``margin``, or inconclusive.

    Holm over every row of the table (per metric), once for McNemar and once for the TOST
    (:func:`cultureqa.mocqa.paired.equivalence_p`), as the hop table reads; an inconclusive
    delta gets the paired items that would decide it.
    """
    out = table.copy()
    for name in DELTA_METRICS:
        diff = holm(out[f"{name}_p"].to_numpy(dtype=float), alpha)
        same = holm(out[f"{name}_p_equivalence"].to_numpy(dtype=float), alpha)
        out[f"{name}_p_holm"], out[f"{name}_p_equivalence_holm"] = diff, same
        out[f"{name}_reading"] = three_way(diff, same, alpha)
        family = max(int(np.isfinite(diff).sum()), 1)
        spread = out[f"{name}_discordant"].to_numpy(dtype=float) - out[f"{name}_delta"] ** 2
        out[f"{name}_n_to_decide"] = [
            n_to_decide(d, float(np.sqrt(max(v, 0.0))), margin, alpha / family)
            if r == INCONCLUSIVE
            else None
            for d, v, r in zip(out[f"{name}_delta"], spread, out[f"{name}_reading"], strict=True)
        ]
    return out


def _delta_row(
    model: str,
    clue_type: str,
    language: str,
    part: pd.DataFrame,
    n_boot: int,
    seed: int,
    margin: float = DELTA_MARGIN,
) -> dict[str, Any]:
    row: dict[str, Any] = {"model": model, "clue_type": clue_type, "language": language}
    row["n"] = len(part)
    for name, column in DELTA_METRICS.items():
        zero = part[f"{column}_z"].fillna(False).astype(bool).to_numpy()
        cot = part[f"{column}_c"].fillna(False).astype(bool).to_numpy()
        delta, (low, high) = paired_difference(cot, zero, n_boot, seed)
        row |= {f"{name}_zero_shot": zero.mean(), f"{name}_cot": cot.mean()}
        row |= {f"{name}_delta": delta, f"{name}_delta_ci_low": low}
        row |= {f"{name}_delta_ci_high": high, f"{name}_p": mcnemar_p(cot, zero)}
        only_cot, only_zero = discordant(cot, zero)
        row[f"{name}_discordant"] = (only_cot + only_zero) / len(part) if len(part) else np.nan
        row[f"{name}_p_equivalence"] = float(equivalence_p(only_cot, only_zero, len(part), margin))
    return row


def clue_type_range(preds: pd.DataFrame, metric: str = "multi_hop") -> pd.DataFrame:
    """Best − worst clue type per (model, prompt, language); language ``all`` pools both."""
    models = preds[preds["model"] != HUMAN]
    cells = pd.concat(
        [
            slice_table(models, ["clue_type", "language"]),
            slice_table(models, ["clue_type"]).assign(language="all"),
        ],
        ignore_index=True,
    )
    rows = []
    for (model, prompt, language), part in cells.groupby([*KEYS, "language"], sort=True):
        ranked = part.sort_values([metric, "clue_type"], ascending=[False, True])
        best, worst = ranked.iloc[0], ranked.iloc[-1]
        rows.append(
            {
                "model": model,
                "prompt": prompt,
                "language": language,
                "best_clue_type": best["clue_type"],
                "best": best[metric],
                "worst_clue_type": worst["clue_type"],
                "worst": worst[metric],
                "range": best[metric] - worst[metric],
            }
        )
    return ordered(pd.DataFrame(rows))


class SharedErrors(NamedTuple):
    """Items every evaluated model gets wrong with the same option, and their counts."""

    items: pd.DataFrame
    by_topic: pd.DataFrame
    by_province: pd.DataFrame


def shared_errors(
    preds: pd.DataFrame, exclude_backends: Sequence[str] = ("random", "fixed"), min_models: int = 2
) -> SharedErrors:
    """Per prompt style: items where all evaluated models pick the same wrong option.

    Baselines (``exclude_backends``) and humans are left out: a shared *misconception* is a
    claim about language models. A prompt style with fewer than ``min_models`` models has none.
    Only items every counted model answered take part; a parse error picks no option.
    """
    eligible = preds[~preds["backend"].isin([*exclude_backends, HUMAN])]
    frames = []
    for prompt, part in eligible.groupby("prompt", sort=True):
        n_models = part["model"].nunique()
        if n_models < min_models:
            continue
        per_item = part.groupby("item_id").agg(
            n=("model", "nunique"),
            picks=("answer_pred", "nunique"),
            pred=("answer_pred", "first"),
            **{c: (c, "first") for c in ("gold", "language", "clue_type", "province", "topic")},
        )
        per_item = per_item[per_item["n"] == n_models].reset_index()
        per_item["shared_error"] = (
            (per_item["picks"] == 1)
            & (per_item["pred"] != "")
            & (per_item["pred"] != per_item["gold"])
        )
        frames.append(per_item.assign(prompt=prompt, n_models=n_models))
    if not frames:
        empty = pd.DataFrame(columns=["prompt", "item_id", "shared_error"])
        return SharedErrors(empty, _counts(empty, "topic"), _counts(empty, "province"))
    checked = pd.concat(frames, ignore_index=True)
    items = checked[checked["shared_error"]].rename(columns={"pred": "shared_pred"})
    columns = ["prompt", "item_id", "language", "clue_type", "province", "topic", "gold"]
    items = items[[*columns, "shared_pred", "n_models"]].reset_index(drop=True)
    return SharedErrors(items, _counts(checked, "topic"), _counts(checked, "province"))


def _counts(checked: pd.DataFrame, column: str) -> pd.DataFrame:
    if checked.empty:
        return pd.DataFrame(columns=["prompt", column, "items", "shared_errors", "share"])
    grouped = checked.groupby(["prompt", column], sort=True)["shared_error"]
    out = grouped.agg(items="size", shared_errors="sum").reset_index()
    out["shared_errors"] = out["shared_errors"].astype("int64")
    out["share"] = out["shared_errors"] / out["items"]
    return out


def summary(slices: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """Nested ``{model: {prompt: {all|en|id: {...}}}}`` for DVC metrics (rounded, stable keys).

    Only the headline numbers: ``dvc exp show`` prints one column per leaf, and the breakdown,
    slices and error rates already live in ``reports/mocqa`` and MLflow.
    """
    tree: dict[str, Any] = {}
    rows = [*slices["overall"].assign(language="all").to_dict("records")]
    rows += slices["language"].to_dict("records")
    for row in rows:
        node = tree.setdefault(str(row["model"]), {}).setdefault(str(row["prompt"]), {})
        node[str(row["language"])] = {
            "n": int(row["n"]),
            **{
                k: round(float(row[k]), 6)
                for k in ("multi_hop", "first_hop", "parse_error_rate", "empty_rate")
            },
        }
    return tree
