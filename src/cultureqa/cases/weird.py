"""WEIRD annotation of countries from external indicators, never from case text (DESIGN.md §6).

Five dimensions per country, each from one published indicator in
``data/knowledge/countries/indicators.csv``:

* **W** Western civilization (Huntington 1996): 0/1.
* **E** UNDP mean years of schooling, tertile over the global country sample: 0–2.
* **I** World Bank GDP per capita PPP, quartile over the global country sample: 0–3.
* **R** World Bank income group: Low 0, Lower-middle 1, Upper-middle 2, High 3.
* **D** Freedom House status: Not Free 0, Partly Free 1, Free 2.

``WEIRDScore = W/1 + E/2 + I/3 + R/3 + D/2`` lies in [0, 5] and ``WEIRDBin = floor(score)``.
The score is summed in integer sixths so the bin never suffers float round-off (1/3 + 2/3).

Thresholds come from *every* country in the table that has the indicator, not from the countries
that happen to appear in cases, so bins mean the same thing across datasets. Cut points are
``numpy.quantile`` (linear interpolation) at 1/3, 2/3 and 1/4, 1/2, 3/4; classes are
right-closed like ``pandas.qcut``: a value equal to a cut point falls in the lower class, and
tied values always share a class (so class sizes can differ by the size of a tie).

**Hand-annotated levels.** A country a source does not cover (e.g. no World Bank PPP series for
Cuba) may carry a level set by hand in ``e_level`` / ``i_level``, with the evidence in the
source and ``hand_note`` columns; such a level never enters the cut-point sample, and a row may
not have both a raw value and a hand level. A level nobody can state with confidence stays
blank: the country is then listed without a bin (:func:`country_table` says which level is
missing) instead of receiving a guessed one.

**Cut samples.** By default the cuts come from every table row with a raw value (all UN members
the source covers). ``cut_samples`` adds a source's full published sample (its territories and
non-member economies too), as a tidy CSV written from the loaders in
:mod:`cultureqa.cases.indicator_loaders`; the sample used is recorded with the cuts.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cultureqa.cases.geography import CONTINENTS, iso3_of, known_iso3
from cultureqa.io import SourceError
from cultureqa.paths import project_root

__all__ = [
    "DIMENSIONS",
    "FREEDOM_LEVELS",
    "INCOME_LEVELS",
    "INDICATOR_COLUMNS",
    "WeirdThresholds",
    "annotate_weird",
    "compute_thresholds",
    "default_table_path",
    "load_indicator_table",
    "quantile_class",
    "update_indicator",
    "weird_for",
    "weird_score_sixths",
]

DIMENSIONS: tuple[str, ...] = ("W", "E", "I", "R", "D")
INCOME_LEVELS: dict[str, int] = {
    "Low income": 0, "Lower middle income": 1, "Upper middle income": 2, "High income": 3,
}  # fmt: skip
FREEDOM_LEVELS: dict[str, int] = {"Not Free": 0, "Partly Free": 1, "Free": 2}
INDICATOR_COLUMNS: dict[str, tuple[str, str, str]] = {
    "mys": ("mys_value", "mys_year", "mys_source"),
    "gdp_ppp": ("gdp_ppp_value", "gdp_ppp_year", "gdp_ppp_source"),
    "income": ("income_group", "income_group_year", "income_group_source"),
    "freedom": ("freedom_status", "freedom_year", "freedom_source"),
}
"""Indicator key → (value, year, source) columns of the table; loaders' tidy frames map here."""

NON_MEMBERS: frozenset[str] = frozenset({"ESH", "HKG", "MAC", "PRI", "PSE", "TWN", "VAT", "XKX"})
"""Places the geography map knows that are not UN member states (193 members = the rest)."""
HAND_LEVELS: dict[str, tuple[str, str, int]] = {"E": ("e_level", "mys_value", 2),
                                               "I": ("i_level", "gdp_ppp_value", 3)}  # fmt: skip
