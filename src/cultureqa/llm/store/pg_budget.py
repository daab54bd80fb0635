"""A budget cap shared by a team on the PostgreSQL response store (issue 32).

The in-process :class:`cultureqa.core.spend.Budget` bounds one stage run; with ``spend.team`` set
and the store on PostgreSQL, every reservation (a request's worst case, before it leaves) and
every settlement (the reply's real cost) goes through the server instead, so the team's spend
plus its open reservations never pass ``spend.budget_usd`` on any number of machines.

The server's own locking does the work: each budget is a row of ``budgets`` that a reservation
or settlement locks for its transaction (``SELECT … FOR UPDATE``), so two machines never both
see the same room. Open reservations are one row per worker connection (``budget_holds``,
amount and count), carrying the number of the session advisory lock that connection holds:
the server drops that lock when the worker dies (``kill -9``, a crash) and the next
reservation by anyone releases the dead worker's hold at once; a worker whose connection the
server still sees but that stopped renewing (a machine cut off the network) loses its hold at
its expiry, by the server's clock (:data:`HOLD_TTL_S`). Each such release is logged with its
reason in ``budget_releases``, and spend is kept per machine (``budget_machines``), so a
refusal can say who spent the team's money.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from cultureqa.core.errors import ConfigTypeError, TeamCapMismatch
from cultureqa.llm.store import IDLE_IN_TRANSACTION_S, StoreLocation, machine_name, shown
from cultureqa.llm.store.pg import ensure_schema
from cultureqa.llm.store.team_budget import TeamCap, TeamGrant, TeamState

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS budgets (
        name TEXT PRIMARY KEY,
        created DOUBLE PRECISION NOT NULL,
        cap_usd DOUBLE PRECISION)""",
    """CREATE TABLE IF NOT EXISTS budget_machines (
        budget TEXT NOT NULL,
        machine TEXT NOT NULL,
        spent_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
        requests BIGINT NOT NULL DEFAULT 0,
        refused BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (budget, machine))""",
    """CREATE TABLE IF NOT EXISTS budget_holds (
        budget TEXT NOT NULL,
        session BIGINT NOT NULL,
        machine TEXT NOT NULL,
        pid INTEGER NOT NULL,
        amount_usd DOUBLE PRECISION NOT NULL,
        requests INTEGER NOT NULL,
        expires DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (budget, session))""",
    """CREATE TABLE IF NOT EXISTS budget_releases (
        id BIGSERIAL PRIMARY KEY,
        budget TEXT NOT NULL,
        machine TEXT NOT NULL,
        pid INTEGER NOT NULL,
        amount_usd DOUBLE PRECISION NOT NULL,
        requests INTEGER NOT NULL,
        reason TEXT NOT NULL,
        released_by TEXT NOT NULL,
        created DOUBLE PRECISION NOT NULL)""",
)
_RELATIONS = ("budgets", "budget_machines", "budget_holds", "budget_releases")
HOLD_TTL_S = float(os.environ.get("CULTUREQA_HOLD_TTL_S") or 900.0)
"""How long a hold outlives its worker's last reservation or settlement: longer than any one
request (timeout × attempts plus backoff), since holds have no heartbeat of their own. Only a
worker frozen or cut off with requests in flight keeps its hold this long, and it delays others
only while the team's remaining room is held. ``CULTUREQA_HOLD_TTL_S`` changes it."""

_SCHEMA_LOCK = 0x43515142  # "CQQB": the budget tables are created once
_NOW = "extract(epoch from clock_timestamp())"

GONE = "worker gone"
"""Release reason: the hold's connection ended (its session advisory lock is free)."""
EXPIRED = "expired"
"""Release reason: its worker stopped renewing it (a machine cut off the network)."""
ENDED = "stage ended"
"""Release reason: the stage ended with requests neither answered nor settled (interrupted)."""


