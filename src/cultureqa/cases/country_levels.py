"""WEIRD levels of every UN member computed from the publishers' files (DESIGN.md §6).

The ``cases_weird`` stage calls :func:`build_levels`; nothing here is typed by hand except the
Huntington coding (W) and the few levels no official figure gives (``hand_levels.csv``).

Each level has a **basis**:

* ``value`` — the member's own figure: E from UNDP HDR mean years of schooling, I from World Bank
  GDP per capita PPP, R from the World Bank income classification, D from Freedom House status.
* ``coding`` — W, the project's Huntington coding (``civilizations.csv``).
* ``proxy`` — I for a member without a WDI figure but with an HDR GNI per capita (PPP): the GDP
  quartile shared by the ``k`` members (with a WDI figure) with the nearest HDR GNI per capita on
  each side (only one side at the ends of the sample). Those comparable economies are named in
  the note; if they do not all agree, no level is given and the stage asks for a hand level.
* ``hand`` — a row of ``hand_levels.csv``: either named comparable economies, whose computed
  levels must give the stated level by strict majority (checked here, so a hand level cannot drift
  from the files), or quoted evidence from an official source.

Cut points are taken over each source's **full** sample, territories included where the source
includes them: E over every HDR country row with a value (Hong Kong and Palestine too), I over
every WDI economy with a value (aggregates excluded, territories included). Both use
:func:`numpy.quantile` with its default linear interpolation (Hyndman & Fan type 7, the method of
``pandas.qcut``); classes are right-closed (see :func:`cultureqa.cases.weird.quantile_class`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cultureqa.cases import indicator_loaders as L
from cultureqa.cases.geography import known_iso3
from cultureqa.cases.weird import (
    DIMENSIONS,
    FREEDOM_LEVELS,
    INCOME_LEVELS,
    TOP_LEVEL,
    WeirdThresholds,
    bin_bounds,
    quantile_class,
    un_members,
    weird_score_sixths,
)
from cultureqa.core.io import SourceError

__all__ = ["BASES", "LevelSettings", "OfficialData", "build_levels", "read_levels", "read_official"]

BASES: tuple[str, ...] = ("value", "coding", "proxy", "hand")
FILE_KEYS: tuple[str, ...] = (
    "gdp",
    "gdp_economies",
    "income",
    "hdr",
    "freedom",
    "civilizations",
    "hand_levels",
)
HAND_COLUMNS: tuple[str, ...] = ("iso3", "dimension", "level", "comparables", "evidence")
QUANTILE_METHOD = "numpy.quantile, linear interpolation (Hyndman & Fan type 7, as pandas.qcut)"


@dataclass(frozen=True)
class LevelSettings:
    """The ``cases.weird`` params: file paths (relative to the root) and reference years."""

    files: Mapping[str, Path]
    gdp_year: int = 2023
    mys_year: int = 2022
    income_fiscal_year: int = 2025
    freedom_edition: int = 2024
    proxy_neighbours: int = 2

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], root: Path) -> LevelSettings:
        """Paths resolved under ``root``; every file key must be given."""
        files = dict(cfg["files"])
        if missing := [k for k in FILE_KEYS if not files.get(k)]:
            raise KeyError(f"cases.weird.files lacks {missing}")
        numbers = {k: int(cfg[k]) for k in cls.__dataclass_fields__ if k != "files" and k in cfg}
        return cls({k: root / str(files[k]) for k in FILE_KEYS}, **numbers)


@dataclass(frozen=True)
class OfficialData:
    """Tidy ``iso3, value, year, source`` frames of each source's full sample."""

    mys: pd.DataFrame
    gdp: pd.DataFrame
    gni: pd.DataFrame
    income: pd.DataFrame
    freedom: pd.DataFrame
    civilizations: pd.DataFrame
    hand: pd.DataFrame


def _countries_only(frame: pd.DataFrame) -> pd.DataFrame:
    """HDR rows with an ISO3 code (its groups are coded ``ZZA.VHHD`` and alike)."""
    return frame[frame["iso3"].str.fullmatch(r"[A-Z]{3}")].reset_index(drop=True)


