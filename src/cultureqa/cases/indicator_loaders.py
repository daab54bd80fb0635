"""Parse the official country-indicator downloads into tidy ``iso3, value, year, source`` frames.

The ``cases_weird`` stage reads the publishers' files kept in ``data/sources/country-indicators``
through these loaders (DESIGN.md §6, §9). Each accepts the file exactly as its publisher ships it:

* World Bank indicator CSV (``API_<code>_DS2_en_csv_v2_*.csv``): metadata lines, then the wide
  header ``"Country Name","Country Code","Indicator Name","Indicator Code","1960",...``.
* World Bank income classification (``CLASS.xlsx`` sheet "List of economies", or that sheet saved
  as CSV): ``Economy, Code, Region, Income group, ...``.
* UNDP HDR composite indices time series CSV: ``iso3, country, ..., mys_1990 .. mys_2022, ...``.
* World Bank country metadata (``Metadata_Country_API_*.csv``): which codes are economies (a
  region) rather than aggregates (blank region).
* Freedom House "All Data FIW" workbook (sheet ``FIW13-<yy>``) or that sheet saved as CSV: a
  title line may precede the header ``Country/Territory, Region, C/T, Edition, Status, ...``; FH
  has no ISO codes, so names go through :mod:`cultureqa.cases.geography` and an unknown country
  name is an error. The project keeps only the derived status table
  (:func:`freedom_status_rows`, read back by :func:`load_freedom_status`).

Every series is back-filled: each country gets its latest non-missing value at or before
``target_year`` and keeps that year. Malformed input raises :class:`~cultureqa.core.io.SourceError`
naming file, data row (1 = first row after the header) and column.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd

from cultureqa.cases.geography import UnknownCountryError, iso3_of
from cultureqa.core.io import SourceError

__all__ = [
    "FREEDOM_STATUSES",
    "INCOME_GROUPS",
    "TIDY_COLUMNS",
    "freedom_status_rows",
    "latest_available",
    "load_freedom_house",
    "load_freedom_status",
    "load_hdr_composite",
    "load_worldbank_economies",
    "load_worldbank_income",
    "load_worldbank_indicator",
    "read_freedom_house_workbook",
]

TIDY_COLUMNS: tuple[str, ...] = ("iso3", "value", "year", "source")
INCOME_GROUPS: tuple[str, ...] = (
    "Low income", "Lower middle income", "Upper middle income", "High income",
)  # fmt: skip
FREEDOM_STATUSES: dict[str, str] = {"F": "Free", "PF": "Partly Free", "NF": "Not Free"}
_YEAR = re.compile(r"^\d{4}$")
_ISO3 = re.compile(r"^[A-Z]{3}$")


def _read_text(path: Path) -> str:
    """File text; UNDP ships Latin-1 names ("Côte d'Ivoire"), so fall back to cp1252."""
    if not path.exists():
        raise SourceError(path, "file not found")
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


def _table_after(path: Path, first_cell: str, max_skip: int = 10) -> pd.DataFrame:
    """Read a CSV whose header is the first line starting with ``first_cell`` (all str)."""
    lines = _read_text(path).splitlines()
    for index, line in enumerate(lines[: max_skip + 1]):
        cells = next(csv.reader([line]), [])
        if cells and cells[0].strip() == first_cell:
            body = "\n".join(lines[index:])
            frame = pd.read_csv(io.StringIO(body), dtype=str, keep_default_na=False)
            frame.columns = [str(c).strip() for c in frame.columns]
            frame = frame.loc[:, [c for c in frame.columns if c and not c.startswith("Unnamed")]]
            if frame.empty:
                raise SourceError(path, "no data rows")
            return frame
    raise SourceError(path, f"no header row starting with '{first_cell}' in the first lines")


def _require(path: Path, frame: pd.DataFrame, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise SourceError(path, f"missing columns {missing}; found {list(frame.columns)}")


def _numbers(path: Path, frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Cells of ``columns`` as floats (blank → NaN); the first non-number is a row error."""
    text = frame[columns].apply(lambda col: col.astype(str).str.strip().replace({"..": ""}))
    numbers = text.apply(pd.to_numeric, errors="coerce")
    bad = numbers.isna() & text.ne("")
    if bad.to_numpy().any():
        row, col = next((r, c) for r in range(len(bad)) for c in columns if bad[c].iloc[r])
        value = text[col].iloc[row]
        raise SourceError(path, f"not a number: {value!r}", row=row + 1, column=col)
    return numbers


def latest_available(long: pd.DataFrame, target_year: int | None = None) -> pd.DataFrame:
    """Back-fill: per ``iso3`` the latest non-missing ``value`` with ``year <= target_year``."""
    rows = long.dropna(subset=["value"])
    if target_year is not None:
        rows = rows[rows["year"] <= target_year]
    latest = rows.sort_values(["iso3", "year"]).groupby("iso3", sort=True).tail(1)
    latest = latest.assign(year=latest["year"].astype(int))
    return latest[["iso3", "value", "year"]].reset_index(drop=True)


