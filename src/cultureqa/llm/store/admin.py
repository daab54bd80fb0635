"""``cultureqa store copy`` and ``cultureqa store report``: move a store, and audit its spend.

``copy`` moves every row of one store into another (SQLite → PostgreSQL when a team starts
sharing; either way round) and then reads both back key by key: it fails unless every source row
is in the target, an ok answer as the same payload. ``report`` reads the send log, the ledger
every backend writes in the transaction that stores an answer: requests per machine, and
*duplicates*, prompts whose ok answer was paid for more than once (0 when the leases held).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cultureqa.llm.store import RawRow, ResponseStore, Send, StoreLocation, open_store, shown


class CopyError(RuntimeError):
    """The target lacks a row of the source after the copy (nothing is deleted anywhere)."""


@dataclass
class CopyResult:
    """What a copy did, for its summary line."""

    rows: int = 0
    """Rows read from the source."""
    ok: int = 0
    errors: int = 0
    sends: int = 0
    """Send-log entries added to the target (entries it already had are not added again)."""
    target_before: int = 0
    target_after: int = 0


def open_existing(location: StoreLocation) -> ResponseStore:
    """Open a store that must exist already (a copy's source, a report's store)."""
    if isinstance(location, Path) and not location.is_file():
        raise FileNotFoundError(f"{location}: no response store there (no such file)")
    return open_store(location)


def copy_store(source: StoreLocation, target: StoreLocation, batch: int = 2000) -> CopyResult:
    """Copy every row and send of ``source`` into ``target``, then verify key by key.

    A row the target holds as ok is kept (an ok answer is never replaced, as in every write);
    an error row there is replaced by the source's row. Running the copy again adds nothing.
    """
    if shown(source) == shown(target):
        raise CopyError(f"{shown(source)}: source and target are the same store")
    result = CopyResult()
    with open_existing(source) as src, open_store(target) as dst:
        result.target_before = dst.count()
        chunk: list[RawRow] = []
        for row in src.rows(batch):
            result.rows += 1
            result.ok += row.status == "ok"
            result.errors += row.status != "ok"
            chunk.append(row)
            if len(chunk) >= batch:
                dst.add_raw(chunk)
                chunk = []
        have = Counter(dst.sends())
        new_sends: list[Send] = []
        for send in src.sends():
            if have[send] > 0:
                have[send] -= 1
                continue
            new_sends.append(send)
        dst.add_raw(chunk, new_sends)
        result.sends = len(new_sends)
        _verify(src.rows(batch), dst, source, target)
        result.target_after = dst.count()
    return result


def _verify(
    rows: Iterator[RawRow], dst: ResponseStore, source: StoreLocation, target: StoreLocation
) -> None:
    """Every source row is in the target; a source's ok answer is an ok answer there.

    The target's own ok answer to a key is kept (never replaced), so payloads may differ.
    """
    missing, differ = 0, 0
    first: str | None = None
    theirs = dst.rows()
    there = next(theirs, None)
    for row in rows:
        while there is not None and there.key < row.key:
            there = next(theirs, None)
        if there is None or there.key != row.key:
            missing += 1
            first = first or row.key
        elif row.status == "ok" and there.status != "ok":
            differ += 1
            first = first or row.key
    if missing or differ:
        raise CopyError(
            f"{shown(target)}: after the copy {missing} rows of {shown(source)} are missing "
            f"and {differ} ok answers are errors there (first key {first}); the source is unchanged"
        )


@dataclass
class MachineSpend:
    """One machine's line of the report."""

    requests: int = 0
    ok: int = 0
    errors: int = 0
    cost_usd: float = 0.0
    processes: int = 0


@dataclass
class Report:
    """Requests per machine and prompts paid twice, from a store's send log."""

    store: str
    prompts: int
    machines: dict[str, MachineSpend] = field(default_factory=dict)
    duplicates: int = 0
    """Ok answers sent beyond the first for their prompt (paid twice): must be 0."""
    duplicate_keys: list[str] = field(default_factory=list)
    leases: int = 0
    lost: int = 0
    """Prompts the log says were answered that have no row in the store (must be 0)."""

    @property
    def requests(self) -> int:
        """Requests logged on every machine together."""
        return sum(m.requests for m in self.machines.values())

    def as_dict(self) -> dict[str, object]:
        """JSON-ready (``--json``)."""
        return {**asdict(self), "requests": self.requests}


def report(location: StoreLocation) -> Report:
    """Read the send log of the store at ``location``."""
    with open_existing(location) as store:
        sends = list(store.sends())
        stored = {row.key for row in store.rows()}
        out = Report(shown(location), len(stored), leases=store.leases())
    ok_per_key: Counter[str] = Counter()
    pids: dict[str, set[int]] = defaultdict(set)
    for send in sends:
        line = out.machines.setdefault(send.machine, MachineSpend())
        line.requests += 1
        line.ok += send.status == "ok"
        line.errors += send.status != "ok"
        line.cost_usd += send.cost_usd
        pids[send.machine].add(send.pid)
        ok_per_key[send.key] += send.status == "ok"
    for machine, line in out.machines.items():
        line.processes = len(pids[machine])
    twice = sorted(k for k, n in ok_per_key.items() if n > 1)
    out.duplicates = sum(ok_per_key[k] - 1 for k in twice)
    out.duplicate_keys = twice[:10]
    out.lost = len(set(ok_per_key) - stored)
    return out


def render_report(rep: Report) -> str:
    """The report as an aligned table and a verdict line."""
    width = max([len("machine"), len("total"), *(len(m) for m in rep.machines)])
    lines = [
        f"store {rep.store}: {rep.prompts} prompts stored, {rep.leases} leases held now",
        f"{'machine':<{width}}  {'requests':>8}  {'ok':>8}  {'errors':>6}  {'procs':>5}  "
        f"{'cost_usd':>10}",
    ]
    for name in sorted(rep.machines):
        m = rep.machines[name]
        lines.append(
            f"{name:<{width}}  {m.requests:>8}  {m.ok:>8}  {m.errors:>6}  {m.processes:>5}  "
            f"{m.cost_usd:>10.4f}"
        )
    total = MachineSpend(
        rep.requests,
        sum(m.ok for m in rep.machines.values()),
        sum(m.errors for m in rep.machines.values()),
        sum(m.cost_usd for m in rep.machines.values()),
        sum(m.processes for m in rep.machines.values()),
    )
    lines.append(
        f"{'total':<{width}}  {total.requests:>8}  {total.ok:>8}  {total.errors:>6}  "
        f"{total.processes:>5}  {total.cost_usd:>10.4f}"
    )
    if rep.duplicates:
        lines.append(
            f"duplicates: {rep.duplicates} ok answers paid more than once "
            f"(prompts {', '.join(k[:12] for k in rep.duplicate_keys)}…): the workers did not "
            "share one store, or a lease expired while its owner was still sending"
        )
    else:
        lines.append("duplicates: 0 (no prompt was paid twice)")
    if rep.lost:
        lines.append(
            f"lost: {rep.lost} prompts were answered (send log) but have no row in the store: "
            "rows were deleted by hand or the store was replaced; their answers will be paid again"
        )
    return "\n".join(lines)