"""Dimension → (hand-level column, raw-value column, highest level)."""
LEVEL_SOURCES: dict[str, tuple[str, str]] = {
    "W": ("civilization_source", "civilization_year"), "E": ("mys_source", "mys_year"),
    "I": ("gdp_ppp_source", "gdp_ppp_year"), "R": ("income_group_source", "income_group_year"),
    "D": ("freedom_source", "freedom_year"),
}  # fmt: skip
"""Dimension → (source column, year column) of the value behind its level."""

_SIXTHS = np.array([6, 3, 2, 2, 3])
"""Weights of W, E, I, R, D in sixths of a score point (1/1, 1/2, 1/3, 1/3, 1/2)."""
_BASE_COLUMNS = ("iso3", "country", "continent", "civilization", "western")
_NUMERIC = ("western", "mys_value", "gdp_ppp_value", "mys_year", "gdp_ppp_year",
            "income_group_year", "freedom_year", "e_level", "i_level")  # fmt: skip
_OPTIONAL = ("e_level", "i_level", "hand_note")
_TABLE_PATH = Path("data") / "knowledge" / "countries" / "indicators.csv"


@dataclass(frozen=True)
class WeirdThresholds:
    """Cut points over the global country sample, kept with every annotation."""

    education_tertiles: tuple[float, float]
    """Mean years of schooling at the 1/3 and 2/3 quantiles."""
    income_quartiles: tuple[float, float, float]
    """GDP per capita PPP at the 1/4, 1/2 and 3/4 quantiles."""
    education_sample: int
    income_sample: int
    education_sample_source: str = "indicator table"
    """Which sample the schooling cuts come from (the table's raw values, or a source file)."""
    income_sample_source: str = "indicator table"

    def as_columns(self) -> dict[str, float | int]:
        """Flat ``name → value`` mapping, written out as constant columns of the annotation."""
        e1, e2 = self.education_tertiles
        i1, i2, i3 = self.income_quartiles
        return {"e_cut_1": e1, "e_cut_2": e2, "i_cut_1": i1, "i_cut_2": i2, "i_cut_3": i3,
                "e_sample": self.education_sample, "i_sample": self.income_sample}  # fmt: skip

    def as_record(self) -> dict[str, object]:
        """Cuts plus the samples they come from, for the country table's datasheet."""
        return {**self.as_columns(), "e_sample_source": self.education_sample_source,
                "i_sample_source": self.income_sample_source}  # fmt: skip

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form for metrics files and MLflow params."""
        return asdict(self)


def default_table_path() -> Path:
    """The committed indicator table under the project root."""
    return project_root() / _TABLE_PATH


def load_indicator_table(path: str | Path | None = None) -> pd.DataFrame:
    """Read and validate the indicator table; bad cells raise a row-precise SourceError."""
    path = Path(path) if path is not None else default_table_path()
    if not path.exists():
        raise SourceError(path, "file not found")
    table = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    required = [*_BASE_COLUMNS, *(c for cols in INDICATOR_COLUMNS.values() for c in cols)]
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise SourceError(path, f"missing columns {missing}")
    for column in _OPTIONAL:
        if column not in table.columns:
            table[column] = ""
    for column in _NUMERIC:
        table[column] = _to_number(path, table[column])
    _check_labels(path, table)
    _check_hand_levels(path, table)
    return table


def _check_hand_levels(path: Path, table: pd.DataFrame) -> None:
    """A hand level is an integer in range, only where the raw value is blank, with a note."""
    for level_col, value_col, top in HAND_LEVELS.values():
        level = table[level_col]
        checks = (
            (level.notna() & ~level.isin(range(top + 1)), f"must be an integer 0–{top}"),
            (level.notna() & table[value_col].notna(), f"set by hand although {value_col} exists"),
            (level.notna() & table["hand_note"].eq(""), "hand level without a hand_note"),
        )
        for bad, reason in checks:
            if bad.any():
                row = int(bad.to_numpy().argmax())
                raise SourceError(path, f"{level.iloc[row]!r} {reason}", row=row + 1,
                                  column=level_col)  # fmt: skip


def _to_number(path: Path, column: pd.Series) -> pd.Series:
    numbers = pd.to_numeric(column.replace("", np.nan), errors="coerce")
    bad = numbers.isna() & column.ne("")
    if bad.any():
        row = int(bad.to_numpy().argmax())
        message = f"not a number: {column.iloc[row]!r}"
        raise SourceError(path, message, row=row + 1, column=str(column.name))
    return numbers


def _check_labels(path: Path, table: pd.DataFrame) -> None:
    """Every label must be one the WEIRD coding knows; blanks are left to the annotator."""
    duplicated = table["iso3"].duplicated()
    if duplicated.any():
        row = int(duplicated.to_numpy().argmax())
        message = f"duplicate {table['iso3'].iloc[row]!r}"
        raise SourceError(path, message, row=row + 1, column="iso3")
    checks: dict[str, set[object]] = {
        "continent": set(CONTINENTS),
        "western": {0, 1},
        "income_group": set(INCOME_LEVELS),
        "freedom_status": set(FREEDOM_LEVELS),
    }
    for column, allowed in checks.items():
        values = table[column]
        bad = ~values.isin(allowed) & values.ne("") & values.notna()
        if bad.any():
            row = int(bad.to_numpy().argmax())
            message = f"unknown value {values.iloc[row]!r}"
            raise SourceError(path, message, row=row + 1, column=column)


def update_indicator(table: pd.DataFrame, key: str, series: pd.DataFrame) -> pd.DataFrame:
    """Refresh one indicator from a loader's tidy frame (``iso3, value, year, source``).

    Countries the new release lacks keep their previous value, year and source: the back-fill
    rule applied across releases, so a refresh never blanks a country.
    """
    value_col, year_col, source_col = INDICATOR_COLUMNS[key]
    fresh = series.drop_duplicates("iso3", keep="last").set_index("iso3")
    out = table.copy()
    hit = out["iso3"].isin(fresh.index)
    codes = out.loc[hit, "iso3"]
    for column, field in ((value_col, "value"), (year_col, "year"), (source_col, "source")):
        out.loc[hit, column] = fresh.loc[codes, field].to_numpy()
    return out


def quantile_class(values: pd.Series, cuts: tuple[float, ...]) -> pd.Series:
    """Class index 0..len(cuts): the number of cut points strictly below each value."""
    classes = np.searchsorted(np.asarray(cuts, dtype=float), values.to_numpy(float), "left")
    return pd.Series(classes, index=values.index, dtype="Int64").where(values.notna())


def _sample(table: pd.DataFrame, column: str, extra: Path | None) -> tuple[np.ndarray, str]:
    """Raw values of the table, plus a source's full sample (``iso3,value``) when given.

    Table values win for the countries both hold, so one country never counts twice.
    """
    values = table.set_index("iso3")[column].dropna()
    if extra is None:
        return values.to_numpy(float), f"indicator table ({len(values)} countries with a value)"
    sample = pd.read_csv(extra, dtype={"iso3": str})
    if missing := [c for c in ("iso3", "value") if c not in sample.columns]:
        raise SourceError(extra, f"missing columns {missing}; a cut sample has iso3, value")
    numbers = pd.to_numeric(sample["value"], errors="coerce")
    if (bad := numbers.isna() & sample["value"].notna()).any():
        row = int(bad.to_numpy().argmax())
        raise SourceError(extra, f"not a number: {sample['value'].iloc[row]!r}", row=row + 1,
                          column="value")  # fmt: skip
    others = numbers[~sample["iso3"].isin(values.index)].dropna()
    merged = np.concatenate([values.to_numpy(float), others.to_numpy(float)])
    return merged, f"indicator table + {extra.name} ({len(merged)} economies)"


def compute_thresholds(
    table: pd.DataFrame, cut_samples: dict[str, Path | None] | None = None
) -> WeirdThresholds:
    """Tertiles of schooling and quartiles of GDP over every country that has the raw value.

    ``cut_samples`` maps ``mys`` / ``gdp_ppp`` to a tidy CSV of the source's full sample; hand
    levels never enter a sample (they are not values).
    """
    samples = cut_samples or {}
    education, e_source = _sample(table, "mys_value", samples.get("mys"))
    income, i_source = _sample(table, "gdp_ppp_value", samples.get("gdp_ppp"))
    if len(education) < 3 or len(income) < 4:
        raise ValueError("need at least 3 schooling and 4 GDP values for tertiles/quartiles")
    e1, e2 = (float(q) for q in np.quantile(education, [1 / 3, 2 / 3]))
    i1, i2, i3 = (float(q) for q in np.quantile(income, [0.25, 0.5, 0.75]))
    return WeirdThresholds((e1, e2), (i1, i2, i3), len(education), len(income), e_source, i_source)


def weird_score_sixths(w: int, e: int, i: int, r: int, d: int) -> int:
    """``6 × (W + E/2 + I/3 + R/3 + D/2)``: exact, so ``bin = sixths // 6`` is exact too."""
    return int(_SIXTHS @ np.array([w, e, i, r, d]))


