"""WEIRD levels from the publishers' files: hand-computed fixtures and the project's real files.

The check against the official files recomputes every level with an independent path (the csv
module, openpyxl and ``statistics.quantiles``, no pandas or numpy and none of the loaders), so a
wrong loader, cut or class boundary shows as a named (country, dimension) mismatch.
"""

from __future__ import annotations

import csv
import re
import statistics
from functools import cache
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.cases.country_levels import LevelSettings, build_levels
from cultureqa.cases.source_files import derive_freedom_house, extract_hdr
from cultureqa.core.io import SourceError

ROOT = Path(__file__).resolve().parents[2]

# --- a hand-computed fixture in the publishers' layouts --------------------------------------

GDP = {  # iso3: GDP per capita PPP 2021, 2022, 2023 ("" = missing)
    "USA": ("70000", "72000", "74000"), "DEU": ("60000", "61000", "62000"),
    "FRA": ("50000", "51000", "52000"), "BRA": ("17000", "18000", "19000"),
    "IND": ("7000", "7500", "8000"), "NER": ("1500", "1550", "1600"),
    "HKG": ("65000", "66000", ""), "PRI": ("40000", "41000", "42000"),
    "CUB": ("", "", ""), "MCO": ("", "", ""), "WLD": ("20000", "21000", "22000"),
}  # fmt: skip
HDR = {  # iso3: mys 2021, mys 2022, gnipc 2021, gnipc 2022
    "USA": ("13.5", "13.6", "64000", "65000"), "DEU": ("14.0", "14.1", "54000", "55000"),
    "FRA": ("11.5", "11.6", "46000", "47000"), "BRA": ("8.0", "8.3", "13500", "14000"),
    "IND": ("6.5", "6.6", "6400", "6500"), "NER": ("1.4", "1.5", "1150", "1200"),
    "CUB": ("10.5", "10.55", "4900", "5000"), "MCO": ("", "", "", ""),
    "HKG": ("12.0", "12.3", "61000", "62000"), "ZZK.WORLD": ("8.7", "8.8", "17000", "17500"),
}  # fmt: skip
INCOME = {"USA": "High income", "DEU": "High income", "FRA": "High income",
          "BRA": "Upper middle income", "IND": "Lower middle income", "NER": "Low income",
          "CUB": "Upper middle income", "MCO": "High income", "HKG": "High income"}  # fmt: skip
FREEDOM = {"USA": "Free", "DEU": "Free", "FRA": "Free", "BRA": "Free", "IND": "Partly Free",
           "NER": "Not Free", "CUB": "Not Free", "MCO": "Free"}  # fmt: skip
WESTERN = {"USA": 1, "DEU": 1, "FRA": 1, "BRA": 0, "IND": 0, "NER": 0, "CUB": 0, "MCO": 1}
MEMBERS = frozenset(WESTERN)
HAND = (
    "iso3,dimension,level,comparables,evidence\n"
    'MCO,E,2,DEU;USA;FRA,"no HDR figure; neighbours"\n'
    'MCO,I,2,DEU;FRA;USA,"no WDI figure; neighbours"\n'
)
# Hand computation (numpy's linear quantiles = statistics.quantiles(method="inclusive")):
# GDP sample = 8 economies incl. the territories HKG (back-filled to 2022) and PRI, not WLD:
#   1600 8000 19000 42000 52000 62000 66000 74000 → positions 1.75, 3.5, 5.25 →
#   cuts 16250, 47000, 63000 (without the territories DEU would be 3, not 2).
# mys sample = 8 HDR countries incl. HKG, not the ZZK group: 1.5 6.6 8.3 10.55 11.6 12.3 13.6
#   14.1 → positions 7/3, 14/3 → cuts 9.05, 12.0667.
# CUB has no GDP: its HDR GNI (5000) lies between NER (I 0) and IND (I 0) → proxy I 0.
EXPECTED = {  # iso3: W, E, I, R, D, bin
    "USA": (1, 2, 3, 3, 2, 5), "DEU": (1, 2, 2, 3, 2, 4), "FRA": (1, 1, 2, 3, 2, 4),
    "BRA": (0, 0, 1, 2, 2, 2), "IND": (0, 0, 0, 1, 1, 0), "NER": (0, 0, 0, 0, 0, 0),
    "CUB": (0, 1, 0, 2, 0, 1), "MCO": (1, 2, 2, 3, 2, 4),
}  # fmt: skip


