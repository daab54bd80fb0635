"""Evaluation throughput against a latency-bound OpenAI-compatible server (DESIGN.md §11).

Runs the real evaluate stage as a user would (a whole `python stages/evaluate.py` process,
start-up included) against the fake server started as a separate process (stopped by PID), then
reruns it to show that answered requests are never sent again. Prints ratios, asserts nothing.

    .venv/bin/python bench/eval_throughput.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cultureqa.testing.workspace import make_api_workspace, stage_env

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def start_server(latency: float, log: Path, extra: list[str]) -> tuple[subprocess.Popen[str], str]:
    cmd = [PY, "-m", "cultureqa.testing.fake_openai", "--latency", str(latency), "--log", str(log)]
    proc = subprocess.Popen([*cmd, *extra], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if line[:1] != ["READY"]:
        proc.kill()
        raise RuntimeError(f"fake server did not start: {line}")
    return proc, f"http://127.0.0.1:{line[1]}/v1"


def stop_server(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=10)


def run_eval(ws: Path) -> tuple[float, float]:
    """Wall time of one evaluate process, and its start on the server log's clock."""
    env = stage_env(ws)
    cmd = [PY, str(ROOT / "stages" / "evaluate.py"), "--benchmark", "synthetic", "--model", "model"]
    started_at = time.time()
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"evaluate failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - start, started_at


def server_stats(log: Path, since: int) -> dict[str, float]:
    lines = [json.loads(x) for x in log.read_text().splitlines()[since:]] if log.exists() else []
    if not lines:
        return {"requests": 0, "window": 0.0, "max_in_flight": 0, "mean_in_flight": 0.0, "first": 0}
    events = sorted(
        [(r["t_start"], 1) for r in lines] + [(r["t_start"] + r["duration_s"], -1) for r in lines]
    )
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    window = events[-1][0] - events[0][0]
    busy = sum(r["duration_s"] for r in lines)
    return {
        "requests": len(lines),
        "window": window,
        "max_in_flight": peak,
        "mean_in_flight": busy / window if window else 0.0,
        "first": events[0][0],
    }


def scenario(n: int, concurrency: int, latency: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws, log = Path(tmp), Path(tmp) / "server.jsonl"
        proc, api_base = start_server(latency, log, [])
        try:
            make_api_workspace(ROOT, ws, n, api_base, concurrency)
            wall, started_at = run_eval(ws)
            first = server_stats(log, 0)
            seen = int(first["requests"])
            rewall, _ = run_eval(ws)
            second = server_stats(log, seen)
        finally:
            stop_server(proc)
    ideal = n * latency / concurrency
    print(f"\n{n} items, latency {latency * 1000:.0f} ms, concurrency {concurrency}")
    print(f"  whole-process wall        {wall:7.2f} s   ideal N·latency/concurrency {ideal:6.2f} s")
    print(f"  whole-process efficiency  {ideal / wall:7.3f}")
    window = first["window"]
    print(f"  server active window      {window:7.2f} s   efficiency {ideal / window:.3f}")
    startup = first["first"] - started_at
    print(
        f"  start-up to first request {startup:7.2f} s   "
        f"after last response {wall - startup - window:6.2f} s"
    )
    print(f"  requests seen             {first['requests']:7d}")
    print(
        f"  in flight max / mean      {first['max_in_flight']:7d} / {first['mean_in_flight']:.1f}"
    )
    print(f"  rerun wall                {rewall:7.2f} s   requests {second['requests']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="only the 200-item scenario")
    args = parser.parse_args()
    start = time.perf_counter()
    subprocess.run(
        [PY, "-c", "import litellm"],
        check=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    print(f"reference: `import litellm` alone takes {time.perf_counter() - start:.2f} s here")
    scenario(200, 16, 0.2)
    if not args.quick:
        scenario(2000, 32, 0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
