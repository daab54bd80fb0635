"""Spend once, stop early, say why: the block every model-calling stage shares (issue 16).

Each stage that can send a request wraps its model work in one of two guards, both built on
:func:`cultureqa.core.runlock.stage_guard` (output lock, parent watchdog, graceful stop):

- evaluation stages (``evaluate``, ``mocqa_evaluate``, ``cases_evaluate``) get their counters
  in the engine's run record and end through :func:`cultureqa.evaluation.engine.exit_code`: a
  tripped circuit breaker is one ``error:`` line with rc 2, naming the cause, instead of the
  generic error-share line;
- build stages (``cases_construct``, the ID-MoCQA build and hop stages) call models in several
  places (generator revisions, judge panels, repairs, three hop conditions). Every client they
  close is recorded in :data:`LEDGER`; :func:`build_guard` writes the ledger to the run log
  (``.runlog/<outputs>/api.json``, volatile like ``model_calls``) whether the stage succeeds or
  not, and a tripped breaker raises :class:`ApiStopped` (rc 2 through ``run_stage``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from cultureqa.core.errors import ConfigTypeError
from cultureqa.core.io import write_json
from cultureqa.core.params_tree import lookup
from cultureqa.core.runlock import LockInfo, stage_guard
from cultureqa.core.runlog import runlog_dir

log = logging.getLogger(__name__)

API_LOG = "api.json"
"""The build stages' run-log file: model calls and API counters of the last run."""


BUDGET_REASON = "budget"
"""What follows ``not sent: `` in the answer of a request the budget held back."""


class CountedClient(Protocol):
    """What the ledger reads from a closed client (``llm.cached.CachedClient``).

    Named here as a protocol so this module, below ``llm/``, never imports it.
    """

    @property
    def calls(self) -> int:
        """Requests sent."""
        ...

    @property
    def stats(self) -> Any:
        """The cache layer's counters (a dataclass)."""
        ...

    @property
    def inner(self) -> Any:
        """The wrapped client (its ``stats.as_dict()`` for API clients)."""
        ...

    @property
    def budget_stopped(self) -> str | None:
        """The budget's stop message, once the client held requests back for it."""
        ...


class ApiStopped(RuntimeError):
    """The circuit breaker opened: the provider refuses every request (a user error: rc 2)."""


class SharedCap(Protocol):
    """A cap shared beyond this process (``llm.store.team_budget.TeamCap``, ``spend.team``).

    :class:`Budget` hands it each reservation and settlement; it keeps the budget's own
    counters (``reserved_usd``, ``refused``) as the process cap does, and adds its own.
    """

    async def reserve(self, budget: Budget, worst_usd: float) -> bool:
        """:meth:`Budget.reserve` against the shared cap."""
        ...

    def try_reserve(self, budget: Budget, worst_usd: float) -> bool:
        """:meth:`Budget.try_reserve` against the shared cap."""
        ...

    def settle(self, reserved_usd: float, cost_usd: float, requests: int) -> None:
        """Pass a settlement on to the shared ledger."""
        ...

    def close(self) -> None:
        """End the stage run: last settlements sent, this process's hold dropped."""
        ...

    def message(self, budget: Budget, not_sent: int) -> str | None:
        """The stop line when the shared cap refused (None: it did not)."""
        ...

    def as_dict(self) -> dict[str, Any]:
        """Its counters, for the run record."""
        ...


