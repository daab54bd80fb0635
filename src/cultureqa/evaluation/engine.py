"""The one evaluation engine every benchmark family runs on (DESIGN.md §2.1).

A family says only what differs between benchmarks: how its items become requests (per setting)
and how replies become prediction rows. The engine owns everything else, once: building the
client, the response store around it, the progress bar, per-item accounting copied from the
replies (latency, cache flag, tokens, cost and whatever else a response carries), the counts,
the error-share rule, and one :class:`RunRecord` with the same schema for every family.
Concurrency is bounded by the client (its semaphore and ``max_in_flight``), not here, so a batch
is handed over whole and the client keeps its pipe full. A stage's settings run together
(:func:`run_settings`) and take turns at the client, so one waiting on another machine's leases
does not hold back the rest.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import importlib
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol, cast

from cultureqa.core.config import print_error
from cultureqa.core.io import write_json
from cultureqa.core.paths import project_root
from cultureqa.core.provenance import package_versions, provenance
from cultureqa.core.runlog import write_run
from cultureqa.core.spend import api_stats, guard, stopped_reason
from cultureqa.evaluation.failures import over_limit_line
from cultureqa.evaluation.progress import Progress
from cultureqa.evaluation.record import (
    Reply,
    RunRecord,
    accounting,
    count,
    error_causes,
    error_share,
    model_sha,
)
from cultureqa.llm import event_loop
from cultureqa.llm.base import (
    GenerateRequest,
    LoglikRequest,
    ModelClient,
)
from cultureqa.llm.door import open_client
from cultureqa.llm.store import StoreLocation, open_store

if TYPE_CHECKING:  # pandas only where a table is built: after the replies, never before
    import pandas as pd


@dataclass(frozen=True)
class Decoding:
    """Generation parameters from the model config (temperature 0 unless a model refuses it)."""

    temperature: float = 0.0
    max_tokens: int = 16
    seed: int | None = None


@dataclass(frozen=True)
class ModelView:
    """What a family may know about the model when it turns items into requests."""

    model_id: str
    supports_loglik: bool
    decoding: Decoding


@dataclass(frozen=True)
class Batch:
    """One setting's requests (all of one kind) and how to score their replies.

    ``score`` gets the replies in request order and returns one prediction row per item;
    ``per_item`` consecutive requests belong to one item (ID-MoCQA scores two per item).
    """

    label: str
    kind: Literal["generate", "loglik"]
    requests: Sequence[GenerateRequest] | Sequence[LoglikRequest]
    score: Callable[[Sequence[Any]], pd.DataFrame]
    templates: Mapping[str, str] = field(default_factory=dict)
    per_item: int = 1


@dataclass(frozen=True)
class Skip:
    """A setting the model cannot run, with the reason (recorded, never silent)."""

    label: str
    reason: str
    requests: int = 0
    """Its share of the progress bar."""


class Family(Protocol):
    """What a benchmark family supplies; see docs/benchmark-configs.md, "A new benchmark family"."""

    @property
    def benchmark(self) -> str:
        """The benchmark's name (run records, MLflow experiment, output paths)."""
        ...

    @property
    def max_tokens_floor(self) -> int:
        """Generation budget floor; the model's own ``max_tokens`` wins when larger."""
        ...

    def plan(self, model: ModelView) -> Iterable[Batch | Skip]:
        """Every setting as a batch of requests, or a skip with its reason."""
        ...

    def finish(self, rows: pd.DataFrame, run: RunSpec) -> pd.DataFrame:
        """Identity columns and the family's column contract (order and dtypes)."""
        ...

    def dataset_record(self) -> dict[str, Any]:
        """The dataset's provenance record (name, paths, MD5s)."""
        ...

    def details(self, predictions: pd.DataFrame) -> dict[str, Any]:
        """Family-specific run-record fields (``{}`` when there are none)."""
        ...

    def metrics(self, predictions: pd.DataFrame) -> dict[str, Any]:
        """The DVC metrics document of one run."""
        ...


@dataclass(frozen=True)
class RunSpec:
    """Who is evaluated and under which rules: the parts every family's stage parses alike."""

    roster_entry: str
    model_cfg: Mapping[str, Any]
    store_path: StoreLocation
    max_error_share: float
    prompt: str = ""
    progress: bool = False
    budget_usd: float | None = None  # spend.budget_usd: new requests stop when reached (rc 2)
    budget_team: str | None = None  # spend.team: budget_usd is the team's cap (PostgreSQL)


class Result(NamedTuple):
    """A run's record and its predictions (one row per item and setting)."""

    record: RunRecord
    predictions: pd.DataFrame


