"""Evaluation throughput against a latency-bound OpenAI-compatible server (DESIGN.md §10, §11).

For each scenario (items × concurrency, 200 ms server latency) these clients send the same
number of requests to the same fake server (a separate process, stopped by PID):

- ``bare``: a minimal aiohttp client (one session, a semaphore, ``json.loads``): the reference;
- ``bare-uvloop``: the same client on uvloop's event loop, the loop every stage runs on
  (``cultureqa.llm.event_loop``): the strongest reference, its ratio printed beside (``×bare-uv``);
- ``http``: the real evaluate stage (``python stages/evaluate.py``, start-up included) with
  ``options.transport: http`` (the self-hosted configs' path);
- ``wire``: the same stage with ``options.transport: wire`` (every hosted config's path), its
  route and the benchmark's load stored by one unmeasured stage run on the same items before
  the rounds, as by a config's and a benchmark's first run on a machine: the stage imports
  neither litellm nor pandas before its first request;
- ``wire-cold``: the same with an empty user cache each run (litellm imported to resolve the
  route, the benchmark read through pandas, both stored: the first run on a machine);
- ``litellm``: the same stage with ``options.transport: litellm``.

Each scenario runs ``--rounds`` alternated rounds (the bare clients, then each path, the order
rotated every round). Printed per path, as medians over the rounds: whole-process wall,
server-busy window (first request in to last reply out, on the server's log), each as a ratio to
the same round's bare client; client CPU per request (the child process's user+sys CPU over the
requests the server saw), max in flight, start-up (process start to the first request on the
server), and the load average. The last stage run is then rerun to show that answered requests
are never sent again. Prints numbers, asserts nothing.

    .venv/bin/python bench/eval_throughput.py [--quick] [--scenarios 200x16,4000x256]
        [--paths http,wire,wire-cold,litellm] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
LATENCY_S = 0.2
KEY_ENV = "CULTUREQA_BENCH_KEY"
"""The wire path's key variable (hosted configs name theirs: ``options.api_key_env``)."""
TRANSPORT = {"http": "http", "wire": "wire", "wire-cold": "wire", "litellm": "litellm"}
"""Stage paths and their ``options.transport``: ``http`` is the self-hosted configs' path,
``wire`` every hosted config's (gpt_4o … doubao_seed: they differ only in the URL and parameters
litellm resolves once, not in how a request travels), ``litellm`` the path they took before."""

BARE_CLIENT = """
import asyncio, json, sys
import aiohttp
RUN = asyncio.run

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

out = RUN(main(sys.argv[1] + "/chat/completions", int(sys.argv[2]), int(sys.argv[3])))
assert len(out) == int(sys.argv[2])
"""
BARE_UVLOOP = BARE_CLIENT.replace("RUN = asyncio.run", "import uvloop\nRUN = uvloop.run")
"""The same client on uvloop's event loop, the loop the stage runs on: the strongest reference."""


@dataclass
class Measure:
    """One client process against the server."""

    wall: float
    window: float
    cpu: float
    requests: int
    max_in_flight: int
    startup: float