def read_official(settings: LevelSettings, members: frozenset[str]) -> OfficialData:
    """Every source file through its loader; errors name file, row and column."""
    f = settings.files
    hdr = "UNDP Human Development Report 2023/2024, composite indices time series"
    mys = L.load_hdr_composite(
        f["hdr"],
        prefix="mys",
        target_year=settings.mys_year,
        source=f"{hdr} (mys, mean years of schooling)",
    )
    gni = L.load_hdr_composite(
        f["hdr"],
        prefix="gnipc",
        target_year=settings.mys_year,
        source=f"{hdr} (gnipc, GNI per capita, 2017 PPP $)",
    )
    economies = L.load_worldbank_economies(f["gdp_economies"])
    gdp = L.load_worldbank_indicator(
        f["gdp"],
        target_year=settings.gdp_year,
        source="World Bank WDI NY.GDP.PCAP.PP.KD, GDP per capita PPP (constant 2021 int. $)",
    )
    fy = settings.income_fiscal_year
    income = L.load_worldbank_income(
        f["income"], fiscal_year=fy, source=f"World Bank country income classification FY{fy}"
    )
    edition = settings.freedom_edition
    freedom = L.load_freedom_status(
        f["freedom"], edition=edition, source=f"Freedom House, Freedom in the World {edition}"
    )
    return OfficialData(
        mys=_countries_only(mys),
        gdp=gdp[gdp["iso3"].isin(economies)].reset_index(drop=True),
        gni=_countries_only(gni),
        income=income,
        freedom=freedom,
        civilizations=_read_civilizations(f["civilizations"]),
        hand=_read_hand(f["hand_levels"], members),
    )


def _read_civilizations(path: Path) -> pd.DataFrame:
    """The W coding: one row per member with ``western`` 0/1 and its source."""
    if not path.exists():
        raise SourceError(path, "file not found")
    table = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    needed = (
        "iso3",
        "country",
        "continent",
        "civilization",
        "western",
        "civilization_year",
        "civilization_source",
    )
    if missing := [c for c in needed if c not in table.columns]:
        raise SourceError(path, f"missing columns {missing}")
    for column, ok in (
        ("western", table["western"].isin(["0", "1"])),
        ("iso3", ~table["iso3"].duplicated()),
    ):
        if not ok.all():
            row = int((~ok).to_numpy().argmax())
            raise SourceError(path, f"bad value {table[column].iloc[row]!r}", row + 1, column)
    return table


def _read_hand(path: Path, members: frozenset[str]) -> pd.DataFrame:
    """``hand_levels.csv``: a level, and either comparable economies or quoted evidence."""
    if not path.exists():
        raise SourceError(path, "file not found")
    table = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    if missing := [c for c in HAND_COLUMNS if c not in table.columns]:
        raise SourceError(path, f"missing columns {missing}")
    for row, r in enumerate(table.to_dict("records"), start=1):
        dim, level = r["dimension"], r["level"]
        checks = (
            ("iso3", r["iso3"] in members, "not a member code"),
            ("dimension", dim in TOP_LEVEL and dim != "W", "must be one of E, I, R, D"),
            (
                "level",
                level.isdigit() and int(level) <= TOP_LEVEL.get(dim, -1),
                f"must be an integer 0–{TOP_LEVEL.get(dim, '?')}",
            ),
            (
                "comparables",
                all(c in known_iso3() for c in _codes(r["comparables"])),
                "comparables must be ISO3 codes separated by ';'",
            ),
            ("evidence", bool(r["evidence"].strip()), "every hand level needs its evidence"),
        )
        for column, ok, reason in checks:
            if not ok:
                raise SourceError(path, f"{r[column]!r}: {reason}", row=row, column=column)
    if (dup := table.duplicated(["iso3", "dimension"])).any():
        row = int(dup.to_numpy().argmax()) + 1
        raise SourceError(path, "a second hand level for one country and dimension", row, "iso3")
    return table


