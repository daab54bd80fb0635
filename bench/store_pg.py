"""The PostgreSQL response store against the SQLite one, and two machines on one store (issue 32).

A fake OpenAI-compatible server (a separate process, 200 ms latency) and a real PostgreSQL server
(pgserver's binary, Unix socket, temp folder) on this machine. Printed:

1. **Overhead**: the real evaluate stage (``python stages/evaluate.py``, start-up included) at
   ``N`` prompts × ``C`` in flight, on a fresh SQLite store and on a fresh PostgreSQL database,
   in ``--pairs`` pairs (at least 5) whose order alternates: each run's whole-process wall and
   server-busy window (first request in to last reply out, from the server's log), each pair's
   PostgreSQL ÷ SQLite, and their median, quartiles and range. Goal: median ≤ 1.1. The load
   average is printed before and after, since the spread follows it on a shared machine.
2. **Two machines**: two workspaces, each with ``M`` prompts of which half are the other's,
   started together on one PostgreSQL database (``CULTUREQA_MACHINE`` a / b): requests the
   server saw against distinct prompts (must be equal), per machine from ``cultureqa store
   report``, and its duplicates (must be 0).

    .venv/bin/python bench/store_pg.py [--items 4000] [--concurrency 256] [--pairs 5]
        [--shared-items 2000]

Prints numbers; exits 1 only if the two-machine run paid for a prompt twice.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_throughput import Measure, measure, server_stats, start_server, stop_server

from cultureqa.llm.store.admin import render_report, report
from cultureqa.testing.postgres import PgServer, temporary_server
from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
LATENCY_S = 0.2
GOAL = 1.1
"""PostgreSQL ÷ SQLite, whole process: the median pair at most this."""
EVALUATE = [PY, str(ROOT / "stages/evaluate.py"), "--benchmark", "synthetic", "--model", "model"]


def _env(ws: Path, url: str | None, machine: str = "") -> dict[str, str]:
    env = {**stage_env(ws), "PYTHONPATH": str(ROOT / "src")}
    if url:
        env["CULTUREQA_STORE_URL"] = url
    if machine:
        env["CULTUREQA_MACHINE"] = machine
    return env


def overhead(
    tmp: Path, pg: PgServer, api_base: str, log: Path, n: int, concurrency: int, pairs: int
) -> None:
    """``pairs`` pairs of runs, one per store, the order swapped each pair; each pair's ratio.

    On a shared machine a single run varies by up to 2×, so one ratio says little: each pair
    runs back to back (the same load around both), and the median of the pairs' ratios, with
    their range and quartiles, is the number compared with the goal.
    """
    runs: list[dict[str, Measure]] = []
    ideal = n * LATENCY_S / concurrency
    print(f"\n1. overhead: {n} prompts × {concurrency} in flight, latency {LATENCY_S * 1000:.0f} ms"
          f" (ideal N·latency/C {ideal:.2f} s), {pairs} pairs, the order alternated")  # fmt: skip
    print(f"  {'pair':>4} {'first':>10} {'sqlite s':>9} {'postgresql s':>13} {'ratio':>6} "
          f"{'busy ratio':>10}")  # fmt: skip
    for r in range(pairs):
        order = ("sqlite", "postgresql") if r % 2 == 0 else ("postgresql", "sqlite")
        pair: dict[str, Measure] = {}
        for backend in order:
            ws = tmp / f"{backend}-{r}"
            make_api_workspace(ROOT, ws, n, api_base, concurrency)
            url = pg.database() if backend == "postgresql" else None
            m = measure(EVALUATE, ws, _env(ws, url), log)
            assert m.requests == n, (backend, m.requests)
            pair[backend] = m
        runs.append(pair)
        ratio = pair["postgresql"].wall / pair["sqlite"].wall
        busy = pair["postgresql"].window / pair["sqlite"].window
        print(f"  {r + 1:4d} {order[0]:>10} {pair['sqlite'].wall:9.2f} "
              f"{pair['postgresql'].wall:13.2f} {ratio:6.3f} {busy:10.3f}", flush=True)  # fmt: skip
    ratios = sorted(p["postgresql"].wall / p["sqlite"].wall for p in runs)
    busy_ratios = sorted(p["postgresql"].window / p["sqlite"].window for p in runs)
    q1, med, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    over = sum(x > GOAL for x in ratios)
    verdict = "within" if med <= GOAL else "OVER"
    print(f"  PostgreSQL ÷ SQLite, whole process: median {med:.3f} ({verdict} the {GOAL} goal), "
          f"quartiles {q1:.3f}–{q3:.3f}, range {ratios[0]:.3f}–{ratios[-1]:.3f}, "
          f"{over} of {pairs} pairs over {GOAL}; busy window: median "
          f"{statistics.median(busy_ratios):.3f}")  # fmt: skip
    sqlite = statistics.median(p["sqlite"].wall for p in runs)
    postgres = statistics.median(p["postgresql"].wall for p in runs)
    print(f"  medians of the runs: SQLite {sqlite:.2f} s, PostgreSQL {postgres:.2f} s; max in "
          f"flight {max(m.max_in_flight for p in runs for m in p.values())}")  # fmt: skip


def _shift_items(ws: Path, start: int, n: int) -> None:
    """Rewrite the workspace's synthetic benchmark as questions ``start … start+n-1``."""
    with (ws / "data" / "synthetic.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(start, start + n):
            row = {"id": f"s{i}", "question": f"Synthetic question {i}?",
                   "options": ["alpha", "beta", "gamma"], "answer": "ABC"[i % 3]}  # fmt: skip
            fh.write(json.dumps(row) + "\n")


def two_machines(
    tmp: Path, pg: PgServer, api_base: str, log: Path, m: int, concurrency: int
) -> bool:
    url = pg.database()
    since = len(log.read_text().splitlines()) if log.exists() else 0
    machines = {"machine-a": 0, "machine-b": m // 2}
    procs = {}
    start = time.perf_counter()
    for name, first in machines.items():
        ws = make_api_workspace(ROOT, tmp / name, m, api_base, concurrency)
        _shift_items(ws, first, m)
        procs[name] = subprocess.Popen(
            EVALUATE, cwd=ws, env=_env(ws, url, name), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    for name, proc in procs.items():
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"{name} failed ({proc.returncode}):\n{err[-3000:]}")
    wall = time.perf_counter() - start
    time.sleep(0.3)
    stats, _ = server_stats(log, since)
    lines = log.read_text().splitlines()[since:]
    prompts = Counter(json.loads(x)["request_sha"] for x in lines)
    distinct = m + m // 2
    print(f"\n2. two machines, {m} prompts each, {m // 2} of them shared ({distinct} distinct), "
          f"{concurrency} in flight each, one PostgreSQL store")  # fmt: skip
    print(f"  wall {wall:.2f} s (both together), server saw {int(stats['requests'])} requests "
          f"for {len(prompts)} distinct prompts (expected {distinct}); most sends of one "
          f"prompt: {max(prompts.values())}")  # fmt: skip
    rep = report(url)
    print("  " + render_report(rep).replace("\n", "\n  "))
    return rep.duplicates == 0 and int(stats["requests"]) == distinct == len(prompts)


def _load() -> str:
    """The 1, 5 and 15-minute load averages: how busy the machine was around the runs."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--pairs", type=int, default=5, help="alternated pairs (at least 5)")
    parser.add_argument("--shared-items", type=int, default=2000, help="prompts per machine")
    args = parser.parse_args()
    if args.pairs < 5:
        parser.error(
            "--pairs: at least 5 (a median of fewer pairs says little on a shared machine)"
        )
    print(f"load average at the start: {_load()} ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory() as name, temporary_server() as pg:
        tmp = Path(name)
        log = tmp / "server.jsonl"
        proc, api_base = start_server(LATENCY_S, log)
        try:
            overhead(tmp, pg, api_base, log, args.items, args.concurrency, args.pairs)
            print(f"  load average after the pairs: {_load()}")
            ok = two_machines(tmp, pg, api_base, log, args.shared_items, args.concurrency)
        finally:
            stop_server(proc)
    print(f"load average at the end: {_load()}")
    print(f"\nrequests = distinct prompts, 0 duplicates: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