def _tidy(latest: pd.DataFrame, source: str) -> pd.DataFrame:
    return latest.assign(source=source)[list(TIDY_COLUMNS)]


def _check_codes(path: Path, codes: pd.Series, column: str) -> None:
    bad = ~codes.str.fullmatch(_ISO3.pattern)
    if bad.any():
        row = int(bad.to_numpy().argmax())
        message = f"not an ISO3 code: {codes.iloc[row]!r}"
        raise SourceError(path, message, row=row + 1, column=column)


def load_worldbank_indicator(
    path: str | Path, *, target_year: int | None = None, source: str | None = None
) -> pd.DataFrame:
    """World Bank ``API_<indicator>`` CSV → latest value per economy (aggregates included)."""
    path = Path(path)
    frame = _table_after(path, "Country Name")
    _require(path, frame, ("Country Name", "Country Code", "Indicator Code"))
    years = [c for c in frame.columns if _YEAR.match(c)]
    if not years:
        raise SourceError(path, "no year columns (expected '1960', '1961', ...)")
    codes = frame["Country Code"].str.strip()
    _check_codes(path, codes, "Country Code")
    indicators = sorted(set(frame["Indicator Code"].str.strip()))
    if len(indicators) != 1:
        raise SourceError(path, f"expected one indicator, found {indicators}")
    values = _numbers(path, frame, years).assign(iso3=codes)
    long = values.melt(id_vars="iso3", var_name="year", value_name="value")
    long = long.assign(year=long["year"].astype(int))
    label = source or f"World Bank WDI {indicators[0]}"
    return _tidy(latest_available(long, target_year), label)


def _income_label(path: Path, text: str, row: int) -> str:
    key = re.sub(r"[\s\-]+", " ", text.strip().casefold())
    key = "high income" if key.startswith("high income") else key
    for label in INCOME_GROUPS:
        if key == label.casefold():
            return label
    raise SourceError(path, f"unknown income group {text!r}", row=row, column="Income group")


def _read_sheet(path: Path) -> pd.DataFrame:
    if path.suffix.lower() not in {".xlsx", ".xls"}:
        return _table_after(path, "Economy")
    try:
        return pd.read_excel(path, sheet_name=0, dtype=str).fillna("")
    except ImportError as exc:
        raise SourceError(path, "reading Excel needs openpyxl; or save the sheet as CSV") from exc


def load_worldbank_income(
    path: str | Path, *, fiscal_year: int, source: str | None = None
) -> pd.DataFrame:
    """World Bank income classification → canonical income group per economy.

    The file carries no year, so ``fiscal_year`` (e.g. 2025 for FY2025, issued 1 July 2024) is
    recorded as the year. Rows without a code (notes) or without a group (unclassified
    economies such as Venezuela since FY2022) are skipped.
    """
    path = Path(path)
    frame = _read_sheet(path)
    frame.columns = [str(c).strip() for c in frame.columns]
    _require(path, frame, ("Economy", "Code", "Income group"))
    rows = []
    for row, record in enumerate(frame.to_dict("records"), start=1):
        code, group = str(record["Code"]).strip(), str(record["Income group"]).strip()
        if not code or not group:
            continue
        if not _ISO3.match(code):
            raise SourceError(path, f"not an ISO3 code: {code!r}", row=row, column="Code")
        rows.append({"iso3": code, "value": _income_label(path, group, row), "year": fiscal_year})
    if not rows:
        raise SourceError(path, "no classified economies")
    label = source or f"World Bank country income classification FY{fiscal_year}"
    return _tidy(pd.DataFrame(rows), label)


def load_hdr_composite(
    path: str | Path,
    *,
    prefix: str = "mys",
    target_year: int | None = None,
    source: str | None = None,
) -> pd.DataFrame:
    """UNDP HDR composite-indices CSV → latest ``<prefix>_<year>`` value per ``iso3``."""
    path = Path(path)
    frame = _table_after(path, "iso3")
    pattern = re.compile(rf"^{re.escape(prefix)}_(\d{{4}})$")
    columns = [c for c in frame.columns if pattern.match(c)]
    if not columns:
        raise SourceError(path, f"no '{prefix}_<year>' columns")
    codes = frame["iso3"].str.strip()
    values = _numbers(path, frame, columns).assign(iso3=codes)
    long = values.melt(id_vars="iso3", var_name="column", value_name="value")
    years = long["column"].str.extract(pattern, expand=False).astype(int)
    long = long.assign(year=years).drop(columns="column")
    label = source or f"UNDP HDR composite indices ({prefix})"
    return _tidy(latest_available(long, target_year), label)