def _codes(text: str) -> list[str]:
    return [c.strip() for c in text.split(";") if c.strip()]


def compute_cuts(data: OfficialData) -> WeirdThresholds:
    """Schooling tertiles and GDP quartiles over each source's full sample."""
    education = data.mys["value"].to_numpy(float)
    income = data.gdp["value"].to_numpy(float)
    if len(education) < 3 or len(income) < 4:
        raise ValueError("need at least 3 schooling and 4 GDP values for tertiles/quartiles")
    e1, e2 = (float(q) for q in np.quantile(education, [1 / 3, 2 / 3]))
    i1, i2, i3 = (float(q) for q in np.quantile(income, [0.25, 0.5, 0.75]))
    return WeirdThresholds(
        (e1, e2),
        (i1, i2, i3),
        len(education),
        len(income),
        f"UNDP HDR 2023/2024, every country row with mys ≤ {data.mys['year'].max()} "
        f"({len(education)}: UN members and other HDR countries)",
        f"World Bank WDI, every economy with NY.GDP.PCAP.PP.KD ≤ {data.gdp['year'].max()} "
        f"({len(income)}: countries and territories, aggregates excluded)",
    )


def _level_of(dim: str, values: pd.Series, cuts: WeirdThresholds) -> pd.Series:
    """The level a published figure gives: a quantile class (E, I) or a label's rank (R, D)."""
    if dim == "E":
        return quantile_class(values.astype(float), cuts.education_tertiles)
    if dim == "I":
        return quantile_class(values.astype(float), cuts.income_quartiles)
    return values.map(INCOME_LEVELS if dim == "R" else FREEDOM_LEVELS)


def _value_rows(data: OfficialData, cuts: WeirdThresholds, members: frozenset[str]) -> pd.DataFrame:
    """One row per (country, dimension) that the country's own figure decides."""
    civ = data.civilizations
    parts = [
        pd.DataFrame(
            {
                "iso3": civ["iso3"],
                "dim": "W",
                "level": civ["western"].astype(int),
                "basis": "coding",
                "raw": civ["civilization"],
                "year": civ["civilization_year"],
                "source": civ["civilization_source"],
                "note": "",
            }
        )
    ]
    frames = {"E": data.mys, "I": data.gdp, "R": data.income, "D": data.freedom}
    for dim, frame in frames.items():
        level = _level_of(dim, frame["value"], cuts).astype(int)
        parts.append(
            frame.assign(
                dim=dim, level=level, basis="value", raw=frame["value"].astype(str), note=""
            ).drop(columns="value")
        )
    rows = pd.concat(parts, ignore_index=True)
    return rows[rows["iso3"].isin(members)].reset_index(drop=True)


def _proxy_rows(
    long: pd.DataFrame, data: OfficialData, k: int, members: frozenset[str], hand_path: Path
) -> pd.DataFrame:
    """I for members without a WDI figure, from their HDR GNI per capita's nearest economies."""
    gdp_levels = long[(long["dim"] == "I")].set_index("iso3")["level"]
    gni = data.gni.set_index("iso3")["value"].astype(float)
    pool = pd.DataFrame({"gni": gni, "level": gdp_levels}).dropna().sort_values("gni")
    rows = []
    for code in sorted(members - set(gdp_levels.index)):
        if code not in gni.index:
            continue
        value = float(gni[code])
        near = pd.concat([pool[pool["gni"] <= value].tail(k), pool[pool["gni"] > value].head(k)])
        found = sorted(set(near["level"].astype(int)))
        named = ", ".join(f"{c} {int(lv)}" for c, lv in near["level"].items())
        if len(found) != 1:
            raise SourceError(
                hand_path,
                f"{code}: the economies nearest its HDR GNI per capita {value:,.0f} "
                f"disagree on I ({named}); add an I row here",
            )
        year = int(data.gni.set_index("iso3").loc[code, "year"])
        note = (
            f"no WDI figure; HDR GNI per capita {year} = {value:,.0f} (2017 PPP $) lies "
            f"among {named} (the {k} nearest on each side; I level after each code)"
        )
        rows.append(
            {
                "iso3": code,
                "dim": "I",
                "level": found[0],
                "basis": "proxy",
                "raw": f"{value:.0f}",
                "year": year,
                "source": str(data.gni["source"].iloc[0]),
                "note": note,
            }
        )
    return pd.DataFrame(rows, columns=long.columns)


