"""The evaluation's progress bar, built at the first reply so tqdm stays off the first request.

tqdm's import asks ``importlib.metadata`` for its own version (about 0.04 CPU s) and the bar
has nothing to show before a reply arrives, so the bar and tqdm's logging redirect are made
when the first replies (or the run's end) reach :meth:`Progress.advance`: the stage's path to
its first request imports neither (``tests/evaluation/test_request_path_imports.py``). Steps
counted before then (skipped settings) are the bar's starting count. A disabled bar
(``evaluate.progress: false``) never imports tqdm and gets no per-reply hook: formatting a
postfix per reply that nobody sees cost 0.02 ms of CPU per request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdm import tqdm


class Progress:
    """Counts replies, errors, tokens and cost; shows them on a tqdm bar when enabled."""

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        self.total = total
        self.label = label
        self.enabled = enabled
        self.done = 0
        """Steps counted so far (replies and skipped requests), shown or not."""
        self.errors = 0
        self.tokens = 0
        self.cost = 0.0
        self._bar: tqdm | None = None  # type: ignore[type-arg]
        self._redirect = ExitStack()

    @property
    def hook(self) -> Callable[[Sequence[Any]], None] | None:
        """The client's ``on_progress``: :meth:`replies` when the bar shows, else none."""
        return self.replies if self.enabled else None

    def skip(self, requests: int) -> None:
        """Count requests that a skipped setting never sends."""
        self.done += requests
        if self._bar is not None:
            self._bar.update(requests)

    def replies(self, responses: Sequence[Any]) -> None:
        """Advance by a batch of replies; the postfix shows errors, tokens and cost so far.

        The postfix is set without a redraw of its own: ``update`` redraws at tqdm's refresh
        rate, showing it.
        """
        for r in responses:
            self.errors += int(getattr(r, "status", "ok") != "ok")
            usage = getattr(r, "usage", None)
            if usage is not None:
                self.tokens += usage.prompt_tokens + usage.completion_tokens
                self.cost += usage.cost_usd
        bar = self._bar if self._bar is not None else self._open()
        self.done += len(responses)
        bar.set_postfix(
            errors=self.errors, tokens=self.tokens, cost=f"${self.cost:.4f}", refresh=False
        )
        bar.update(len(responses))

    def _open(self) -> tqdm:  # type: ignore[type-arg]
        """Import tqdm, route log lines above the bar, and start it at the steps counted before."""
        from tqdm import tqdm
        from tqdm.contrib.logging import logging_redirect_tqdm

        self._redirect.enter_context(logging_redirect_tqdm())
        self._bar = tqdm(total=self.total, desc=self.label, unit="req", initial=self.done)
        return self._bar

    def close(self) -> None:
        """Show the final count (a bar with no reply at all too) and restore the log handlers."""
        try:
            if self.enabled:
                bar = self._bar if self._bar is not None else self._open()
                bar.close()
        finally:
            self._redirect.close()