class Budget:
    """What this process's sent requests cost, against an optional cap (USD), never past it.

    The cap bounds one stage run (one process): answers from the response store cost nothing
    and are not counted, so a rerun with a higher cap pays only for what the store lacks.
    Before a request leaves, the client *reserves* its worst case (prompt tokens bounded from
    above at the input price plus ``max_tokens`` at the output price, :mod:`cultureqa.llm.pricing`);
    on the reply the reservation is replaced by the reply's real cost. Reservations never make
    ``spent + reserved`` pass the cap, so the spend cannot pass it at any concurrency: a request
    that would overdraw waits while others are in flight (their unused reservations come back)
    and is refused once it cannot fit even with nothing in flight. After the first refusal the
    stage sends nothing more (``not sent: budget``; a rerun with a higher cap sends the rest).

    With a :class:`SharedCap` (``spend.team`` on the PostgreSQL store) the same rules hold for
    a team: reservations and settlements go through the server, so the cap bounds the spend of
    every machine that charges the budget together (``docs/team.md``).

    One event loop thread uses it at a time (every client of a stage runs in one loop).
    """

    KEY = "spend.budget_usd"
    TEAM_KEY = "spend.team"

    def __init__(self) -> None:
        self.reset(None)

    def reset(self, cap_usd: float | None, team: SharedCap | None = None) -> None:
        """Start a stage run: nothing spent or reserved yet, under ``cap_usd`` (None: no cap).

        ``team``: the shared cap that ``cap_usd`` then is (closed by :meth:`close`).
        """
        self.team = team
        self.cap_usd = cap_usd
        self.spent_usd = 0.0
        self.reserved_usd = 0.0
        self.requests = 0
        self.refused = 0
        """Requests whose worst case did not fit under the cap (they were not sent)."""
        self.over_estimate = 0
        """Replies that cost more than their reservation: the bound failed (reported, never 0
        unless the provider billed beyond ``max_tokens``)."""
        self.worst_usd = 0.0
        """The largest worst case a request asked to reserve (how far below the cap it stops)."""
        self.unaffordable_usd = 0.0
        """The largest worst case above the cap by itself: such a request can never be sent."""
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def capped(self) -> bool:
        """Whether a cap is set (only then do clients price requests before sending)."""
        return self.cap_usd is not None

    async def reserve(self, worst_usd: float) -> bool:
        """Hold ``worst_usd`` of the cap for one request; False: it must not be sent.

        Waits while requests in flight hold the room it needs; refuses once the cap is reached
        or the request cannot fit even when nothing else is in flight.
        """
        if self.cap_usd is None:
            return True
        self._note(worst_usd)
        if self.team is not None:
            return await self.team.reserve(self, worst_usd)
        while True:
            if self.refused or self.spent_usd + worst_usd > self.cap_usd:
                self.refused += 1
                return False
            if self.spent_usd + self.reserved_usd + worst_usd <= self.cap_usd:
                self.reserved_usd += worst_usd
                return True
            await self.settled()

    async def settled(self, timeout: float | None = None) -> None:
        """Wait for this process's next settlement (at most ``timeout`` seconds)."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiter, timeout)

    def try_reserve(self, worst_usd: float) -> bool:
        """:meth:`reserve` without waiting (one provider batch reserves all its lines at once)."""
        if self.cap_usd is None:
            return True
        self._note(worst_usd)
        if self.team is not None:
            return self.team.try_reserve(self, worst_usd)
        if self.refused or self.spent_usd + self.reserved_usd + worst_usd > self.cap_usd:
            self.refused += 1
            return False
        self.reserved_usd += worst_usd
        return True

    def _note(self, worst_usd: float) -> None:
        self.worst_usd = max(self.worst_usd, worst_usd)
        if self.cap_usd is not None and worst_usd > self.cap_usd:
            self.unaffordable_usd = max(self.unaffordable_usd, worst_usd)

    def settle(self, reserved_usd: float, cost_usd: float, requests: int = 1) -> None:
        """Replace a reservation by what the reply cost (0 for a failed, unbilled request)."""
        if self.cap_usd is not None:
            self.reserved_usd = max(0.0, self.reserved_usd - reserved_usd)
            self.over_estimate += int(cost_usd > reserved_usd + 1e-12)
            if self.team is not None:
                self.team.settle(reserved_usd, cost_usd, requests)
        self.spent_usd += cost_usd
        self.requests += requests
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def close(self) -> None:
        """End a stage run: the shared cap's last settlements and hold (nothing for a local one)."""
        if self.team is not None:
            self.team.close()

    @property
    def exhausted(self) -> bool:
        """Whether the cap is set and a request was refused: nothing more may be sent."""
        return self.cap_usd is not None and (self.refused > 0 or self.spent_usd >= self.cap_usd)

    def message(self, not_sent: int) -> str:
        """The one-line stop reason: cap, spend, what was held back, how to go on.

        A cap below one request's worst case is said as such: "budget reached … $0.0000" would
        read as if the budget had been spent.
        """
        if self.unaffordable_usd and not self.requests:
            worst = f"${self.unaffordable_usd:.4f}"
            return (
                f"one request can cost up to {worst} (its prompt, bounded from above, plus "
                f"max_tokens, at the model's price), above the ${self.cap_usd:g} cap "
                f"({self.KEY}), so none was sent: {not_sent} requests not sent (reason: budget); "
                f"raise {self.KEY} above {worst}, or lower the model's decoding.max_tokens or "
                "the prompt's length"
            )
        if self.team is not None and (line := self.team.message(self, not_sent)) is not None:
            return line
        return (
            f"budget reached: {self.requests} requests sent by this run cost "
            f"${self.spent_usd:.4f} of the ${self.cap_usd:g} cap ({self.KEY}); {not_sent} "
            f"requests not sent (reason: budget); answers so far are in the response store, so "
            f"a rerun with a higher {self.KEY} sends only the rest"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready state for the run record."""
        out: dict[str, Any] = {
            "cap_usd": self.cap_usd,
            "spent_usd": self.spent_usd,
            "requests": self.requests,
            "refused": self.refused,
            "over_estimate": self.over_estimate,
            "worst_usd": self.worst_usd,
            "unaffordable_usd": self.unaffordable_usd,
        }
        if self.team is not None:
            out["team"] = self.team.as_dict()
        return out


BUDGET = Budget()
"""This process's budget; :func:`guard` sets its cap when a stage starts."""


def budget_from(params: Any) -> float | None:
    """``spend.budget_usd`` from params: None (no cap) or a non-negative number of USD."""
    value = lookup(params, Budget.KEY)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigTypeError(
            f"params.yaml: '{Budget.KEY}' must be null or a non-negative number of USD, "
            f"got {value!r}"
        )
    return float(value)


def team_from(params: Any) -> str | None:
    """``spend.team`` from params: the name of a budget shared on the PostgreSQL store, or None.

    Set, it makes ``spend.budget_usd`` the cap of every machine and run that charges this name
    together (so it needs a cap); each name is a budget of its own (a sweep, a month).
    """
    value = lookup(params, Budget.TEAM_KEY)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigTypeError(
            f"params.yaml: '{Budget.TEAM_KEY}' must be null or a budget name, got {value!r}"
        )
    if budget_from(params) is None:
        raise ConfigTypeError(
            f"params.yaml: '{Budget.TEAM_KEY}' is {value!r} but '{Budget.KEY}' is null: a team "
            f"budget needs a cap; set {Budget.KEY} (USD for the whole team) or "
            f"{Budget.TEAM_KEY} to null"
        )
    return value.strip()


def api_stats(client: CountedClient) -> dict[str, Any]:
    """The cache layer's and (for API backends) the HTTP client's counters, JSON-ready."""
    stats: dict[str, Any] = {"calls": client.calls, "cache": dataclasses.asdict(client.stats)}
    inner = getattr(client.inner, "stats", None)
    if inner is not None and hasattr(inner, "as_dict"):
        stats["client"] = inner.as_dict()
    if BUDGET.cap_usd is not None:
        stats["budget"] = {**BUDGET.as_dict(), "stopped": client.budget_stopped}
    return stats


def stopped_reason(api: Mapping[str, Any]) -> str | None:
    """Why a client stopped sending, from one client's counters or a ledger of several."""
    client = api.get("client")
    if isinstance(client, Mapping) and client.get("stopped"):
        return str(client["stopped"])
    budget = api.get("budget")
    if isinstance(budget, Mapping) and budget.get("stopped"):
        return str(budget["stopped"])
    for value in api.values():
        if isinstance(value, Mapping) and "cache" in value and (found := stopped_reason(value)):
            return found
    return None


def _add(total: dict[str, Any], more: Mapping[str, Any]) -> None:
    """Sum counters key by key (nested counts too); keep the first stop reason."""
    for key, value in more.items():
        if isinstance(value, Mapping):
            _add(total.setdefault(key, {}), value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value
        elif total.get(key) is None:
            total[key] = value


class ApiLedger:
    """Counters of every client a stage closed, summed per job name (one stage, one process)."""

    def __init__(self) -> None:
        self.jobs: dict[str, dict[str, Any]] = {}

    def clear(self) -> None:
        """Start a stage: forget clients of an earlier stage run in this process (tests)."""
        self.jobs.clear()

    def record(self, name: str, client: CountedClient) -> None:
        """Add a closed client's counters under ``name`` (a model id or a job such as a judge)."""
        _add(self.jobs.setdefault(name, {}), api_stats(client))

    @property
    def calls(self) -> int:
        """Requests sent to models (HTTP requests for API models; 0 on a fully cached rerun)."""
        return sum(int(job.get("calls", 0)) for job in self.jobs.values())

    @property
    def stopped(self) -> str | None:
        """The first stop reason any recorded client gave."""
        return stopped_reason(self.jobs)

    def raise_if_stopped(self) -> None:
        """Stop the stage at once when a breaker opened: later steps would only get errors."""
        if (reason := self.stopped) is not None:
            raise ApiStopped(reason)


LEDGER = ApiLedger()
"""This process's ledger; :func:`build_guard` clears it when a stage starts."""


@contextlib.contextmanager
def guard(
    out_dir: Path,
    budget_usd: float | None = None,
    store: Path | str | None = None,
    team: str | None = None,
) -> Iterator[LockInfo]:
    """:func:`stage_guard` on ``out_dir`` (lock beside it); sets the budget cap.

    ``store`` is the response store the stage uses (default: the project's), named in the lock.
    ``team`` (``spend.team``) shares the cap with every machine on that store (PostgreSQL only);
    the team hold of this process is dropped when the stage ends, however it ends.
    """
    from cultureqa.llm.store import store_location  # cultureqa.llm imports this module

    location = store or store_location()
    BUDGET.reset(budget_usd)
    with stage_guard(out_dir, location) as lock:
        if team is not None and budget_usd is not None:
            from cultureqa.llm.store.pg_budget import open_team_budget

            BUDGET.reset(budget_usd, open_team_budget(location, team, budget_usd))
        try:
            yield lock
        except BaseException:
            try:
                BUDGET.close()
            except Exception as exc:  # the stage's own error is the one to report
                log.warning("team budget not closed cleanly: %s", exc)
            raise
        BUDGET.close()


@contextlib.contextmanager
def build_guard(
    out_dir: Path, budget_usd: float | None = None, team: str | None = None
) -> Iterator[LockInfo]:
    """Guard a build stage; record its API counters in the run log and fail on a tripped breaker.

    The counters are written even when the stage fails, so a run stopped by the breaker still
    says how many requests it sent and why it stopped.
    """
    LEDGER.clear()
    with guard(out_dir, budget_usd, team=team) as lock:
        try:
            yield lock
        finally:
            record = {
                "model_calls": LEDGER.calls,
                "api": LEDGER.jobs,
                "lock_taken_over_from_pid": lock.took_over_from,
            }
            write_json(runlog_dir(out_dir) / API_LOG, record)
        LEDGER.raise_if_stopped()