def decoding_of(model_cfg: Mapping[str, Any], floor: int = 0) -> Decoding:
    """The model's decoding with ``max_tokens`` raised to ``floor`` (CoT needs room to reason)."""
    raw = {k: v for k, v in dict(model_cfg.get("decoding") or {}).items() if v is not None}
    decoding = Decoding(**raw)
    return dataclasses.replace(decoding, max_tokens=max(decoding.max_tokens, floor))


async def run_batch(client: ModelClient, batch: Batch) -> pd.DataFrame:
    """Send one batch, score it, and add the per-item accounting columns."""
    if batch.kind == "loglik":
        replies: Sequence[Reply] = await client.loglik(
            cast(Sequence[LoglikRequest], batch.requests)
        )
    else:
        replies = await client.generate(cast(Sequence[GenerateRequest], batch.requests))
    frame = batch.score(replies).reset_index(drop=True)
    if replies:
        for name, values in accounting(replies, batch.per_item).items():
            frame[name] = values
    return frame


async def run_settings(client: ModelClient, batches: Sequence[Batch]) -> list[pd.DataFrame]:
    """Run every setting's batch together; their frames in plan order.

    The client sends one batch at a time, in this order (its sending turn), so a stage's
    requests leave as when settings ran one after another; but a setting waiting on prompts
    another machine has leased gives up the turn while it waits, and the next settings send
    meanwhile (a frozen machine delays its own prompts, never the others'). At the first
    failure the other settings are cancelled (each lets its replies on the wire land first)
    and that failure is raised, as when the settings ran one after another.
    """
    tasks = [asyncio.create_task(run_batch(client, b)) for b in batches]
    if not tasks:
        return []
    await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    failed = next((t for t in tasks if t.done() and not t.cancelled() and t.exception()), None)
    if failed is None:
        return [t.result() for t in tasks]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    raise cast(BaseException, failed.exception())


def evaluate(family: Family, run: RunSpec) -> Result:
    """Run every setting of ``family`` with the roster entry's model; item failures never raise.

    The model is built once for all settings (loading the local model costs seconds) and every
    call goes through the response store, so a rerun is free and a crash loses nothing answered.
    """
    started = time.perf_counter()
    store = open_store(run.store_path)
    try:
        client = open_client(run.roster_entry, run.model_cfg, store)
    except BaseException:
        store.close()
        raise
    decoding = decoding_of(run.model_cfg, family.max_tokens_floor)
    view = ModelView(str(run.model_cfg["id"]), client.supports_loglik, decoding)
    plan = list(family.plan(view))
    total = sum(len(p.requests) if isinstance(p, Batch) else p.requests for p in plan)
    label = "/".join(x for x in (family.benchmark, view.model_id, run.prompt) if x)
    bar = Progress(total, label, run.progress)  # tqdm imported at the first reply
    client.on_progress = bar.hook
    tail = TailWarmUp()
    client.on_last_round = tail.start

    async def run_all() -> list[pd.DataFrame]:
        for step in plan:
            if isinstance(step, Skip):
                bar.skip(step.requests)
        try:
            return await run_settings(client, [s for s in plan if isinstance(s, Batch)])
        finally:
            await client.aclose()

    try:
        with _fewer_collections():  # log lines print above the bar once it shows
            frames = event_loop.run(run_all())
    finally:
        bar.close()
        store.close()  # the client recorded itself in the ledger on closing (hop sums three)
        tail.join()
    import pandas as pd

    predictions = pd.DataFrame()
    if frames:
        predictions = family.finish(pd.concat(frames, ignore_index=True), run)
    record = RunRecord(
        benchmark=family.benchmark,
        roster_entry=run.roster_entry,
        model=dict(run.model_cfg),
        model_sha=model_sha(run.model_cfg),
        prompt=run.prompt,
        settings=[p.label for p in plan if isinstance(p, Batch)],
        skipped={p.label: p.reason for p in plan if isinstance(p, Skip)},
        templates={k: v for p in plan if isinstance(p, Batch) for k, v in p.templates.items()},
        counts=count(predictions),
        error_share=error_share(predictions),
        max_error_share=run.max_error_share,
        details=family.details(predictions) if frames else {},
        provenance=provenance(project_root(), family.dataset_record()),
        model_calls=client.calls,
        api=api_stats(client),
        timings={"wall_s": round(time.perf_counter() - started, 3)},
        error_causes=error_causes(predictions),
    )
    return Result(record, predictions)


TABLE_MODULES = ("pandas", "pyarrow.parquet")
"""What the stage imports after the replies, to score them and write its tables."""


