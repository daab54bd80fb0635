"""WEIRD coding of countries from external indicators, never from case text (DESIGN.md §6).

Five dimensions per country, each from one published indicator:

* **W** Western civilization (Huntington 1996): 0/1.
* **E** UNDP mean years of schooling, tertile over the source's full country sample: 0–2.
* **I** World Bank GDP per capita PPP, quartile over the source's full economy sample: 0–3.
* **R** World Bank income group: Low 0, Lower-middle 1, Upper-middle 2, High 3.
* **D** Freedom House status: Not Free 0, Partly Free 1, Free 2.

``WEIRDScore = W/1 + E/2 + I/3 + R/3 + D/2`` lies in [0, 5] and ``WEIRDBin = floor(score)``.
The score is summed in integer sixths so the bin never suffers float round-off (1/3 + 2/3).

This module holds the coding rules; :mod:`cultureqa.cases.country_levels` applies them to the
publishers' files (the ``cases_weird`` stage). Cut points are ``numpy.quantile`` (linear
interpolation) at 1/3, 2/3 and 1/4, 1/2, 3/4; classes are right-closed like ``pandas.qcut``: a
value equal to a cut point falls in the lower class, and tied values always share a class.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from cultureqa.cases.geography import iso3_of, known_iso3

__all__ = [
    "DIMENSIONS",
    "FREEDOM_LEVELS",
    "INCOME_LEVELS",
    "TOP_LEVEL",
    "WeirdThresholds",
    "bin_bounds",
    "quantile_class",
    "un_members",
    "weird_for",
    "weird_score_sixths",
]

DIMENSIONS: tuple[str, ...] = ("W", "E", "I", "R", "D")
INCOME_LEVELS: dict[str, int] = {
    "Low income": 0, "Lower middle income": 1, "Upper middle income": 2, "High income": 3,
}  # fmt: skip
FREEDOM_LEVELS: dict[str, int] = {"Not Free": 0, "Partly Free": 1, "Free": 2}
TOP_LEVEL: dict[str, int] = {"W": 1, "E": 2, "I": 3, "R": 3, "D": 2}
"""Highest level of each dimension (the lowest is 0)."""

NON_MEMBERS: frozenset[str] = frozenset({"ESH", "HKG", "MAC", "PRI", "PSE", "TWN", "VAT", "XKX"})
"""Places the geography map knows that are not UN member states (193 members = the rest)."""
_SIXTHS = np.array([6, 3, 2, 2, 3])
"""Weights of W, E, I, R, D in sixths of a score point (1/1, 1/2, 1/3, 1/3, 1/2)."""


@dataclass(frozen=True)
class WeirdThresholds:
    """Cut points over each source's full sample, kept with every annotation."""

    education_tertiles: tuple[float, float]
    """Mean years of schooling at the 1/3 and 2/3 quantiles."""
    income_quartiles: tuple[float, float, float]
    """GDP per capita PPP at the 1/4, 1/2 and 3/4 quantiles."""
    education_sample: int
    income_sample: int
    education_sample_source: str
    """Which sample the schooling cuts come from (file, year, what it covers)."""
    income_sample_source: str

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


def quantile_class(values: pd.Series, cuts: tuple[float, ...]) -> pd.Series:
    """Class index 0..len(cuts): the number of cut points strictly below each value."""
    classes = np.searchsorted(np.asarray(cuts, dtype=float), values.to_numpy(float), "left")
    return pd.Series(classes, index=values.index, dtype="Int64").where(values.notna())


def weird_score_sixths(w: int, e: int, i: int, r: int, d: int) -> int:
    """``6 × (W + E/2 + I/3 + R/3 + D/2)``: exact, so ``bin = sixths // 6`` is exact too."""
    return int(_SIXTHS @ np.array([w, e, i, r, d]))


def weird_for(countries: Iterable[str], annotation: pd.DataFrame) -> pd.DataFrame:
    """Annotation rows for case countries given by name, alias or ISO3, in input order.

    Raises ``KeyError`` listing every country that resolves to no annotated row, so a case
    about a country missing from the country table fails loudly instead of losing its bin.
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


def bin_bounds(levels: Mapping[str, Any]) -> str:
    """``lo–hi``: the bins every value of the unknown (None/NA) levels could give; blank if none."""
    missing = [d for d in DIMENSIONS if levels[d] is None or pd.isna(levels[d])]
    if not missing:
        return ""
    known = {d: int(levels[d]) for d in DIMENSIONS if d not in missing}
    bins = set()
    for combo in itertools.product(*(range(TOP_LEVEL[d] + 1) for d in missing)):
        full = known | dict(zip(missing, combo, strict=True))
        bins.add(weird_score_sixths(*(full[d] for d in DIMENSIONS)) // 6)
    return f"{min(bins)}–{max(bins)}"
