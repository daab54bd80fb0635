"""One-line errors (rc 2, with the fix) for what a user can fix, earlier outputs intact.

Each case plants the failure: a corrupt response store or MLflow database, a full disk and a
read-only folder (write stubs raising the OSError the kernel would: we may run as root, for whom
chmod does not stop writes), a misspelt or stale params key, a blank boolean cell.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import runpy
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import OmegaConf

from cultureqa.core.config import run_stage

ROOT = Path(__file__).resolve().parents[1]
ENTRY = ["--benchmark", "indoculture", "--model", "baselines.random"]
TRACK = ["--only", "indoculture/baselines.random"]
PREDICTIONS = Path("data/eval/indoculture/baselines.random/predictions.parquet")


def _stage(name: str) -> Callable[[list[str]], int]:
    return runpy.run_path(str(ROOT / "stages" / f"{name}.py"), run_name="stage")["main"]  # type: ignore[no-any-return]


def _run(name: str, argv: list[str]) -> int:
    main = _stage(name)
    return run_stage(lambda: main(argv))


def _enter(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder)
    monkeypatch.setenv("DVC_ROOT", str(folder))
    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(folder / ".cultureqa"))


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pipeline workspace with conf/ beside params.yaml (so keys are checked) and one run done.

    Built once per module: each test breaks its own copy (see ``workspace``), so the evaluate
    run the copies start from is not repeated for every planted failure.
    """
    folder = tmp_path_factory.mktemp("one_run")
    for name in ("conf", "prompts", "expectations", "data/sources", "data/knowledge"):
        shutil.copytree(ROOT / name, folder / name)
    params = OmegaConf.load(ROOT / "params.yaml")
    params.evaluate.progress = False
    OmegaConf.save(params, folder / "params.yaml")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _enter(folder, monkeypatch)
        assert _run("evaluate", ENTRY) == 0
    return folder