class TailWarmUp:
    """Start what a stage does after its replies while the last replies are on the wire.

    Importing the table libraries (0.3 CPU s) and reading the installed package versions for
    the record (0.06 s) were most of a stage's time after its last reply
    (``bench/eval_throughput.py``). In the last round trips the client mostly waits, so they run
    then, on a thread; a stage that has the libraries already imports nothing.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """The client's ``on_last_round``: start once."""
        if self._thread is None:
            self._thread = threading.Thread(target=_warm_up, name="tail-warm-up", daemon=True)
            self._thread.start()

    def join(self) -> None:
        """Wait for it (a failed import fails again, and is reported, in the main thread)."""
        if self._thread is not None:
            self._thread.join()


def _warm_up() -> None:
    for module in TABLE_MODULES:
        if module not in sys.modules:
            importlib.import_module(module)
    package_versions()


GC_GEN0_THRESHOLD = 20_000
"""Allocations between young-generation collections while the requests run (Python's: 700)."""


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Collect garbage less often while the requests run; as before afterwards.

    Each request allocates a few hundred objects, so at Python's thresholds the collector ran
    ~400 young and 3–4 full collections over 4,000 requests, each full one walking every object
    the imports made: 0.3–0.4 CPU s of a 4,000 × 256 stage (``bench/eval_throughput.py``,
    measured with ``gc.callbacks``). Objects that exist before the loop are frozen (never
    garbage of this run) and unfrozen after; the young generation is collected every 20,000
    allocations instead of 700 (0.06 CPU s in all, a few MB held a little longer).
    """
    thresholds = gc.get_threshold()
    frozen_here = gc.get_freeze_count() == 0  # a caller's own freeze is left as it is
    if frozen_here:
        gc.freeze()
    gc.set_threshold(max(thresholds[0], GC_GEN0_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if frozen_here:
            gc.unfreeze()


def summary_line(record: RunRecord) -> str:
    """One line for the stage's log: calls, retries, what was not sent, errors and skips."""
    client = record.api.get("client") or {}
    name = "/".join(x for x in (record.benchmark, str(record.model["id"]), record.prompt) if x)
    retries = ""
    if client or record.counts.not_sent:
        causes = ", ".join(f"{k} {v}" for k, v in (client.get("retries_by_cause") or {}).items())
        by_cause = f": {causes}" if causes else ""
        # the items' own count (run.json counts.not_sent): the budget's, the breaker's and a
        # stopping stage's alike, never only the HTTP client's share of them
        retries = (
            f" ({client.get('retries', 0)} retries{by_cause}; {record.counts.not_sent} not sent)"
        )
    skipped = f", skipped {sorted(record.skipped)}" if record.skipped else ""
    return (
        f"{name}: {record.counts.items} items, {record.model_calls} model calls{retries}, "
        f"{record.counts.empty} empty replies (scored wrong), "
        f"error share {record.error_share:.3f}{skipped}{usage_estimates(client)}"
    )


def usage_estimates(client: Mapping[str, Any]) -> str:
    """``, N replies without usage charged by estimate (method N)`` when there were any."""
    count = int(client.get("usage_estimated") or 0)
    if not count:
        return ""
    methods = ", ".join(f"{m} {n}" for m, n in (client.get("usage_estimated_by") or {}).items())
    return f", {count} replies without usage charged by counting their tokens ({methods})"


def run_and_write(family: Family, run: RunSpec, out_dir: Path, metrics_path: Path) -> int:
    """The body of every evaluation stage: evaluate under the output lock, write, exit code.

    Outputs are written before the error-share rule is applied, so a failed run can be
    inspected; a tripped circuit breaker (rc 2) is reported before the error share (rc 1).
    """
    with guard(out_dir, run.budget_usd, run.store_path, run.budget_team) as lock:
        record, predictions = evaluate(family, run)
        record.api["lock_taken_over_from_pid"] = lock.took_over_from
        write_run(out_dir, predictions, record.as_dict(), project_root())
        write_json(metrics_path, family.metrics(predictions) if not predictions.empty else {})
    print(summary_line(record))
    return exit_code(record, out_dir / "predictions.parquet")


def exit_code(record: RunRecord, predictions: Path) -> int:
    """0; 2 when the circuit breaker stopped sends (its cause is the error); else 1 past the limit.

    Item failures never stop a run; only an error share above ``max_error_share`` fails the
    stage (failed calls, empty and unparsable replies alike), after its outputs are written so
    the failures can be inspected; the line names the causes and quotes an example reply.
    """
    if (reason := stopped_reason(record.api)) is not None:
        print_error(reason)
        return 2
    if record.error_share <= record.max_error_share:
        return 0
    print_error(over_limit_line(record, predictions))
    return 1
