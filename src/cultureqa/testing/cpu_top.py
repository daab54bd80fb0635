"""``pytest --cpu-top N``: the tests that cost the most CPU, their own and their subprocesses'.

``--durations`` shows wall time, which on a shared machine mostly measures the load; what a
suite costs the machine is CPU. Each test's cost is read from ``resource.getrusage`` before its
set-up and after its teardown: ``RUSAGE_SELF`` (the test process) and ``RUSAGE_CHILDREN`` (its
subprocesses that were waited for: stage scripts, ``dvc``, servers that a fixture stopped). Under
xdist each worker measures its tests and the figures travel to the controller on the reports'
``user_properties``; the controller prints the top N and the sum.

A session fixture's set-up is charged to the first test that uses it in that worker, its
teardown to the last: the report names where a shared fixture's cost lands.
"""

from __future__ import annotations

import resource
from collections.abc import Generator
from typing import Any

import pytest

_KEY = "cpu_s"
_START = pytest.StashKey[tuple[float, float]]()
_STORE: dict[str, tuple[float, float]] = {}
"""nodeid -> (own, subprocess) CPU seconds, filled in the process that prints the summary."""


def _now() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--cpu-top N``: off (0) unless asked, so a plain run measures nothing."""
    parser.getgroup("cultureqa").addoption(
        "--cpu-top",
        type=int,
        default=0,
        metavar="N",
        help="list the N tests that used the most CPU (own + subprocesses, user + sys)",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    """The reading before set-up, so a fixture's cost counts with the test that needed it."""
    if item.config.getoption("cpu_top"):
        item.stash[_START] = _now()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """After teardown: the difference travels on the teardown report (xdist sends it)."""
    outcome = yield
    start = item.stash.get(_START, None)
    if call.when == "teardown" and start is not None:
        own, kids = _now()
        outcome.get_result().user_properties.append((_KEY, (own - start[0], kids - start[1])))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect the figures; in the controller this sees the reports the workers send."""
    for key, value in report.user_properties:
        if key == _KEY and report.when == "teardown":
            pair: tuple[float, float] = tuple(value)  # type: ignore[arg-type, assignment]
            _STORE[report.nodeid] = (float(pair[0]), float(pair[1]))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The top N and the sum, at the end of the run."""
    top = config.getoption("cpu_top")
    if not top or not _STORE:
        return
    rows = sorted(_STORE.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
    own_sum = sum(v[0] for v in _STORE.values())
    kids_sum = sum(v[1] for v in _STORE.values())
    write = terminalreporter.write_line
    terminalreporter.section(f"top {min(top, len(rows))} tests by CPU (user + sys)")
    write(f"{'total':>8} {'own':>8} {'subproc':>8}  test")
    for nodeid, (own, kids) in rows[:top]:
        write(f"{own + kids:8.2f} {own:8.2f} {kids:8.2f}  {nodeid}")
    write(
        f"{len(rows)} tests: {own_sum + kids_sum:.1f} CPU s in tests ({own_sum:.1f} own, "
        f"{kids_sum:.1f} in subprocesses); imports and collection are not in this sum"
    )