def _fh_row(path: Path, record: dict[str, object], row: int) -> dict[str, object] | None:
    """One FH record as ``iso3, value, year, country``; territories yield ``None``."""
    if str(record["C/T"]).strip().lower() != "c":
        return None
    status, name = str(record["Status"]).strip().upper(), str(record["Country/Territory"])
    if status not in FREEDOM_STATUSES:
        raise SourceError(path, f"unknown status {status!r} (F, PF, NF)", row=row, column="Status")
    edition = str(record["Edition"]).strip()
    if not _YEAR.match(edition):
        raise SourceError(path, f"not an edition year: {edition!r}", row=row, column="Edition")
    try:
        code = iso3_of(name)
    except UnknownCountryError as exc:
        raise SourceError(path, str(exc), row=row, column="Country/Territory") from exc
    return {"iso3": code, "value": FREEDOM_STATUSES[status], "year": int(edition),
            "country": name.strip()}  # fmt: skip


def load_freedom_house(
    path: str | Path, *, target_edition: int | None = None, source: str | None = None
) -> pd.DataFrame:
    """Freedom House "All Data FIW" CSV → latest status per country (territories dropped)."""
    path = Path(path)
    frame = _table_after(path, "Country/Territory")
    frame = frame.rename(columns={"C/T?": "C/T"})
    _require(path, frame, ("Country/Territory", "C/T", "Edition", "Status"))
    records = enumerate(frame.to_dict("records"), start=1)
    rows = [_fh_row(path, record, row) for row, record in records]
    long = pd.DataFrame([r for r in rows if r is not None], columns=["iso3", "value", "year"])
    if long.empty:
        raise SourceError(path, "no country rows (C/T = c)")
    label = source or "Freedom House, Freedom in the World (status)"
    return _tidy(latest_available(long, target_edition), label)


def read_freedom_house_workbook(path: str | Path) -> pd.DataFrame:
    """The ``FIW..`` sheet of an "All data" workbook, header found below any title lines."""
    path = Path(path)
    if not path.exists():
        raise SourceError(path, "file not found")
    try:
        book = pd.ExcelFile(path)
    except ImportError as exc:
        raise SourceError(path, "reading Excel needs openpyxl") from exc
    sheets = [s for s in book.sheet_names if str(s).upper().startswith("FIW")]
    if not sheets:
        raise SourceError(path, f"no 'FIW..' sheet; found {book.sheet_names}")
    raw = book.parse(sheets[0], header=None, dtype=str).fillna("")
    starts = [i for i in range(min(len(raw), 10)) if raw.iat[i, 0].strip() == "Country/Territory"]
    if not starts:
        raise SourceError(path, "no header row starting with 'Country/Territory'")
    frame = raw.iloc[starts[0] + 1 :].reset_index(drop=True)
    frame.columns = [str(c).strip() for c in raw.iloc[starts[0]]]
    return frame.rename(columns={"C/T?": "C/T"})


def freedom_status_rows(path: str | Path, frame: pd.DataFrame) -> pd.DataFrame:
    """``iso3, country, edition, status`` of every country row (``C/T = c``), all editions."""
    path = Path(path)
    _require(path, frame, ("Country/Territory", "C/T", "Edition", "Status"))
    records = enumerate(frame.to_dict("records"), start=1)
    rows = [r for r in (_fh_row(path, rec, row) for row, rec in records) if r is not None]
    if not rows:
        raise SourceError(path, "no country rows (C/T = c)")
    out = pd.DataFrame(rows).rename(columns={"value": "status", "year": "edition"})
    return out[["iso3", "country", "edition", "status"]]


def load_freedom_status(path: str | Path, *, edition: int, source: str) -> pd.DataFrame:
    """The project's derived FH status table → tidy frame of one edition (no back-fill).

    Every country FH rates appears in every edition, so a country missing from ``edition`` is
    a gap in the derived table, reported by the caller, not filled from another edition.
    """
    path = Path(path)
    frame = _table_after(path, "iso3")
    _require(path, frame, ("iso3", "country", "edition", "status"))
    _check_codes(path, frame["iso3"].str.strip(), "iso3")
    bad = ~frame["status"].isin(list(FREEDOM_STATUSES.values()))
    if bad.any():
        row = int(bad.to_numpy().argmax())
        message = (
            f"unknown status {frame['status'].iloc[row]!r} ({list(FREEDOM_STATUSES.values())})"
        )
        raise SourceError(path, message, row=row + 1, column="status")
    editions = _numbers(path, frame, ["edition"])["edition"]
    rows = frame[editions == edition]
    if rows.empty:
        raise SourceError(path, f"no rows of edition {edition}; found {sorted(set(editions))}")
    tidy = pd.DataFrame(
        {"iso3": rows["iso3"].str.strip(), "value": rows["status"], "year": edition}
    )
    return _tidy(tidy.reset_index(drop=True), source)


def load_worldbank_economies(path: str | Path) -> frozenset[str]:
    """Codes of the economies in a WDI ``Metadata_Country`` file (aggregates have no region)."""
    path = Path(path)
    frame = _table_after(path, "Country Code")
    _require(path, frame, ("Country Code", "Region"))
    codes = frame["Country Code"].str.strip()
    _check_codes(path, codes, "Country Code")
    economies = frozenset(codes[frame["Region"].str.strip().ne("")])
    if not economies:
        raise SourceError(path, "no economies (every row lacks a Region)")
    return economies
