"""Scripted panel judges for the fake OpenAI-compatible server (both two-hop builds' tests)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from cultureqa.regions.judges.judging import CRITERIA

Votes = Mapping[tuple[str, str, str], Mapping[str, str | None]]


def field(text: str, label: str) -> str:
    """The value of a ``Label: value`` line of a prompt ('' when absent)."""
    found = re.search(rf"^{re.escape(label)}:\s*(.*)$", text, re.MULTILINE)
    return found.group(1).strip() if found else ""


def panel_responder(
    name: str, label: str, votes: Votes, default: Mapping[str, str]
) -> Callable[[list[dict[str, Any]]], str]:
    """Judge ``name``: the category ``votes`` gives (region, clue type, language) or its default.

    ``label`` is the prompt line naming the intended region; a category of None is a reply
    without JSON (malformed).
    """

    def respond(messages: list[dict[str, Any]]) -> str:
        user = messages[-1]["content"]
        key = (field(user, label), field(user, "Clue type"), field(user, "Language"))
        category = votes.get(key, {}).get(name, default[name])
        if category is None:
            return "I would rate this item highly, but I cannot produce JSON today."
        return json.dumps(
            {"scores": dict.fromkeys(CRITERIA, 2), "category": category, "rationale": "ok"}
        )

    return respond


def start_servers(
    generator: Callable[[list[dict[str, Any]]], str],
    label: str,
    votes: Votes,
    default: Mapping[str, str],
) -> dict[str, Any]:
    """A started fake server for the generator (``gen``) and one per panel judge."""
    from cultureqa.testing import FakeOpenAIServer

    servers = {"gen": FakeOpenAIServer(generator).start()}
    for name in default:
        servers[name] = FakeOpenAIServer(panel_responder(name, label, votes, default)).start()
    return servers