def annotate_weird(
    table: pd.DataFrame,
    thresholds: WeirdThresholds | None = None,
    *,
    drop_incomplete: bool = False,
) -> pd.DataFrame:
    """The table plus W, E, I, R, D, ``weird_score``, ``weird_bin`` and the cut points.

    A country missing any dimension is an error naming it (the dataset invariant is that every
    country has all five), unless ``drop_incomplete`` removes such rows after the thresholds
    were computed on the full sample.
    """
    thresholds = thresholds or compute_thresholds(table)
    out = table.copy()
    out["W"] = pd.to_numeric(out["western"]).astype("Int64")
    out["E"] = quantile_class(out["mys_value"].astype(float), thresholds.education_tertiles)
    out["I"] = quantile_class(out["gdp_ppp_value"].astype(float), thresholds.income_quartiles)
    for dim, (level_col, _, _) in HAND_LEVELS.items():
        if level_col in out.columns:
            out[dim] = out[dim].fillna(pd.to_numeric(out[level_col]).astype("Int64"))
    out["R"] = out["income_group"].map(INCOME_LEVELS).astype("Int64")
    out["D"] = out["freedom_status"].map(FREEDOM_LEVELS).astype("Int64")
    incomplete = out[list(DIMENSIONS)].isna().any(axis=1)
    if incomplete.any() and not drop_incomplete:
        codes = list(out.loc[incomplete, "iso3"])
        raise ValueError(f"countries without all five dimensions: {codes}")
    out = out.loc[~incomplete].copy()
    dims = out[list(DIMENSIONS)].astype(int)
    sixths = pd.Series(dims.to_numpy() @ _SIXTHS, index=out.index)
    out[list(DIMENSIONS)] = dims
    out["weird_score"] = sixths / 6
    out["weird_bin"] = sixths // 6
    return out.assign(**thresholds.as_columns()).reset_index(drop=True)