def _write_fixture(folder: Path, hand: str = HAND) -> LevelSettings:
    folder.mkdir(parents=True, exist_ok=True)
    head = '"Country Name","Country Code","Indicator Name","Indicator Code","2021","2022","2023",'
    lines = ['"Data Source","World Development Indicators",', "", head]
    lines += [f'"{c}","{c}","GDP pc","NY.GDP.PCAP.PP.KD",' + ",".join(f'"{v}"' for v in vs) + ","
              for c, vs in GDP.items()]  # fmt: skip
    (folder / "gdp.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    meta = ['"Country Code","Region","IncomeGroup","SpecialNotes","TableName",']
    meta += [f'"{c}","{"" if c == "WLD" else "Somewhere"}","","","{c}",' for c in GDP]
    (folder / "meta.csv").write_text("\n".join(meta) + "\n", encoding="utf-8")
    hdr = ["iso3,country,hdicode,region,mys_2021,mys_2022,gnipc_2021,gnipc_2022"]
    hdr += [f"{c},{c},,," + ",".join(vs) for c, vs in HDR.items()]
    (folder / "hdr.csv").write_text("\n".join(hdr) + "\n", encoding="latin-1")
    income = ["Economy,Code,Region,Income group,Lending category"]
    income += [f"{c},{c},Somewhere,{g}," for c, g in INCOME.items()]
    (folder / "class.csv").write_text("\n".join(income) + "\n", encoding="utf-8")
    fh = ["iso3,country,edition,status"] + [f"{c},{c},2024,{s}" for c, s in FREEDOM.items()]
    (folder / "fh.csv").write_text("\n".join(fh) + "\n", encoding="utf-8")
    civ = ["iso3,country,continent,civilization,western,civilization_year,civilization_source"]
    civ += [f"{c},{c},Asia,{'Western' if w else 'Other'},{w},1996,Huntington" for c, w in
            WESTERN.items()]  # fmt: skip
    (folder / "civ.csv").write_text("\n".join(civ) + "\n", encoding="utf-8")
    (folder / "hand.csv").write_text(hand, encoding="utf-8")
    names = {"gdp": "gdp.csv", "gdp_economies": "meta.csv", "income": "class.csv",
             "hdr": "hdr.csv", "freedom": "fh.csv", "civilizations": "civ.csv",
             "hand_levels": "hand.csv"}  # fmt: skip
    return LevelSettings({k: folder / v for k, v in names.items()}, proxy_neighbours=1)


def test_levels_cuts_and_bins_match_the_hand_computation(tmp_path: Path) -> None:
    table, cuts, summary = build_levels(_write_fixture(tmp_path), MEMBERS)
    assert cuts.income_quartiles == pytest.approx((16250.0, 47000.0, 63000.0))
    assert cuts.education_tertiles == pytest.approx((9.05, 11.6 + 0.7 * 2 / 3))
    assert (cuts.income_sample, cuts.education_sample) == (8, 8)
    got = table.set_index("iso3")
    for code, (*dims, weird_bin) in EXPECTED.items():
        assert [int(got.loc[code, d]) for d in "WEIRD"] == dims, code
        assert got.loc[code, "weird_bin"] == weird_bin, code
    assert got.loc["CUB", "I_basis"] == "proxy" and "NER 0, IND 0" in got.loc["CUB", "I_note"]
    assert got.loc["MCO", ["E_basis", "I_basis"]].tolist() == ["hand", "hand"]
    assert "DEU 2, USA 2, FRA 1 (2 of 3)" in got.loc["MCO", "E_note"]
    assert got["hand_annotated"].to_dict() == {c: c == "MCO" for c in sorted(MEMBERS)}
    assert got.loc["MCO", "bin_bounds"] == "3–5" and got.loc["USA", "bin_bounds"] == ""
    assert got.loc["HKG":"HKG"].empty  # territories enter the cuts, not the member table
    assert summary["basis"]["I"] == {"value": 6, "coding": 0, "proxy": 1, "hand": 1}
    assert summary["backfilled"] == {"E": 0, "I": 0}  # HKG's back-fill is a territory's


def test_proxy_neighbours_that_disagree_are_an_error(tmp_path: Path) -> None:
    settings = _write_fixture(tmp_path)
    wider = LevelSettings(settings.files, proxy_neighbours=2)  # NER 0, IND 0, BRA 1
    with pytest.raises(
        SourceError, match=r"hand.csv: CUB: .* disagree on I \(NER 0, IND 0, BRA 1\)"
    ):
        build_levels(wider, MEMBERS)


@pytest.mark.parametrize(
    ("hand", "message"),
    [
        (HAND.replace("MCO,E,2", "MCO,E,1"), r"row 1, column 'level'.*DEU 2, USA 2, FRA 1"),
        (HAND + 'USA,E,2,,"typed"\n', r"row 3, column 'iso3'.*USA has an official E figure"),
        (HAND.replace("DEU;USA;FRA", "DEU;XYZ"), r"row 1, column 'comparables'"),
        (HAND.replace("MCO,I,2", "MCO,I,7"), r"row 2, column 'level'.*0–3"),
        (HAND.replace('"no WDI figure; neighbours"', '""'), r"row 2, column 'evidence'"),
    ],
)
def test_bad_hand_levels_name_row_and_column(tmp_path: Path, hand: str, message: str) -> None:
    with pytest.raises(SourceError, match=message):
        build_levels(_write_fixture(tmp_path, hand), MEMBERS)


def test_a_member_without_any_figure_is_an_error_not_a_blank_bin(tmp_path: Path) -> None:
    settings = _write_fixture(tmp_path, HAND.splitlines()[0] + "\n")
    with pytest.raises(SourceError, match=r"hand\.csv: no official .*\['MCO E', 'MCO I'\]"):
        build_levels(settings, MEMBERS)


# --- the project's real files ------------------------------------------------------------------


def _settings(root: Path = ROOT) -> LevelSettings:
    group = OmegaConf.load(ROOT / "conf" / "cases" / "default.yaml")
    return LevelSettings.from_config(OmegaConf.to_container(group.weird), root)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def real() -> tuple[pd.DataFrame, dict[str, object]]:
    table, _, summary = build_levels(_settings())
    return table.set_index("iso3"), summary


def test_every_un_member_is_binned_and_hand_marks_are_few(real: tuple) -> None:  # type: ignore[type-arg]
    table, summary = real
    assert len(table) == 193 and table["weird_bin"].between(0, 5).all()
    assert summary["binned"] == 193
    assert sorted(table.index[table["hand_annotated"]]) == ["MCO", "PRK", "VEN"]
    assert (
        table.loc["MCO", "hand_dimensions"] == "E, I" and table.loc["VEN", "hand_dimensions"] == "R"
    )
    assert summary["proxy"] == ["CUB", "ERI", "LIE", "SSD", "VEN", "YEM"]
    for dim in "EIRD":
        bases = table[f"{dim}_basis"]
        assert bases.isin(["value", "proxy", "hand"]).all(), dim
        assert table.loc[bases == "value", f"{dim}_source"].str.contains(r"\(20\d\d\)$").all()
    assert (table["W_basis"] == "coding").all()


def test_the_facts_the_issue_names(real: tuple) -> None:  # type: ignore[type-arg]
    table, _ = real
    assert float(table.loc["CUB", "E_raw"]) == pytest.approx(10.55, abs=0.005)
    assert table.loc["CUB", ["E", "weird_bin"]].tolist() == [1, 1]
    assert float(table.loc["VEN", "E_raw"]) == pytest.approx(9.63, abs=0.005)
    assert table.loc["VEN", "E"] == 1  # with W 0, R 2 and D 0: bin 1 for any I below 3
    assert table.loc["VEN", "weird_bin"] == 1
    assert table.loc[["MCO", "PRK"], "E_basis"].tolist() == ["hand", "hand"]


def test_venezuelas_hand_income_group_quotes_the_classification_notes() -> None:
    book = openpyxl.load_workbook(_settings().files["income"], read_only=True)
    notes = " ".join(str(c) for row in book["Notes"].iter_rows(values_only=True) for c in row if c)
    hand = pd.read_csv(_settings().files["hand_levels"], dtype=str).set_index(["iso3", "dimension"])
    quote = re.search(r'"(Venezuela, RB classified[^"]+)"', hand.loc[("VEN", "R"), "evidence"])
    assert quote and quote.group(1) in notes


# --- the check: computed levels against the official files, independently -------------------


def _latest(row: dict[str, str], prefix: str, last_year: int) -> float | None:
    years = sorted(int(k[len(prefix) :]) for k in row if re.fullmatch(rf"{prefix}\d{{4}}", k))
    for year in reversed([y for y in years if y <= last_year]):
        if row[f"{prefix}{year}"].strip() not in ("", ".."):
            return float(row[f"{prefix}{year}"])
    return None


def _cls(value: float, cuts: list[float]) -> int:
    return sum(1 for cut in cuts if cut < value)


def _rows_after(path: Path, first: str) -> list[dict[str, str]]:
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip('"').startswith(first))
    return list(csv.DictReader(lines[start:]))