def _hand_rows(long: pd.DataFrame, hand: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Hand levels, each checked: no official figure exists, and the comparables agree."""
    known = long.set_index(["iso3", "dim"])["level"]
    rows = []
    for row, r in enumerate(hand.to_dict("records"), start=1):
        key, level = (r["iso3"], r["dimension"]), int(r["level"])
        if key in known.index:
            raise SourceError(
                path,
                f"{r['iso3']} has an official {r['dimension']} figure "
                f"(level {known[key]}); a hand level only fills a gap",
                row,
                "iso3",
            )
        comparables = _codes(r["comparables"])
        note = r["evidence"]
        if comparables:
            missing = [c for c in comparables if (c, r["dimension"]) not in known.index]
            if missing:
                raise SourceError(
                    path, f"comparables without a computed level: {missing}", row, "comparables"
                )
            levels = [int(known[(c, r["dimension"])]) for c in comparables]
            top, count = Counter(levels).most_common(1)[0]
            named = ", ".join(f"{c} {lv}" for c, lv in zip(comparables, levels, strict=True))
            if top != level or 2 * count <= len(levels):
                raise SourceError(
                    path,
                    f"level {level} is not the strict majority of the "
                    f"comparables' levels ({named})",
                    row,
                    "level",
                )
            note = f"comparable economies {named} ({count} of {len(levels)}); {note}"
        rows.append(
            {
                "iso3": r["iso3"],
                "dim": r["dimension"],
                "level": level,
                "basis": "hand",
                "raw": "",
                "year": "",
                "source": "hand annotation (hand_levels.csv)",
                "note": note,
            }
        )
    return pd.DataFrame(rows, columns=long.columns)


def _levels_long(
    data: OfficialData, cuts: WeirdThresholds, settings: LevelSettings, members: frozenset[str]
) -> pd.DataFrame:
    """Every (member, dimension) exactly once; a gap is an error naming it and the fix."""
    hand_path = settings.files["hand_levels"]
    long = _value_rows(data, cuts, members)
    long = pd.concat(
        [long, _proxy_rows(long, data, settings.proxy_neighbours, members, hand_path)],
        ignore_index=True,
    )
    long = pd.concat([long, _hand_rows(long, data.hand, hand_path)], ignore_index=True)
    full = pd.MultiIndex.from_product([sorted(members), DIMENSIONS])
    have = pd.MultiIndex.from_frame(long[["iso3", "dim"]])
    if gaps := [f"{c} {d}" for c, d in full.difference(have)]:
        raise SourceError(
            hand_path,
            f"no official figure and no hand level for {gaps}; add rows here "
            "(comparable economies or quoted evidence)",
        )
    return long.sort_values(["iso3", "dim"]).reset_index(drop=True)


def _wide(long: pd.DataFrame, civ: pd.DataFrame, cuts: WeirdThresholds) -> pd.DataFrame:
    """One row per member: levels, score, bin, hand marks, and per dimension its basis."""
    codes = sorted(set(long["iso3"]))
    out = civ.set_index("iso3").loc[codes, ["country", "continent"]]
    out.insert(2, "un_member", True)
    by = long.set_index(["iso3", "dim"])
    for dim in DIMENSIONS:
        out[dim] = by.xs(dim, level="dim")["level"].astype(int)
    sixths = [weird_score_sixths(*row) for row in out[list(DIMENSIONS)].itertuples(index=False)]
    out["weird_score"] = [s / 6 for s in sixths]
    out["weird_bin"] = [s // 6 for s in sixths]
    hand = long[long["basis"] == "hand"].groupby("iso3")["dim"].agg(", ".join)
    out["hand_annotated"] = out.index.isin(hand.index)
    out["hand_dimensions"] = hand.reindex(out.index).fillna("")
    out["bin_bounds"] = [
        bin_bounds(
            {
                d: (None if d in hand.get(code, "").split(", ") else out.at[code, d])
                for d in DIMENSIONS
            }
        )
        for code in out.index
    ]
    for dim in DIMENSIONS:
        part = by.xs(dim, level="dim")
        out[f"{dim}_basis"] = part["basis"]
        out[f"{dim}_raw"] = part["raw"]
        out[f"{dim}_source"] = part["source"] + part["year"].map(lambda y: f" ({y})" if y else "")
        out[f"{dim}_note"] = part["note"]
    return out.assign(**cuts.as_columns()).reset_index(names="iso3")


def build_levels(
    settings: LevelSettings, members: frozenset[str] | None = None
) -> tuple[pd.DataFrame, WeirdThresholds, dict[str, Any]]:
    """(country table of every member, the cut points, a summary for metrics).

    ``members`` defaults to the 193 UN member states; the cuts never depend on it (they are
    taken over each source's full sample).
    """
    members = frozenset(un_members()) if members is None else members
    data = read_official(settings, members)
    if missing := sorted(members - set(data.civilizations["iso3"])):
        raise SourceError(settings.files["civilizations"], f"no W coding for members {missing}")
    cuts = compute_cuts(data)
    long = _levels_long(data, cuts, settings, members)
    table = _wide(long, data.civilizations, cuts)
    return table, cuts, summarize(table, long, cuts, settings)


def summarize(
    table: pd.DataFrame, long: pd.DataFrame, cuts: WeirdThresholds, settings: LevelSettings
) -> dict[str, Any]:
    """Counts per dimension and basis, bins, cuts and the members annotated by hand."""
    basis = long.groupby(["dim", "basis"]).size()
    bins = table["weird_bin"].value_counts().sort_index()
    return {
        "members": len(table),
        "binned": int(table["weird_bin"].notna().sum()),
        "by_bin": {str(b): int(n) for b, n in bins.items()},
        "basis": {d: {b: int(basis.get((d, b), 0)) for b in BASES} for d in DIMENSIONS},
        "hand_annotated": table.loc[table["hand_annotated"], "iso3"].tolist(),
        "proxy": long.loc[long["basis"] == "proxy", "iso3"].tolist(),
        "cuts": cuts.as_record(),
        "quantile_method": QUANTILE_METHOD,
        "reference": {
            "gdp_year": settings.gdp_year,
            "mys_year": settings.mys_year,
            "income_fiscal_year": settings.income_fiscal_year,
            "freedom_edition": settings.freedom_edition,
        },
        "backfilled": {
            d: int(
                (
                    (long["dim"] == d)
                    & (long["basis"] == "value")
                    & (long["year"].astype(str) != str(y))
                ).sum()
            )
            for d, y in (("E", settings.mys_year), ("I", settings.gdp_year))
        },
    }


LEVEL_COLUMNS: tuple[str, ...] = (
    "iso3",
    "country",
    "continent",
    *DIMENSIONS,
    "weird_score",
    "weird_bin",
    "hand_annotated",
)


def read_levels(path: Path) -> pd.DataFrame:
    """The country table written by the ``cases_weird`` stage, with integer levels and bins."""
    if not path.exists():
        raise SourceError(path, "file not found: run `dvc repro cases_weird` first")
    table = pd.read_csv(path, keep_default_na=False, na_values=[""], encoding="utf-8")
    if missing := [c for c in LEVEL_COLUMNS if c not in table.columns]:
        raise SourceError(path, f"missing columns {missing}")
    ints = {c: "int64" for c in (*DIMENSIONS, "weird_bin")}
    return table.astype(ints | {"hand_annotated": bool, "weird_score": float})
