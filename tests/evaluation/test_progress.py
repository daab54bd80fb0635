"""The progress bar counts every step once and is built only when a reply arrives."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from cultureqa.evaluation.progress import Progress


def reply(status: str = "ok", tokens: tuple[int, int] = (3, 2), cost: float = 0.5) -> object:
    usage = SimpleNamespace(prompt_tokens=tokens[0], completion_tokens=tokens[1], cost_usd=cost)
    return SimpleNamespace(status=status, usage=usage)


def test_skips_before_the_first_reply_are_the_bars_starting_count() -> None:
    bar = Progress(10, "synthetic/m", enabled=True)
    assert bar.hook is not None
    bar.skip(3)
    assert bar._bar is None  # nothing shown before a reply arrives
    bar.hook([reply(), reply(status="error")])
    assert bar._bar is not None and bar._bar.n == 5
    bar.skip(1)
    bar.hook([reply()])
    assert (bar._bar.n, bar.done, bar.errors, bar.tokens) == (7, 7, 1, 15)
    assert bar._bar.postfix is not None and "cost=$1.5000" in bar._bar.postfix
    bar.close()


def test_the_bar_routes_log_lines_above_itself_and_restores_the_handlers() -> None:
    root = logging.getLogger()
    handler = logging.StreamHandler()
    root.addHandler(handler)
    try:
        bar = Progress(2, "x", enabled=True)
        bar.hook([reply()])  # type: ignore[misc]
        assert handler not in root.handlers  # tqdm's handler stands in while the bar shows
        bar.close()
        assert handler in root.handlers
    finally:
        root.removeHandler(handler)


def test_a_bar_with_no_reply_still_shows_its_count_at_the_end(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bar = Progress(4, "all skipped", enabled=True)
    bar.skip(4)
    assert bar._bar is None
    bar.close()
    err = capsys.readouterr().err
    assert "all skipped" in err and "4/4" in err


def test_a_disabled_bar_has_no_hook_and_is_never_built() -> None:
    bar = Progress(4, "x", enabled=False)
    assert bar.hook is None
    bar.skip(2)
    bar.close()
    assert bar._bar is None and bar.done == 2