def independent_levels(settings: LevelSettings) -> dict[tuple[str, str], int]:
    """(iso3, dimension) → level for every economy the files give a figure, recomputed here."""
    f = settings.files
    hdr = [r for r in _rows_after(f["hdr"], "iso3") if re.fullmatch("[A-Z]{3}", r["iso3"])]
    mys = {r["iso3"]: v for r in hdr if (v := _latest(r, "mys_", settings.mys_year)) is not None}
    economies = {r["Country Code"] for r in _rows_after(f["gdp_economies"], "Country Code")
                 if r["Region"].strip()}  # fmt: skip
    gdp = {r["Country Code"]: v for r in _rows_after(f["gdp"], "Country Name")
           if r["Country Code"] in economies
           and (v := _latest({f"y{k}": x for k, x in r.items() if k}, "y", settings.gdp_year))
           is not None}  # fmt: skip
    e_cuts = statistics.quantiles(mys.values(), n=3, method="inclusive")
    i_cuts = statistics.quantiles(gdp.values(), n=4, method="inclusive")
    levels = {(c, "E"): _cls(v, e_cuts) for c, v in mys.items()}
    levels |= {(c, "I"): _cls(v, i_cuts) for c, v in gdp.items()}
    groups = ["Low income", "Lower middle income", "Upper middle income", "High income"]
    sheet = openpyxl.load_workbook(f["income"], read_only=True)["List of economies"]
    rows = list(sheet.iter_rows(values_only=True))
    at = {name: i for i, name in enumerate(rows[0])}
    for row in rows[1:]:
        if row[at["Income group"]] in groups:
            levels[(row[at["Code"]], "R")] = groups.index(row[at["Income group"]])
    statuses = ["Not Free", "Partly Free", "Free"]
    for r in _rows_after(f["freedom"], "iso3"):
        if int(r["edition"]) == settings.freedom_edition:
            levels[(r["iso3"], "D")] = statuses.index(r["status"])
    return levels