def weird_for(countries: Iterable[str], annotation: pd.DataFrame) -> pd.DataFrame:
    """Annotation rows for case countries given by name, alias or ISO3, in input order.

    Raises ``KeyError`` listing every country that resolves to no annotated row, so a case
    about a country missing from the indicator table fails loudly instead of losing its bin.
    """
    names = list(countries)
    codes = [iso3_of(name) for name in names]
    indexed = annotation.set_index("iso3")
    missing = sorted({n for n, c in zip(names, codes, strict=True) if c not in indexed.index})
    if missing:
        raise KeyError(f"no WEIRD annotation for {missing}")
    rows = indexed.loc[codes].reset_index()
    return rows.assign(country_input=names)


def un_members() -> tuple[str, ...]:
    """ISO3 codes of the 193 UN member states (the geography map minus :data:`NON_MEMBERS`)."""
    return tuple(sorted(set(known_iso3()) - NON_MEMBERS))


def _level_frame(table: pd.DataFrame, thresholds: WeirdThresholds) -> pd.DataFrame:
    """W, E, I, R, D per row, blank where neither a value nor a hand level gives one."""
    levels = pd.DataFrame(index=table.index)
    levels["W"] = pd.to_numeric(table["western"]).astype("Int64")
    levels["E"] = quantile_class(table["mys_value"].astype(float), thresholds.education_tertiles)
    levels["I"] = quantile_class(table["gdp_ppp_value"].astype(float), thresholds.income_quartiles)
    for dim, (level_col, _, _) in HAND_LEVELS.items():
        levels[dim] = levels[dim].fillna(pd.to_numeric(table[level_col]).astype("Int64"))
    levels["R"] = table["income_group"].map(INCOME_LEVELS).astype("Int64")
    levels["D"] = table["freedom_status"].map(FREEDOM_LEVELS).astype("Int64")
    return levels