@pytest.fixture
def workspace(one_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's own copy of ``one_run``, entered as the stages' working directory.

    A planted store failure stops sending for the rest of the process, as in a stage; the
    suite's conftest clears that flag after each test.
    """
    shutil.copytree(one_run, tmp_path, dirs_exist_ok=True)
    _enter(tmp_path, monkeypatch)
    yield tmp_path


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error: ")]
    assert len(lines) == 1, lines
    return lines[0]


def test_corrupt_response_store_is_one_line(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = PREDICTIONS.read_bytes()
    store = workspace / ".cultureqa" / "responses.sqlite"
    store.write_bytes(b"this is not sqlite" * 100)
    capsys.readouterr()
    assert _run("evaluate", ENTRY) == 2
    line = _one_error_line(capsys)
    assert f"{store}: not an SQLite database" in line and f"mv {store}" in line
    assert PREDICTIONS.read_bytes() == before


def test_corrupt_mlflow_db_is_one_line(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "mlflow.db").write_bytes(os.urandom(4096))
    capsys.readouterr()
    assert _run("track", TRACK) == 2
    line = _one_error_line(capsys)
    assert f"{workspace / 'mlflow.db'}: not an SQLite database" in line
    assert "rm -r data/track && dvc repro" in line


def test_full_disk_keeps_earlier_outputs(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = PREDICTIONS.read_bytes()

    def full(self: pd.DataFrame, path: object, **kwargs: object) -> None:
        Path(str(path)).write_bytes(b"PAR1 half")  # a partial temp file, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    capsys.readouterr()
    assert _run("evaluate", ENTRY) == 2
    line = _one_error_line(capsys)
    assert f"{workspace / PREDICTIONS}: no space left on device" in line and "df -h" in line
    assert PREDICTIONS.read_bytes() == before
    assert not [p for p in PREDICTIONS.parent.iterdir() if p.name.endswith(".tmp")]


def test_read_only_output_folder(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = PREDICTIONS.read_bytes()

    def read_only(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    capsys.readouterr()
    assert _run("evaluate", ENTRY) == 2
    line = _one_error_line(capsys)
    assert "predictions.parquet: cannot write (Read-only file system)" in line
    assert PREDICTIONS.read_bytes() == before


@pytest.mark.parametrize("where", ["missing-folder", "existing-folder"])
def test_read_only_state_folder(
    workspace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    """The store's folder cannot be created, or its database cannot be opened for writing."""
    before = PREDICTIONS.read_bytes()
    state = workspace / ".cultureqa"
    shutil.rmtree(state)
    if where == "missing-folder":
        monkeypatch.setattr(os, "mkdir", _read_only_mkdir(state, os.mkdir))
    else:
        state.mkdir()
        real_connect = sqlite3.connect

        def read_only(database: object, *args: object, **kwargs: object) -> sqlite3.Connection:
            if str(database).endswith("responses.sqlite"):
                raise sqlite3.OperationalError("unable to open database file")
            return real_connect(database, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(sqlite3, "connect", read_only)
    capsys.readouterr()
    assert _run("evaluate", ENTRY) == 2
    line = _one_error_line(capsys)
    assert str(state) in line and "CULTUREQA_STATE_DIR" in line
    assert PREDICTIONS.read_bytes() == before


def _read_only_mkdir(blocked: Path, real: Callable[..., None]) -> Callable[..., None]:
    def mkdir(path: object, *args: object, **kwargs: object) -> None:
        if Path(str(path)) == blocked:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        real(path, *args, **kwargs)

    return mkdir


def test_misspelt_params_key_names_the_nearest_key(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (workspace / "params.yaml").read_text()
    (workspace / "params.yaml").write_text(
        text.replace("max_error_share: 0.1\n  progress", "max_eror_share: 0.1\n  progress")
    )
    capsys.readouterr()
    assert _run("evaluate", ENTRY) == 2
    line = _one_error_line(capsys)
    assert "unknown key 'evaluate.max_eror_share'" in line
    assert "did you mean 'evaluate.max_error_share'?" in line and "make params" in line


def test_unknown_nested_key_in_a_model_config(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    params = OmegaConf.load(workspace / "params.yaml")
    params.baselines.random.decoding.temprature = 0.7
    OmegaConf.save(params, workspace / "params.yaml")
    capsys.readouterr()
    assert _run("evaluate", ENTRY) == 2
    line = _one_error_line(capsys)
    assert "'baselines.random.decoding.temprature'" in line
    assert "'baselines.random.decoding.temperature'" in line


def test_stale_params_say_make_params(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params = OmegaConf.load(workspace / "params.yaml")
    del params.prompt["min_max_tokens"]  # a params.yaml composed before conf/ gained the key
    OmegaConf.save(params, workspace / "params.yaml")
    capsys.readouterr()
    assert _run("evaluate", ENTRY) == 2
    line = _one_error_line(capsys)
    assert "missing key 'prompt.min_max_tokens'" in line and "run `make params`" in line


def test_unknown_benchmark_says_make_params(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert _run("validate", ["--benchmark", "province_capitals"]) == 2
    line = _one_error_line(capsys)
    assert "no 'benchmarks.province_capitals'" in line and "make params" in line


@pytest.mark.parametrize("stage", ["evaluate", "validate"])
def test_a_benchmark_edited_without_recomposing_is_one_line(
    workspace: Path, capsys: pytest.CaptureFixture[str], stage: str
) -> None:
    """The stages declare only ``benchmarks.<name>.digest``: a hand edit must not pass unseen."""
    params = OmegaConf.load(workspace / "params.yaml")
    params.benchmarks.indoculture.description = "edited by hand"  # the digest left behind
    OmegaConf.save(params, workspace / "params.yaml")
    capsys.readouterr()
    argv = ENTRY if stage == "evaluate" else ["--benchmark", "indoculture"]
    assert _run(stage, argv) == 2
    line = _one_error_line(capsys)
    assert "params.yaml benchmarks.indoculture: digest" in line and "`make params`" in line


def test_composed_sweeps_pass_the_key_check() -> None:
    """The README's overrides compose params the check accepts (no false alarms)."""
    from cultureqa.core.params_schema import check_keys
    from cultureqa.testing.composed import composed, schema

    conf_schema = schema(ROOT / "conf")
    for overrides in (
        [],
        ["model=gpt_5_mini", "prompt=cot", "source=indoculture_hf"],
        ["generator=llm", "judge=panel", "model@generator.model=gpt_4o"],
        ["model@cases.construct.model=deepseek_reasoner", "model=llama_3_3_70b"],
        ["+benchmark@benchmarks.province_capitals=province_capitals"],
    ):
        assert check_keys(composed(ROOT / "conf", overrides), conf_schema) == [], overrides


def test_blank_boolean_cell_names_row_and_column(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = PREDICTIONS.read_bytes()
    sample = workspace / "data/sources/indoculture/sample.csv"
    frame = pd.read_csv(sample, dtype=str, keep_default_na=False)
    frame.loc[3, "is_province_specific"] = ""
    frame.to_csv(sample, index=False)
    capsys.readouterr()
    assert _run("evaluate", ENTRY) == 2
    line = _one_error_line(capsys)
    assert "sample.csv, row 4, column 'is_province_specific'" in line and "got ''" in line
    assert PREDICTIONS.read_bytes() == before


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_outputs_keep_the_umask(tmp_path: Path, mask: int) -> None:
    from cultureqa.core.io import write_json, write_parquet

    old = os.umask(mask)
    try:
        written = [
            write_json(tmp_path / "a.json", {"x": 1}),
            write_parquet(tmp_path / "sub" / "p.parquet", pd.DataFrame({"x": [1]})),
        ]
    finally:
        os.umask(old)
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


def test_error_lines_for_database_and_os_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The boundary's wording for failures the stage tests cannot plant cheaply."""
    from cultureqa.core.errors import describe_database_error, one_line

    monkeypatch.setenv("CULTUREQA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    full = describe_database_error(sqlite3.OperationalError("database or disk is full"))
    assert "responses.sqlite" in full and "free space" in full
    pyarrow_style = OSError("[Errno 28] No space left on device")
    pyarrow_style.filename = str(tmp_path / "p.parquet")
    assert "p.parquet: no space left on device" in str(one_line(pyarrow_style))
    assert one_line(ConnectionRefusedError(111, "Connection refused")) is None  # a bug: traceback
    assert one_line(ValueError("x")) is None


def test_damaged_store_behind_a_valid_header_is_named(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = workspace / ".cultureqa" / "responses.sqlite"
    data = bytearray(store.read_bytes())
    data[100:] = os.urandom(len(data) - 100)  # header intact, every page garbage
    store.write_bytes(bytes(data))
    capsys.readouterr()
    assert _run("evaluate", ENTRY) == 2
    line = _one_error_line(capsys)
    assert str(store) in line and f"mv {store}" in line


def test_a_full_disk_under_a_healthy_store_is_not_called_damage(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's own "database or disk is full", planted for real: the store may not grow a page.

    Moving the store aside (the old advice) would have paid for every stored answer again.
    """
    from cultureqa.llm import registry

    baseline = registry._FACTORIES["random"]  # baselines store nothing (issue 33): make it store
    stored = lambda cfg: dataclasses.replace(baseline(cfg), stored=True)  # noqa: E731
    monkeypatch.setitem(registry._FACTORIES, "random", stored)

    from cultureqa.core.errors import integrity
    from cultureqa.llm.store.sqlite import SqliteStore

    store = workspace / ".cultureqa" / "responses.sqlite"
    for path in store.parent.glob("responses.sqlite*"):
        path.unlink()  # every answer is a miss, so the run writes
    real = SqliteStore._put_groups

    def no_room(self: SqliteStore, *args: Any) -> None:
        pages = self._conn.execute("PRAGMA page_count").fetchone()[0]
        self._conn.execute(f"PRAGMA max_page_count = {pages}")  # what a full disk leaves
        real(self, *args)

    monkeypatch.setattr(SqliteStore, "_put_groups", no_room)
    capsys.readouterr()
    assert _run("evaluate", ENTRY) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"error: {store}: database or disk is full: the disk is full")
    assert "the database is not damaged" in line and f"df -h {store.parent}" in line
    assert "mv " not in line and "aside" not in line and "mlflow.db" not in line
    assert integrity(store) == "ok"


def test_an_io_error_or_an_unrunnable_check_never_advises_moving_the_store(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a check that ran and failed is damage; a check that could not run says nothing."""
    from cultureqa.core import errors

    store = workspace / ".cultureqa" / "responses.sqlite"
    monkeypatch.setattr(errors, "OPENED", {store})
    io_line = errors.describe_database_error(sqlite3.OperationalError("disk I/O error"))
    assert io_line.startswith(f"{store}: disk I/O error (its integrity check passes)")
    assert "keep the database where it is" in io_line and "mv " not in io_line
    real_connect = sqlite3.connect

    def no_temp_space(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        if "mode=ro" in str(args[0]):
            raise sqlite3.OperationalError("database or disk is full")
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", no_temp_space)
    assert errors.integrity(store) == "unknown"
    line = errors.describe_database_error(sqlite3.OperationalError("disk I/O error"))
    assert "(its integrity check could not run)" in line and "mv " not in line


def test_an_io_error_on_a_nearly_full_disk_says_the_disk_is_full(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33 item 7: with ~24 KB free SQLite says "disk I/O error"; the line says "full"."""
    import shutil
    from collections import namedtuple

    from cultureqa.core import errors

    store = workspace / ".cultureqa" / "responses.sqlite"
    monkeypatch.setattr(errors, "OPENED", {store})
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 24_576, 24_576))
    line = errors.describe_database_error(sqlite3.OperationalError("disk I/O error"))
    assert line == (
        f"{store}: disk I/O error: the disk is full (24,576 bytes free), the database is not "
        f"damaged; free space (df -h {store.parent}) and rerun: stored answers are kept, none is "
        "paid again"
    )
    # with room on the disk, an I/O error stays an I/O error
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 0, 10**9))
    assert "the disk is full" not in errors.describe_database_error(
        sqlite3.OperationalError("disk I/O error")
    )
