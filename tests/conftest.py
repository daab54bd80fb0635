"""Shared fixtures: offline environment, repo paths, tiny item builders."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cultureqa.core import runlock
from cultureqa.core.config import OFFLINE_ENV
from cultureqa.core.records import McqItem
from cultureqa.testing.cpu_top import (  # noqa: F401  (hooks: `pytest --cpu-top N`)
    pytest_addoption,
    pytest_runtest_logreport,
    pytest_runtest_makereport,
    pytest_runtest_protocol,
    pytest_terminal_summary,
)
from cultureqa.testing.mlflow_template import install as install_mlflow_template
from cultureqa.testing.postgres import NoServer, PgServer, temporary_server

for _key, _value in OFFLINE_ENV.items():
    os.environ.setdefault(_key, _value)
# xdist workers run beside stage processes: one torch/OpenMP thread per process, or their
# threads spin against each other (a tiny model's 2-second training loop took 40 s under load).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# `make test ARGS=--durations=15` puts its command-line variables in the environment and in
# MAKEFLAGS, so a test that runs `make exps` would pass pytest's ARGS to `cultureqa exps`.
_, _, _overrides = os.environ.get("MAKEFLAGS", "").partition(" -- ")
for _key in [v.split("=", 1)[0] for v in _overrides.split() if "=" in v]:
    os.environ.pop(_key, None)
for _key in ("MAKEFLAGS", "MAKEOVERRIDES", "MFLAGS", "MAKELEVEL"):
    os.environ.pop(_key, None)

ROOT = Path(__file__).resolve().parents[1]

# in-process track stages: MLflow's migrations run once per test process, later empty SQLite
# stores are copies of that one (see the module's docstring)
install_mlflow_template()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze the heap that collection built, so no garbage collection walks it again.

    Each worker imports every test module's libraries (GX, torch, statsmodels, MLflow…) while
    collecting: millions of long-lived objects. Every full collection afterwards, Python's own
    and the explicit ``gc.collect()`` that statsmodels' ``multipletests`` runs on each call,
    walked them all (60 ms a call in a loaded worker; 24 CPU s for one test). Frozen objects
    stay alive as they would anyway; what tests allocate is still collected as before.
    """
    import gc

    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _sending_allowed_after_each_test() -> Iterator[None]:
    """Clear the process-wide stop flag a test left set.

    A planted store failure (or a stop signal) calls ``runlock.stop_sending``, which stops
    sending for the rest of the process, as it must in a stage; in a test worker it would make
    every later test's client answer "not sent". A stage clears it when it starts; clients that
    tests drive directly have no stage around them, so it is cleared here.
    """
    yield
    if runlock.stop_requested():
        runlock.stop_gracefully_on_signals()()  # clears it; the handlers are put back at once


@pytest.fixture
def repo_root() -> Path:
    return ROOT


def make_item(
    item_id: str = "q1",
    options: tuple[str, ...] = ("kain ulos", "kain songket", "selendang batik"),
    answer: int = 0,
    language: str = "id",
    **metadata: object,
) -> McqItem:
    return McqItem(
        id=item_id,
        question="Saat upacara pernikahan adat Batak, keluarga pengantin perempuan memberikan",
        options=options,
        answer_index=answer,
        language=language,
        metadata=dict(metadata),
    )


# --- a real headless browser, for the pages users open (DVC plots, the MLflow UI) -------------

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars",
)  # fmt: skip
VEGA_DIR = Path.home() / ".cache" / "cultureqa" / "vega"
"""Where `make plots` installs Vega from the npm registry (the tests share it)."""


def _installed_chromium() -> str | None:
    import shutil
    import subprocess

    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and shutil.which("apt-get") and os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], capture_output=True,
                       timeout=1200, check=False)  # fmt: skip
        found = shutil.which("chromium")
    return found


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium, installed if missing; the test is skipped only if it cannot be."""
    found = _installed_chromium()
    if found is None:
        pytest.skip("no Chromium, and `apt-get install chromium` is not possible here")
    return found


@pytest.fixture
def browse(chromium: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """``browse(url, screenshot=None, size="1400,1000") -> DOM after scripts ran``."""
    import subprocess

    def run(url: str, screenshot: Path | None = None, size: str = "1400,1000") -> str:
        profile = tmp_path / f"chromium-{len(list(tmp_path.glob('chromium-*')))}"
        base = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                "--virtual-time-budget=30000", f"--window-size={size}"]  # fmt: skip
        if screenshot is not None:
            subprocess.run([*base, f"--screenshot={screenshot}", url], capture_output=True,
                           timeout=180, check=True)  # fmt: skip
        done = subprocess.run([*base, "--dump-dom", url], capture_output=True, text=True,
                              timeout=180, check=True)  # fmt: skip
        return done.stdout

    return run


@pytest.fixture(scope="session")
def vega_dir() -> Path:
    """Vega, Vega-Lite and Vega-Embed from the npm registry, as `make plots` installs them."""
    import shutil
    import subprocess

    if not (VEGA_DIR / ".installed").exists():
        if shutil.which("make") is None or shutil.which("npm") is None:
            pytest.skip("npm is not installed: `make plots` cannot fetch Vega")
        subprocess.run(["make", "-s", "-C", str(ROOT), f"{VEGA_DIR}/.installed",
                        f"VEGA_DIR={VEGA_DIR}"], check=True, timeout=600)  # fmt: skip
    return VEGA_DIR


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL server (pgserver's binary), one per test process.

    Tests skip, saying why, only when no server can be started here (:class:`NoServer`).
    """
    try:
        with temporary_server() as server:
            yield server
    except NoServer as exc:
        pytest.skip(f"no PostgreSQL server: {exc}")


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A fresh database on the session's server."""
    return pg_server.database()