def level_mismatches(table: pd.DataFrame, settings: LevelSettings) -> list[str]:
    """``"<iso3> <dim>: table <a>, files <b>"`` for every level the files contradict."""
    files = independent_levels(settings)
    problems = []
    for code, row in table.iterrows():
        for dim in "EIRD":
            official = files.get((str(code), dim))
            if row[f"{dim}_basis"] == "value" and official != row[dim]:
                problems.append(f"{code} {dim}: table {row[dim]}, files {official}")
            if row[f"{dim}_basis"] != "value" and official is not None:
                problems.append(
                    f"{code} {dim}: {row[f'{dim}_basis']} although the files give {official}"
                )
    return problems


def test_computed_levels_agree_with_the_official_files(real: tuple) -> None:  # type: ignore[type-arg]
    table, summary = real
    assert level_mismatches(table, _settings()) == []
    assert summary["basis"]["E"]["value"] == 191 and summary["basis"]["D"]["value"] == 193


def test_a_changed_gdp_in_the_files_is_named_by_the_check(real: tuple, tmp_path: Path) -> None:  # type: ignore[type-arg]
    table, _ = real
    settings = _settings()
    planted = tmp_path / "gdp.csv"
    text = settings.files["gdp"].read_text(encoding="utf-8-sig")
    line = next(x for x in text.splitlines() if x.startswith('"Luxembourg","LUX"'))
    cells = line.split(",")
    cells[-3] = '"1000"'  # the 2023 value (the row ends with 2023, 2024 and a trailing comma)
    planted.write_text(text.replace(line, ",".join(cells)), encoding="utf-8")
    doctored = LevelSettings({**settings.files, "gdp": planted}, **_numbers(settings))
    problems = level_mismatches(table, doctored)
    assert "LUX I: table 3, files 0" in problems
    assert all(" I: " in p for p in problems), problems  # the cuts may move a neighbour too


def _numbers(settings: LevelSettings) -> dict[str, int]:
    return {k: getattr(settings, k) for k in ("gdp_year", "mys_year", "income_fiscal_year",
                                              "freedom_edition", "proxy_neighbours")}  # fmt: skip


# --- the extractions that put the files into the project ------------------------------------


