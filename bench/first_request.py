"""Process start to the first request of the real evaluate stage: CPU seconds and wall.

The stage runs against the project's fake OpenAI-compatible server in a fresh workspace; a
wrapper process patches aiohttp's request method so that the first request prints the process's
CPU time (user + sys, ``os.times``), the wall time since the parent started it, and which heavy
libraries are imported by then, and exits. One unmeasured run stores the wire route and the
benchmark's load first (``--cold`` leaves the user cache empty for every run instead). Prints
numbers with the load average beside each, asserts nothing.

    .venv/bin/python bench/first_request.py [--items 200] [--runs 5] [--transport wire] [--cold]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "CULTUREQA_BENCH_KEY"
HEAVY = ("pandas", "numpy", "pyarrow", "omegaconf", "scipy", "mlflow", "litellm")
WRAPPER = """
import os, sys, time, runpy
import aiohttp.client

async def first(self, *args, **kwargs):
    t = os.times()
    heavy = ",".join(m for m in {heavy!r} if m in sys.modules) or "-"
    wall = time.time() - float(os.environ["BENCH_T0"])
    sys.stderr.write(f"FIRST {{t.user + t.system:.3f}} {{wall:.3f}} {{heavy}}\\n")
    sys.stderr.flush()
    os._exit(0)

aiohttp.client.ClientSession._request = first
stage = sys.argv[1]
sys.path.insert(0, os.path.dirname(stage))
sys.argv = [stage, "--benchmark", "synthetic", "--model", "model"]
runpy.run_path(stage, run_name="__main__")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--transport", default="wire", choices=("wire", "http"))
    parser.add_argument("--cold", action="store_true", help="an empty user cache for every run")
    args = parser.parse_args()
    wrapper = WRAPPER.format(heavy=HEAVY)
    stage = str(ROOT / "stages" / "evaluate.py")
    key = KEY_ENV if args.transport == "wire" else None
    cpus, walls = [], []
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.jsonl"
        cmd = [sys.executable, "-m", "cultureqa.testing.fake_openai", "--latency", "0.2",
               "--log", str(log)]  # fmt: skip
        server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert server.stdout is not None
        base = f"http://127.0.0.1:{server.stdout.readline().split()[1]}/v1"
        try:
            extra = {KEY_ENV: "sk-bench", "CULTUREQA_CACHE_DIR": f"{tmp}/cache"}
            if not args.cold:  # the route and the load stored, as by a first run on a machine
                ws = make_api_workspace(ROOT, Path(tmp) / "warm", args.items, base, 16, key,
                                        transport=args.transport)  # fmt: skip
                full = [sys.executable, stage, "--benchmark", "synthetic", "--model", "model"]
                subprocess.run(full, cwd=ws, env={**stage_env(ws), **extra}, check=True,
                               capture_output=True)  # fmt: skip
            for k in range(args.runs):
                ws = make_api_workspace(ROOT, Path(tmp) / f"run{k}", args.items, base, 16, key,
                                        transport=args.transport)  # fmt: skip
                if args.cold:
                    extra["CULTUREQA_CACHE_DIR"] = f"{tmp}/cache{k}"
                env = {**stage_env(ws), **extra, "BENCH_T0": repr(time.time())}
                done = subprocess.run([sys.executable, "-c", wrapper, stage], cwd=ws, env=env,
                                      capture_output=True, text=True)  # fmt: skip
                line = next((x for x in done.stderr.splitlines() if x.startswith("FIRST")), None)
                if line is None:
                    raise RuntimeError(f"no request reached the server:\n{done.stderr[-3000:]}")
                _, cpu, wall, heavy = line.split()
                cpus.append(float(cpu))
                walls.append(float(wall))
                print(f"run {k}: CPU {cpu} s, wall {wall} s, heavy imported: {heavy}, "
                      f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
        finally:
            os.kill(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
    cache = "empty user cache" if args.cold else "route and load stored"
    print(f"{args.transport}, {args.items} items, {cache}: median CPU "
          f"{statistics.median(cpus):.3f} s, wall {statistics.median(walls):.3f} s "
          f"over {args.runs} runs")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
