"""``cultureqa --help`` and every subcommand's help are plain text: no reST markup.

The help texts come from docstrings written for the API docs (``x``, :func:`x`); argparse prints
them verbatim, so a reader would see the markup.
"""

from __future__ import annotations

import argparse
import re

from cultureqa.cli import _parser

MARKUP = re.compile(r"``|:(func|mod|class|meth|data|attr):`")


def _helps(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, str]]:
    found = [(path, parser.format_help())]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _helps(sub, f"{path} {name}")
    return found


def test_no_help_text_shows_rest_markup() -> None:
    helps = _helps(_parser(), "cultureqa")
    assert len(helps) > 15  # every subcommand and verb was reached
    marked = [path for path, text in helps if MARKUP.search(text)]
    assert marked == []
    assert "The cultureqa command" in helps[0][1]