def test_hdr_extraction_keeps_the_needed_columns_cell_for_cell(tmp_path: Path) -> None:
    source = tmp_path / "hdr.csv"
    header = "iso3,country,hdicode,region,hdi_2022,mys_2021,mys_2022,gnipc_2022\n"
    text = header + "CIV,Côte d'Ivoire,Low,SSA,0.534,4.79,5.0,5000.123\n"
    source.write_bytes(b"\xef\xbb\xbf" + text.encode("latin-1", errors="strict"))
    assert extract_hdr(source, tmp_path / "out.csv") == 1
    out = (tmp_path / "out.csv").read_text(encoding="utf-8").splitlines()
    assert out == ["iso3,country,hdicode,region,mys_2021,mys_2022,gnipc_2022",
                   "CIV,Côte d'Ivoire,Low,SSA,4.79,5.0,5000.123"]  # fmt: skip


def _workbook(path: Path, edition: int, rows: list[tuple[str, str, str]]) -> Path:
    book = openpyxl.Workbook()
    book.active.title = "Index"
    sheet = book.create_sheet(f"FIW13-{edition % 100}")
    sheet.append([f"Freedom in the World 2013-{edition} Raw Data"])
    sheet.append(["Country/Territory", "Region", "C/T", "Edition", "Status"])
    for name, kind, status in rows:
        sheet.append([name, "Somewhere", kind, edition, status])
        sheet.append([name, "Somewhere", kind, edition - 1, "NF"])  # an older edition
    book.save(path)
    return path


def test_freedom_house_derivation_keeps_countries_of_the_newest_edition(tmp_path: Path) -> None:
    first = _workbook(tmp_path / "a.xlsx", 2024, [("Ecuador", "c", "PF"), ("Hong Kong", "t", "PF")])
    second = _workbook(
        tmp_path / "b.xlsx", 2025, [("Ecuador", "c", "PF"), ("The Gambia", "c", "F")]
    )
    table = derive_freedom_house([first, second], tmp_path / "status.csv")
    assert table.to_dict("records") == [
        {"iso3": "ECU", "country": "Ecuador", "edition": 2024, "status": "Partly Free"},
        {"iso3": "ECU", "country": "Ecuador", "edition": 2025, "status": "Partly Free"},
        {"iso3": "GMB", "country": "The Gambia", "edition": 2025, "status": "Free"},
    ]
    bad = _workbook(tmp_path / "c.xlsx", 2025, [("Atlantis", "c", "F")])
    with pytest.raises(SourceError, match=r"c.xlsx, row 1, column 'Country/Territory'"):
        derive_freedom_house([bad], tmp_path / "status2.csv")


FH_FOLDER = Path("shared") / "data" / "country-indicators" / "freedom-house"
"""The publishers' workbooks sit in the team's shared folder beside the checkout (not copied in)."""


@cache
def _shared_workbooks() -> list[Path]:
    for base in (ROOT.parent, *ROOT.parents[1:3]):
        if (base / FH_FOLDER).exists():
            return sorted((base / FH_FOLDER).glob("All_data_FIW_*.xlsx"))
    return []


@pytest.mark.skipif(
    not _shared_workbooks(), reason="Freedom House workbooks are not on this machine"
)
def test_committed_freedom_status_is_what_the_workbooks_give(tmp_path: Path) -> None:
    derived = derive_freedom_house(_shared_workbooks(), tmp_path / "status.csv")
    committed = ROOT / "data" / "knowledge" / "countries" / "freedom_house_status.csv"
    assert (tmp_path / "status.csv").read_text() == committed.read_text()
    assert len(derived) == 390


def test_sources_folder_holds_every_configured_file() -> None:
    settings = _settings()
    for key, path in settings.files.items():
        assert path.exists(), key
    datasheet = (ROOT / "data/sources/country-indicators/README.md").read_text(encoding="utf-8")
    for path in settings.files.values():
        if "country-indicators" in str(path):
            assert path.name in datasheet, path.name


def test_the_stage_writes_the_table_and_fails_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import runpy

    from cultureqa.core.config import run_stage

    settings = _write_fixture(tmp_path / "files")
    files = {k: str(v) for k, v in settings.files.items()}
    weird = {"files": files, "proxy_neighbours": 1}
    params = {"cases": {"weird": weird, "paths": {"build": "build", "metrics": "metrics"}}}
    OmegaConf.save(OmegaConf.create(params), tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    main = runpy.run_path(str(ROOT / "stages" / "cases_weird.py"), run_name="stage")["main"]
    # the fixture codes 8 countries, not the 193 members: one line naming the file, rc 2
    assert run_stage(main) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "civ.csv: no W coding for members ['AFG'" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "build").exists()
