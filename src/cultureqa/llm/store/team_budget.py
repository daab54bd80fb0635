"""A process's side of a team budget: reserve on the server, wait for room, settle in batches.

:class:`TeamCap` is the :class:`cultureqa.core.spend.SharedCap` that a stage's budget
(:class:`cultureqa.core.spend.Budget`) delegates to when ``spend.team`` is set. The ledger itself
(:mod:`.pg_budget`) blocks on the database, so every call runs on one thread of its own, in
order: a reservation queued after a settlement sees it. Requests that want a reservation queue,
and each round reserves all of them in one transaction: one round trip per round, not per
request, and a stage waiting for room sends the server no storm of retries.

A reservation that does not fit because holds (of any machine) fill the room waits for the
next settlement of this process or :data:`TEAM_POLL_S`, then asks again: the holds of other
machines settle on their replies, and those of dead workers are released by the server's
locks (:mod:`.pg_budget`). Only when the team's spend alone leaves no room is it refused.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple, Protocol, TypeVar

log = logging.getLogger(__name__)


class Budget(Protocol):
    """What a team cap reads and moves on the process's budget (``core.spend.Budget``).

    A protocol, so that this module never imports ``spend`` (which opens the team budget):
    ``spend`` → ``pg_budget`` → here, and no way back.
    """

    KEY: str
    TEAM_KEY: str
    cap_usd: float | None
    spent_usd: float
    reserved_usd: float
    requests: int
    refused: int

    def settle(self, reserved_usd: float, cost_usd: float, requests: int = 1) -> None:
        """Replace a reservation by what the reply cost."""

    async def settled(self, timeout: float | None = None) -> None:
        """Wait for this process's next settlement."""


TEAM_POLL_S = 0.2
"""How long a request waits for other machines' holds to settle before asking again."""

_T = TypeVar("_T")


@dataclasses.dataclass(frozen=True)
class TeamState:
    """A team budget as the server saw it: spend per machine and the holds still open."""

    name: str
    cap_usd: float
    machines: Mapping[str, tuple[float, int]]
    """Machine → (USD spent, requests settled), most spent first."""
    held_usd: float
    in_flight: int

    @property
    def spent_usd(self) -> float:
        """What the team's settled requests cost."""
        return sum(spent for spent, _ in self.machines.values())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for the run record."""
        return {
            "name": self.name,
            "cap_usd": self.cap_usd,
            "spent_usd": self.spent_usd,
            "held_usd": self.held_usd,
            "in_flight": self.in_flight,
            "machines": {m: {"spent_usd": s, "requests": n} for m, (s, n) in self.machines.items()},
        }


class TeamGrant(NamedTuple):
    """A team reservation's outcome, and the holds of gone or expired workers it released."""

    granted: bool
    fits_later: bool
    """Refused for now only: open holds fill the room (wait for them to settle, ask again)."""
    state: TeamState
    released: Mapping[str, int]
    """Holds of other workers released by this transaction, by reason."""


class TeamLedger(Protocol):
    """The server's side (:class:`.pg_budget.PgTeamBudget`); its calls block on the database."""

    name: str

    def reserve_many(self, worst_usd: Sequence[float], cap_usd: float) -> list[TeamGrant]:
        """Hold each worst case of the team's cap in order, or say why not, in one transaction."""
        ...

    def settle(self, settlements: Sequence[tuple[float, float, int]]) -> None:
        """Replace holds by costs: (reserved, cost, requests sent) each."""
        ...

    def close(self) -> tuple[int, float]:
        """Drop this worker's hold: the reservations and USD it still held."""
        ...


