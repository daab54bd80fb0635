"""The PostgreSQL response store against the SQLite one, and two machines on one store (issue 32).

A fake OpenAI-compatible server (a separate process, 200 ms latency) and a real PostgreSQL server
(pgserver's binary, Unix socket, temp folder) on this machine. Printed:

1. **Overhead**: the real evaluate stage (``python stages/evaluate.py``, start-up included) at
   ``N`` prompts × ``C`` in flight, on a fresh SQLite store and on a fresh PostgreSQL database,
   alternated ``--repeats`` times: whole-process wall and the server-busy window (first request
   in to last reply out, from the server's log), medians, and PostgreSQL ÷ SQLite. Goal ≤ 1.1.
2. **Two machines**: two workspaces, each with ``M`` prompts of which half are the other's,
   started together on one PostgreSQL database (``CULTUREQA_MACHINE`` a / b): requests the
   server saw against distinct prompts (must be equal), per machine from ``cultureqa store
   report``, and its duplicates (must be 0).

    .venv/bin/python bench/store_pg.py [--items 4000] [--concurrency 256] [--repeats 2]
        [--shared-items 2000]

Prints numbers; exits 1 only if the two-machine run paid for a prompt twice.
"""

from __future__ import annotations

import argparse
import json
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
EVALUATE = [PY, str(ROOT / "stages/evaluate.py"), "--benchmark", "synthetic", "--model", "model"]


def _env(ws: Path, url: str | None, machine: str = "") -> dict[str, str]:
    env = {**stage_env(ws), "PYTHONPATH": str(ROOT / "src")}
    if url:
        env["CULTUREQA_STORE_URL"] = url
    if machine:
        env["CULTUREQA_MACHINE"] = machine
    return env


def overhead(
    tmp: Path, pg: PgServer, api_base: str, log: Path, n: int, concurrency: int, repeats: int
) -> None:
    runs: dict[str, list[Measure]] = {"sqlite": [], "postgresql": []}
    for r in range(repeats):
        for backend in ("sqlite", "postgresql") if r % 2 == 0 else ("postgresql", "sqlite"):
            ws = tmp / f"{backend}-{r}"
            make_api_workspace(ROOT, ws, n, api_base, concurrency)
            url = pg.database() if backend == "postgresql" else None
            m = measure(EVALUATE, ws, _env(ws, url), log)
            assert m.requests == n, (backend, m.requests)
            runs[backend].append(m)
    ideal = n * LATENCY_S / concurrency
    print(f"\n1. overhead: {n} prompts × {concurrency} in flight, latency {LATENCY_S * 1000:.0f} ms"
          f" (ideal N·latency/C {ideal:.2f} s), {repeats} runs each, alternated")  # fmt: skip
    print(f"  {'store':11} {'wall s (each)':>24} {'median':>7} {'busy s':>7} {'max in flight':>14}")
    med = {}
    for backend, ms in runs.items():
        walls = [m.wall for m in ms]
        med[backend] = (statistics.median(walls), statistics.median(m.window for m in ms))
        each = ", ".join(f"{w:.2f}" for w in walls)
        print(f"  {backend:11} {each:>24} {med[backend][0]:7.2f} {med[backend][1]:7.2f} "
              f"{max(m.max_in_flight for m in ms):14d}")  # fmt: skip
    wall = med["postgresql"][0] / med["sqlite"][0]
    busy = med["postgresql"][1] / med["sqlite"][1]
    verdict = "within" if wall <= 1.1 else "OVER"
    print(f"  PostgreSQL ÷ SQLite: whole-process {wall:.3f} ({verdict} the 1.1 goal), "
          f"busy window {busy:.3f}")  # fmt: skip


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--shared-items", type=int, default=2000, help="prompts per machine")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name, temporary_server() as pg:
        tmp = Path(name)
        log = tmp / "server.jsonl"
        proc, api_base = start_server(LATENCY_S, log)
        try:
            overhead(tmp, pg, api_base, log, args.items, args.concurrency, args.repeats)
            ok = two_machines(tmp, pg, api_base, log, args.shared_items, args.concurrency)
        finally:
            stop_server(proc)
    print(f"\nrequests = distinct prompts, 0 duplicates: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
