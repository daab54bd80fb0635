"""The event loop every model call runs on: uvloop's (libuv), not asyncio's default.

A stage's client is bound by its own CPU at high concurrency: at 4,000 requests × 256 in flight
the event loop and aiohttp are most of it (``bench/eval_throughput.py``). uvloop runs the same
asyncio code with the loop itself in C, which cut the evaluate stage's client CPU per request by
about 14 % there (``docs/measured.md``, "The event loop"). Every ``asyncio.run`` of model calls
goes through :func:`run`, so one loop serves evaluation and the build stages alike.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

import uvloop

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to completion on a new uvloop event loop, as ``asyncio.run`` does."""
    return uvloop.run(main)