class TeamCap:
    """A :class:`cultureqa.core.spend.SharedCap` on a :class:`TeamLedger`, with its counters."""

    def __init__(self, ledger: TeamLedger) -> None:
        self.ledger = ledger
        self.name = ledger.name
        self.refused = 0
        """Reservations the team cap refused (the team's spend left no room for them)."""
        self.waits = 0
        """Times a request waited for holds (on any machine) to settle before asking again."""
        self.released: dict[str, int] = {}
        """Holds of other workers this process released, by reason (worker gone, expired)."""
        self.released_at_end = 0
        """Reservations of this process still open when its stage ended (released, logged)."""
        self.seen: TeamState | None = None
        """The team budget as the refusal saw it (for the stop line)."""
        self.error: BaseException | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="team-budget")
        self._pending: list[tuple[float, float, int]] = []
        self._pending_lock = threading.Lock()
        self._flush_queued = False
        self._asks: list[tuple[float, asyncio.Future[bool]]] = []
        self._asker: asyncio.Task[None] | None = None
        self._closed = False

    async def reserve(self, budget: Budget, worst_usd: float) -> bool:
        """Hold ``worst_usd`` on the server; wait while holds fill the room; False: refused."""
        assert budget.cap_usd is not None
        if budget.refused or budget.spent_usd + worst_usd > budget.cap_usd:
            budget.refused += 1
            return False
        ask: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._asks.append((worst_usd, ask))
        if self._asker is None or self._asker.done():
            self._asker = asyncio.create_task(self._ask_all(budget))
        return await ask

    async def _ask_all(self, budget: Budget) -> None:
        """Reserve the queued requests, each round in one transaction, until none is left.

        Requests that arrive while a round runs go in the next; those that must wait for room
        stay first in the queue until a settlement (or :data:`TEAM_POLL_S`) lets them ask again.
        """
        assert budget.cap_usd is not None
        loop = asyncio.get_running_loop()
        while self._asks:
            batch, self._asks = [a for a in self._asks if not a[1].done()], []
            if budget.refused:  # the cap was reached: nothing more is sent (as a process cap)
                budget.refused += len(batch)
                _answer(batch, False)
                continue
            if not batch:
                continue
            worst = [w for w, _ in batch]
            try:
                grants = await loop.run_in_executor(self._thread, self._ask, worst, budget.cap_usd)
            except Exception as exc:  # the server failed: each waiting request gets the error
                for _, ask in batch:
                    if not ask.done():
                        ask.set_exception(exc)
                continue
            waiting = []
            for (w, ask), grant in zip(batch, grants, strict=True):
                if not self._take(budget, grant, w, wait=True):
                    waiting.append((w, ask))
                elif ask.done() and grant.granted:  # its request was cancelled meanwhile
                    budget.settle(w, 0.0, requests=0)
                elif not ask.done():
                    ask.set_result(grant.granted)
            if waiting:
                self.waits += 1
                self._asks = waiting + self._asks  # first come, first served
                await budget.settled(TEAM_POLL_S)

    def try_reserve(self, budget: Budget, worst_usd: float) -> bool:
        """Hold ``worst_usd`` now or refuse (a provider batch reserves all its lines at once)."""
        assert budget.cap_usd is not None
        if budget.refused:
            budget.refused += 1
            return False
        grant = self._on_thread(self._ask, [worst_usd], budget.cap_usd)[0]
        self._take(budget, grant, worst_usd, wait=False)
        return grant.granted

    def _ask(self, worst_usd: list[float], cap_usd: float) -> list[TeamGrant]:
        if self.error is not None:  # a settlement failed: the server's ledger is short
            raise self.error
        return self.ledger.reserve_many(worst_usd, cap_usd)

    def _take(self, budget: Budget, grant: TeamGrant, worst_usd: float, wait: bool) -> bool:
        """Count a reservation's outcome (on the loop's thread); True once it is decided."""
        for reason, count in grant.released.items():
            self.released[reason] = self.released.get(reason, 0) + count
        if grant.granted:
            budget.reserved_usd += worst_usd
            return True
        if grant.fits_later and wait:
            return False
        budget.refused += 1
        self.refused += 1
        self.seen = grant.state
        return True

    def settle(self, reserved_usd: float, cost_usd: float, requests: int) -> None:
        """Queue a settlement; one transaction takes those that arrived meanwhile."""
        with self._pending_lock:
            self._pending.append((reserved_usd, cost_usd, requests))
            if self._flush_queued or self._closed:
                return
            self._flush_queued = True
        self._thread.submit(self._flush)

    def _flush(self) -> None:
        with self._pending_lock:
            batch, self._pending, self._flush_queued = self._pending, [], False
        if not batch or self.error is not None:
            return
        try:
            self.ledger.settle(batch)
        except Exception as exc:  # the server went away: the next reservation (or close) says so
            self.error = exc

    def _on_thread(self, call: Callable[..., _T], *args: Any) -> _T:
        """Run ``call`` on the ledger's thread, after everything queued before it."""
        return self._thread.submit(call, *args).result()

    def close(self) -> None:
        """Send the last settlements, drop this process's hold (counted if it held any).

        A settlement the server did not take is raised here, so the stage fails with the
        server's error line instead of leaving the team's ledger short.
        """
        if self._closed:
            return
        try:
            self._on_thread(self._flush)
        finally:
            with self._pending_lock:
                self._closed = True
            try:
                left, usd = self._on_thread(self.ledger.close)
            finally:
                self._thread.shutdown(wait=True)
            self.released_at_end += left
            if left:
                log.warning(
                    "team budget %r: %d reservations ($%.4f) still open when the stage ended "
                    "were released",
                    self.name,
                    left,
                    usd,
                )
        if self.error is not None:
            raise self.error

    def message(self, budget: Budget, not_sent: int) -> str | None:
        """The team cap's stop line: who spent the team's money, and what to change."""
        team = self.seen
        if team is None or not self.refused:
            return None
        machines = ", ".join(
            f"{m} ${spent:.4f} ({n} requests)" for m, (spent, n) in team.machines.items()
        )
        held = f", ${team.held_usd:.4f} held by {team.in_flight} requests in flight"
        key, team_key = budget.KEY, budget.TEAM_KEY
        return (
            f"team budget reached: the team's requests cost ${team.spent_usd:.4f} of the "
            f"${team.cap_usd:g} team cap ({key} with {team_key}={team.name}, shared on the "
            f"PostgreSQL store){held if team.in_flight else ''}; spent by machine: "
            f"{machines or 'none'}; this run sent {budget.requests} requests for "
            f"${budget.spent_usd:.4f}; {not_sent} requests not sent (reason: budget); answers "
            f"so far are in the response store, so a rerun with a higher {key} (on every "
            f"machine) or another {team_key} sends only the rest"
        )

    def as_dict(self) -> dict[str, Any]:
        """The counters for the run record (``api.budget.team``)."""
        return {
            "name": self.name,
            "refused": self.refused,
            "waits": self.waits,
            "released": dict(self.released),
            "released_at_end": self.released_at_end,
            "seen": self.seen.as_dict() if self.seen else None,
        }


def _answer(asks: Sequence[tuple[float, asyncio.Future[bool]]], granted: bool) -> None:
    for _, ask in asks:
        if not ask.done():
            ask.set_result(granted)