_TOP: dict[str, int] = {"W": 1, "E": 2, "I": 3, "R": 3, "D": 2}


def _bin_bounds(levels: dict[str, Any]) -> str:
    """``lo–hi``: the bins every value of the missing levels could give (blank if complete)."""
    missing = [d for d in DIMENSIONS if pd.isna(levels[d])]
    if not missing:
        return ""
    known = {d: int(levels[d]) for d in DIMENSIONS if d not in missing}
    bins = set()
    for combo in itertools.product(*(range(_TOP[d] + 1) for d in missing)):
        full = known | dict(zip(missing, combo, strict=True))
        bins.add(weird_score_sixths(*(full[d] for d in DIMENSIONS)) // 6)
    return f"{min(bins)}–{max(bins)}"


def country_table(table: pd.DataFrame, thresholds: WeirdThresholds | None = None) -> pd.DataFrame:
    """Every country of the table with its levels, score, bin and the source of each level.

    Unlike :func:`annotate_weird` nothing is dropped: a country with a level nobody could state
    keeps its row with a blank score and bin and names the missing level(s) in ``missing``.
    ``<dim>_basis`` says whether a level comes from a value (``value``) or by hand (``hand``).
    """
    thresholds = thresholds or compute_thresholds(table)
    levels = _level_frame(table, thresholds)
    out = table[["iso3", "country", "continent"]].copy()
    out["un_member"] = ~out["iso3"].isin(NON_MEMBERS)
    out[list(DIMENSIONS)] = levels
    complete = levels.notna().all(axis=1)
    sixths = levels[complete].astype(int).to_numpy() @ _SIXTHS
    out["weird_score"] = pd.Series(sixths / 6, index=levels.index[complete])
    out["weird_bin"] = pd.Series(sixths // 6, index=levels.index[complete]).astype("Int64")
    out["missing"] = levels.isna().apply(lambda r: ", ".join(r.index[r]), axis=1)
    out["bin_bounds"] = [_bin_bounds(row) for row in levels.to_dict("records")]
    for dim, (source, year) in LEVEL_SOURCES.items():
        hand = table[HAND_LEVELS[dim][0]].notna() if dim in HAND_LEVELS else False
        out[f"{dim}_basis"] = np.where(hand, "hand", np.where(levels[dim].notna(), "value", ""))
        years = table[year].astype("Int64").astype(str).replace("<NA>", "")
        out[f"{dim}_source"] = table[source].where(table[source].ne(""), "") + " (" + years + ")"
    out["hand_note"] = table["hand_note"]
    return out.sort_values("iso3").reset_index(drop=True)


COUNTRY_TABLE = Path("data") / "knowledge" / "countries" / "weird_levels.csv"
"""The committed country table (every UN member: levels, bin, source per level)."""


def main() -> int:
    """Regenerate :data:`COUNTRY_TABLE` from the indicator table (``python -m``)."""
    from cultureqa.io import write_csv

    table = load_indicator_table()
    write_csv(project_root() / COUNTRY_TABLE, country_table(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