class PgTeamBudget:
    """One worker's view of a team budget: its own connection, hold and session lock.

    Used from one thread at a time (:class:`cultureqa.core.spend.Budget` calls it on its own worker
    thread); the connection is not the store's, so budget round trips never queue behind the
    store's writes.
    """

    def __init__(self, url: str, name: str, cap_usd: float) -> None:
        self.name = name
        self.url = url
        self.machine = machine_name()
        self._conn = psycopg.connect(
            url,
            autocommit=True,
            connect_timeout=10,
            application_name=f"cultureqa budget {self.machine} {os.getpid()}",
        )
        self._conn.execute(  # a frozen machine's open hold must not lock the team out
            "SELECT set_config('idle_in_transaction_session_timeout', %s, false)",
            (str(int(IDLE_IN_TRANSACTION_S * 1000)),),
        )
        self._session = secrets.randbits(62)
        self._conn.execute("SELECT pg_advisory_lock(%s)", (self._session,))
        ensure_schema(self._conn, _SCHEMA_LOCK, _SCHEMA, _RELATIONS)
        _add_cap_column(self._conn)
        self.cap_usd = self._record_cap(cap_usd)

    def _record_cap(self, cap_usd: float) -> float:
        """The budget's cap: recorded by its first run, refused when this run's differs.

        Two machines under one name with two caps would each check its own cap against the
        team's spend: the larger one wins silently (measured: $0.25 spent under a $0.05 cap).
        A budget made before caps were recorded takes the cap of the first run that opens it.
        """
        with self._conn.transaction():
            self._conn.execute(
                "INSERT INTO budgets(name, created, cap_usd) VALUES (%s, %s, %s) "
                "ON CONFLICT (name) DO UPDATE SET cap_usd = excluded.cap_usd "
                "WHERE budgets.cap_usd IS NULL",
                (self.name, time.time(), cap_usd),
            )
            row = self._conn.execute(
                "SELECT cap_usd FROM budgets WHERE name = %s", (self.name,)
            ).fetchone()
        recorded = float(row[0]) if row and row[0] is not None else cap_usd
        if abs(recorded - cap_usd) > 1e-9:
            self._conn.close()
            raise TeamCapMismatch(
                f"spend.team={self.name!r}: spend.budget_usd is {cap_usd:g} here but the team "
                f"budget was created with a cap of {recorded:g} on {shown(self.url)}; set "
                f"spend.budget_usd={recorded:g} on every machine, or start a new budget with "
                "another spend.team (no request was sent)"
            )
        return recorded

    def __repr__(self) -> str:
        return f"PgTeamBudget({shown(self.url)!r}, {self.name!r})"

    def reserve(self, worst_usd: float, cap_usd: float) -> TeamGrant:
        """Hold ``worst_usd`` for one request if the team's spend and holds leave room."""
        return self.reserve_many([worst_usd], cap_usd)[0]

    def reserve_many(self, worst_usd: Sequence[float], cap_usd: float) -> list[TeamGrant]:
        """Hold each request's worst case, in order, in one transaction (one round's queue).

        A request is refused for good (``fits_later`` False, counted on this machine's row)
        once the team's spend alone leaves no room for it, and so is every one after it (the
        stage stops sending); while open holds fill the room it and those after it wait for a
        settlement and ask again (first come, first served: a small one never overtakes).
        """
        with self._conn.transaction(), self._conn.cursor() as cur:
            released = self._lock_and_expire(cur)
            state = self._state(cur, cap_usd)
            held, granted, refused = state.held_usd, 0, 0
            verdicts: list[tuple[bool, bool]] = []
            for worst in worst_usd:
                if refused or state.spent_usd + worst > cap_usd:
                    refused += 1
                    verdicts.append((False, False))
                elif len(verdicts) > granted or state.spent_usd + held + worst > cap_usd:
                    verdicts.append((False, True))
                else:
                    held += worst
                    granted += 1
                    verdicts.append((True, True))
            if granted:
                cur.execute(
                    "INSERT INTO budget_holds(budget, session, machine, pid, amount_usd, "
                    f"requests, expires) VALUES (%s, %s, %s, %s, %s, %s, {_NOW} + %s) "
                    "ON CONFLICT (budget, session) DO UPDATE SET "
                    "amount_usd = budget_holds.amount_usd + excluded.amount_usd, "
                    "requests = budget_holds.requests + excluded.requests, "
                    "expires = excluded.expires",
                    (
                        self.name,
                        self._session,
                        self.machine,
                        os.getpid(),
                        held - state.held_usd,
                        granted,
                        HOLD_TTL_S,
                    ),
                )
            if refused:
                self._machine_row(cur, refused=refused)
        seen = dataclasses.replace(state, held_usd=held, in_flight=state.in_flight + granted)
        return [
            TeamGrant(ok, later, seen, released if i == 0 else {})
            for i, (ok, later) in enumerate(verdicts)
        ]

    def settle(self, settlements: Sequence[tuple[float, float, int]]) -> None:
        """Replace holds by costs: (reserved, cost, requests sent) each, in one transaction."""
        if not settlements:
            return
        reserved = sum(s[0] for s in settlements)
        cost = sum(s[1] for s in settlements)
        sent = sum(s[2] for s in settlements)
        closed = len(settlements)  # a provider batch's failure settles its lines at once
        with self._conn.transaction(), self._conn.cursor() as cur:
            cur.execute("SELECT 1 FROM budgets WHERE name = %s FOR UPDATE", (self.name,))
            cur.execute(
                "UPDATE budget_holds SET amount_usd = greatest(0, amount_usd - %s), "
                "requests = CASE WHEN amount_usd - %s <= 1e-12 THEN 0 "
                f"ELSE greatest(0, requests - %s) END, expires = {_NOW} + %s "
                "WHERE budget = %s AND session = %s",
                (reserved, reserved, closed, HOLD_TTL_S, self.name, self._session),
            )
            self._machine_row(cur, spent=cost, requests=sent)

    def state(self, cap_usd: float) -> TeamState:
        """The team's spend per machine and its open holds now."""
        with self._conn.transaction(), self._conn.cursor() as cur:
            return self._state(cur, cap_usd)

    def close(self) -> tuple[int, float]:
        """Drop this worker's hold; returns the reservations and USD it still held (logged)."""
        if self._conn.closed or self._conn.broken:
            return 0, 0.0
        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                cur.execute("SELECT 1 FROM budgets WHERE name = %s FOR UPDATE", (self.name,))
                cur.execute(
                    "DELETE FROM budget_holds WHERE budget = %s AND session = %s "
                    "RETURNING machine, pid, amount_usd, requests",
                    (self.name, self._session),
                )
                rows = cur.fetchall()
                left = [r for r in rows if r[3] > 0 or r[2] > 0]
                self._log_releases(cur, [(*r, ENDED) for r in left])
                return sum(int(r[3]) for r in left), sum(float(r[2]) for r in left)
        finally:
            self._conn.close()

    # -- inside a transaction ----------------------------------------------------------------

    def _lock_and_expire(self, cur: psycopg.Cursor[Any]) -> dict[str, int]:
        """Lock the budget row; release holds of workers that are gone or expired.

        A hold whose session lock this transaction can take belongs to a connection that ended
        (the lock is then ours until commit, like the store's lease take-over).
        """
        cur.execute("SELECT 1 FROM budgets WHERE name = %s FOR UPDATE", (self.name,))
        cur.execute(
            f"SELECT session, machine, pid, amount_usd, requests, expires < {_NOW} "
            "FROM budget_holds WHERE budget = %s AND session <> %s",
            (self.name, self._session),
        )
        rows = cur.fetchall()
        if not rows:
            return {}
        alive = sorted({r[0] for r in rows if not r[5]})
        gone: set[int] = set()
        if alive:
            cur.execute(
                "SELECT s FROM unnest(%s::bigint[]) AS s WHERE pg_try_advisory_xact_lock(s)",
                (alive,),
            )
            gone = {r[0] for r in cur.fetchall()}
        out = [(r, GONE if r[0] in gone else EXPIRED) for r in rows if r[5] or r[0] in gone]
        if not out:
            return {}
        cur.execute(
            "DELETE FROM budget_holds WHERE budget = %s AND session = ANY(%s)",
            (self.name, [r[0] for r, _ in out]),
        )
        self._log_releases(cur, [(r[1], r[2], r[3], r[4], why) for r, why in out])
        counts: dict[str, int] = {}
        for _, why in out:
            counts[why] = counts.get(why, 0) + 1
        return counts

    def _log_releases(self, cur: psycopg.Cursor[Any], rows: Sequence[tuple[Any, ...]]) -> None:
        if rows:
            cur.executemany(
                "INSERT INTO budget_releases(budget, machine, pid, amount_usd, requests, reason, "
                "released_by, created) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                [(self.name, *r, self.machine, time.time()) for r in rows],
            )

    def _machine_row(
        self, cur: psycopg.Cursor[Any], spent: float = 0.0, requests: int = 0, refused: int = 0
    ) -> None:
        cur.execute(
            "INSERT INTO budget_machines(budget, machine, spent_usd, requests, refused) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (budget, machine) DO UPDATE SET "
            "spent_usd = budget_machines.spent_usd + excluded.spent_usd, "
            "requests = budget_machines.requests + excluded.requests, "
            "refused = budget_machines.refused + excluded.refused",
            (self.name, self.machine, spent, requests, refused),
        )

    def _state(self, cur: psycopg.Cursor[Any], cap_usd: float) -> TeamState:
        cur.execute(
            "SELECT machine, spent_usd, requests FROM budget_machines WHERE budget = %s "
            "ORDER BY spent_usd DESC, machine",
            (self.name,),
        )
        machines = {m: (float(s), int(n)) for m, s, n in cur.fetchall()}
        cur.execute(
            "SELECT COALESCE(SUM(amount_usd), 0), COALESCE(SUM(requests), 0) "
            "FROM budget_holds WHERE budget = %s",
            (self.name,),
        )
        row = cur.fetchone()
        held, in_flight = (float(row[0]), int(row[1])) if row else (0.0, 0)
        return TeamState(self.name, cap_usd, machines, held, in_flight)


def _add_cap_column(conn: psycopg.Connection[Any]) -> None:
    """Give a ``budgets`` table made before caps were recorded its ``cap_usd`` column.

    Checked before any DDL (``ALTER TABLE`` locks the table even when it changes nothing), and
    again under the schema lock, as :func:`ensure_schema` does.
    """
    query = (
        "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = 'budgets' AND column_name = 'cap_usd'"
    )
    if conn.execute(query).fetchone():
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        if not conn.execute(query).fetchone():
            conn.execute("ALTER TABLE budgets ADD COLUMN cap_usd DOUBLE PRECISION")


def open_team_budget(location: StoreLocation, name: str, cap_usd: float) -> TeamCap:
    """The team budget ``name`` on the store at ``location``; one line when it cannot be shared."""
    if not isinstance(location, str):
        raise ConfigTypeError(
            f"spend.team is {name!r} but the response store is SQLite ({shown(location)}: one "
            "machine): set CULTUREQA_STORE_URL=postgresql://… to share the cap with the team, "
            "or set spend.team to null for a cap per stage run"
        )
    return TeamCap(PgTeamBudget(location, name, cap_usd))