def model_transports(conf: Path) -> dict[str, str]:
    """Each ``conf/model/`` config's ``options.transport``, its own or its base's (``_here_``).

    Read from the files, so the printed list is the configs as they stand, not a list kept here.
    """
    out: dict[str, str] = {}
    for path in sorted((conf / "model").glob("*.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        transport = (raw.get("options") or {}).get("transport")
        for entry in raw.get("defaults") or []:
            name = str(entry).partition("@")[0]
            if transport is None and name.startswith("base/"):
                base = yaml.safe_load((conf / "model" / f"{name}.yaml").read_text("utf-8"))
                transport = ((base or {}).get("options") or {}).get("transport")
        if raw.get("backend") == "litellm" or transport is not None:
            out[path.stem] = str(transport or "litellm")
    return out


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


def scenario(n: int, concurrency: int, latency: float, paths: list[str], rounds: int) -> None:
    """``rounds`` alternated rounds: the bare clients, then each path in a rotated order.

    Each path's ratios are to the bare client of its own round (so a load spike hits both sides
    of a ratio alike), and the median over the rounds is printed. Every stage run gets a fresh
    workspace and response store, so each one sends all ``n`` requests.
    """
    runs: dict[str, list[Measure]] = {p: [] for p in ("bare", "bare-uvloop", *paths)}
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.jsonl"
        proc, api_base = start_server(latency, log)
        try:
            env = {**stage_env(Path(tmp)), "CULTUREQA_CACHE_DIR": f"{tmp}/routes"}
            bare = [PY, "-c", BARE_CLIENT, api_base, str(n), str(concurrency)]
            bare_uvloop = [PY, "-c", BARE_UVLOOP, api_base, str(n), str(concurrency)]
            evaluate = [PY, str(ROOT / "stages/evaluate.py"), "--benchmark", "synthetic"]
            if "wire" in paths:  # route and load stored as a config's first run stores them
                ws = make_api_workspace(ROOT, Path(tmp) / "route", n, api_base, concurrency,
                                        KEY_ENV, transport="wire")  # fmt: skip
                routes = {"CULTUREQA_CACHE_DIR": env["CULTUREQA_CACHE_DIR"], KEY_ENV: "sk-bench"}
                timed([*evaluate, "--model", "model"], ws, {**stage_env(ws), **routes})
            for k in range(rounds):
                loads.append(os.getloadavg()[0])
                runs["bare"].append(measure(bare, Path(tmp), env, log))
                runs["bare-uvloop"].append(measure(bare_uvloop, Path(tmp), env, log))
                for path in paths[k % len(paths) :] + paths[: k % len(paths)]:
                    ws = Path(tmp) / f"{path}-{k}"
                    key = KEY_ENV if path.startswith("wire") else None  # hosted configs: a key
                    transport = TRANSPORT[path]
                    make_api_workspace(ROOT, ws, n, api_base, concurrency, key, transport=transport)
                    cmd = [*evaluate, "--model", "model"]
                    routes = f"{ws}/routes" if path == "wire-cold" else env["CULTUREQA_CACHE_DIR"]
                    run_env = {**stage_env(ws), KEY_ENV: "sk-bench", "CULTUREQA_CACHE_DIR": routes}
                    runs[path].append(measure(cmd, ws, run_env, log))
            rerun = measure(cmd, ws, run_env, log)
        finally:
            stop_server(proc)
    report(n, concurrency, latency, runs, loads, rerun)


def report(
    n: int,
    concurrency: int,
    latency: float,
    runs: dict[str, list[Measure]],
    loads: list[float],
    rerun: Measure,
) -> None:
    ideal = n * latency / concurrency
    bare = runs["bare"]
    print(
        f"\n{n} items × concurrency {concurrency}, latency {latency * 1000:.0f} ms "
        f"(ideal N·latency/concurrency {ideal:.2f} s); {len(bare)} alternated rounds, load "
        f"average (1 min) {min(loads):.1f}–{max(loads):.1f}; medians; ratios per round"
    )
    head = ("path", "wall s", "×bare", "×bare-uv", "busy s", "×bare", "CPU ms/req",
            "max in flight", "start-up s", "requests")  # fmt: skip
    print("  {:11} {:>7} {:>6} {:>8} {:>7} {:>6} {:>10} {:>13} {:>10} {:>8}".format(*head))
    med = statistics.median
    for path, measures in runs.items():
        pairs = list(zip(measures, bare, strict=True))
        uv = list(zip(measures, runs["bare-uvloop"], strict=True))
        print(
            f"  {path:11} {med(m.wall for m in measures):7.2f} "
            f"{med(m.wall / b.wall for m, b in pairs):6.2f} "
            f"{med(m.wall / b.wall for m, b in uv):8.2f} {med(m.window for m in measures):7.2f} "
            f"{med(m.window / b.window for m, b in pairs):6.2f} "
            f"{med(1000 * m.cpu / max(1, m.requests) for m in measures):10.2f} "
            f"{max(m.max_in_flight for m in measures):13d} "
            f"{med(m.startup for m in measures):10.2f} "
            f"{min(m.requests for m in measures):8d}"
        )
    print(f"  rerun of the last stage run: wall {rerun.wall:.2f} s, requests {rerun.requests}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="only the 200 × 16 scenario")
    parser.add_argument(
        "--scenarios", default="200x16,4000x256", help="comma-separated ITEMSxCONCURRENCY"
    )
    parser.add_argument(
        "--paths", default="http,wire,wire-cold,litellm", help="stage paths to compare"
    )
    parser.add_argument("--rounds", type=int, default=5, help="alternated rounds per scenario")
    args = parser.parse_args()
    scenarios = ["200x16"] if args.quick else args.scenarios.split(",")
    paths = args.paths.split(",")
    by_path: dict[str, list[str]] = {}
    for name, transport in model_transports(ROOT / "conf").items():
        by_path.setdefault(transport, []).append(name)
    for transport, names in sorted(by_path.items()):
        print(f"conf/model/ configs on `{transport}`: {', '.join(names)}")
    for spec in scenarios:
        n, concurrency = (int(x) for x in spec.split("x"))
        scenario(n, concurrency, LATENCY_S, paths, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
