"""Evaluation throughput against a latency-bound OpenAI-compatible server (DESIGN.md §10, §11).

For each scenario (items × concurrency, 200 ms server latency) three clients send the same
number of requests to the same fake server (a separate process, stopped by PID):

- ``bare``: a minimal aiohttp client (one session, a semaphore, ``json.loads``): the reference;
- ``lean``: the real evaluate stage (``python stages/evaluate.py``, start-up included) with
  ``options.transport: http``;
- ``litellm``: the same stage with ``options.transport: litellm``.

Printed per path: whole-process wall, server-busy window (first request in to last reply out, on
the server's log), client CPU per request (the child process's user+sys CPU over the requests the
server saw), max in flight, and each ratio to the bare client. The lean stage is then rerun to
show that answered requests are never sent again. Prints numbers, asserts nothing.

    .venv/bin/python bench/eval_throughput.py [--quick] [--scenarios 200x16,4000x256]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
LATENCY_S = 0.2
PATHS = ("bare", "lean", "litellm")

BARE_CLIENT = """
import asyncio, json, sys
import aiohttp

async def main(url, n, concurrency):
    slots = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as s:
        async def one(i):
            body = {"model": "api-model", "max_tokens": 8, "temperature": 0.0,
                    "messages": [{"role": "user", "content": f"Synthetic question {i}?"}]}
            async with slots:
                async with s.post(url, json=body) as r:
                    return json.loads(await r.read())["choices"][0]["message"]["content"]
        return await asyncio.gather(*(one(i) for i in range(n)))

out = asyncio.run(main(sys.argv[1] + "/chat/completions", int(sys.argv[2]), int(sys.argv[3])))
assert len(out) == int(sys.argv[2])
"""


@dataclass
class Measure:
    """One client process against the server."""

    wall: float
    window: float
    cpu: float
    requests: int
    max_in_flight: int
    startup: float


def start_server(latency: float, log: Path) -> tuple[subprocess.Popen[str], str]:
    cmd = [PY, "-m", "cultureqa.testing.fake_openai", "--latency", str(latency), "--log", str(log)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if line[:1] != ["READY"]:
        proc.kill()
        raise RuntimeError(f"fake server did not start: {line}")
    return proc, f"http://127.0.0.1:{line[1]}/v1"


def stop_server(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """Wall and CPU (user+sys) of one child process, and its start on the server log's clock."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started_at = time.time()
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[1]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, started_at


def server_stats(log: Path, since: int) -> tuple[dict[str, float], int]:
    lines = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    new = lines[since:]
    if not new:
        return {"requests": 0, "window": 0.0, "max_in_flight": 0, "first": 0.0}, len(lines)
    events = sorted(
        [(r["t_start"], 1) for r in new] + [(r["t_start"] + r["duration_s"], -1) for r in new]
    )
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    stats = {
        "requests": len(new),
        "window": events[-1][0] - events[0][0],
        "max_in_flight": peak,
        "first": events[0][0],
    }
    return stats, len(lines)


def measure(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> Measure:
    since = len(log.read_text().splitlines()) if log.exists() else 0
    wall, cpu, started_at = timed(cmd, cwd, env)
    time.sleep(0.2)  # the server writes its log line after the reply
    stats, _ = server_stats(log, since)
    return Measure(
        wall=wall,
        window=stats["window"],
        cpu=cpu,
        requests=int(stats["requests"]),
        max_in_flight=int(stats["max_in_flight"]),
        startup=stats["first"] - started_at,
    )


def scenario(n: int, concurrency: int, latency: float) -> dict[str, Measure]:
    results: dict[str, Measure] = {}
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.jsonl"
        proc, api_base = start_server(latency, log)
        try:
            env = stage_env(Path(tmp))
            bare = [PY, "-c", BARE_CLIENT, api_base, str(n), str(concurrency)]
            results["bare"] = measure(bare, Path(tmp), env, log)
            evaluate = [PY, str(ROOT / "stages/evaluate.py"), "--benchmark", "synthetic"]
            for path, transport in (("lean", "http"), ("litellm", "litellm")):
                ws = Path(tmp) / path
                make_api_workspace(ROOT, ws, n, api_base, concurrency, transport=transport)
                cmd = [*evaluate, "--model", "model"]
                results[path] = measure(cmd, ws, stage_env(ws), log)
            results["rerun"] = measure(
                cmd[:], Path(tmp) / "lean", stage_env(Path(tmp) / "lean"), log
            )
        finally:
            stop_server(proc)
    report(n, concurrency, latency, results)
    return results


def report(n: int, concurrency: int, latency: float, r: dict[str, Measure]) -> None:
    ideal = n * latency / concurrency
    bare = r["bare"]
    print(f"\n{n} items × concurrency {concurrency}, latency {latency * 1000:.0f} ms "
          f"(ideal N·latency/concurrency {ideal:.2f} s)")  # fmt: skip
    head = ("path", "wall s", "×bare", "busy s", "×bare", "CPU ms/req", "×bare", "max in flight",
            "start-up s", "requests")  # fmt: skip
    print("  {:8} {:>7} {:>6} {:>7} {:>6} {:>10} {:>6} {:>13} {:>10} {:>8}".format(*head))
    for path in PATHS:
        m = r[path]
        per = 1000 * m.cpu / max(1, m.requests)
        bare_per = 1000 * bare.cpu / max(1, bare.requests)
        print(
            f"  {path:8} {m.wall:7.2f} {m.wall / bare.wall:6.2f} {m.window:7.2f} "
            f"{m.window / bare.window:6.2f} {per:10.2f} {per / bare_per:6.2f} "
            f"{m.max_in_flight:13d} {m.startup:10.2f} {m.requests:8d}"
        )
    lean = r["lean"]
    print(f"  lean whole-process efficiency {ideal / lean.wall:.3f}, busy-window efficiency "
          f"{ideal / lean.window:.3f}")  # fmt: skip
    print(f"  lean rerun: wall {r['rerun'].wall:.2f} s, requests {r['rerun'].requests}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="only the 200 × 16 scenario")
    parser.add_argument(
        "--scenarios", default="200x16,4000x256", help="comma-separated ITEMSxCONCURRENCY"
    )
    args = parser.parse_args()
    scenarios = ["200x16"] if args.quick else args.scenarios.split(",")
    for spec in scenarios:
        n, concurrency = (int(x) for x in spec.split("x"))
        scenario(n, concurrency, LATENCY_S)
    return 0


if __name__ == "__main__":
    sys.exit(main())
