"""Losing the MLflow tracking server: a bounded, configured wait and one line; outputs kept.

MLflow's own retry policy (7 retries, backoff factor 2, 120 s per request) stalled a track stage
for 4 min 19 s and ended in 135 lines of chained tracebacks. Here the stage runs against a port
with no server, and against a server that answers ``/health`` and is then killed before the first
logging request; both end within the configured bound with one ``error:`` line.
"""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from omegaconf import OmegaConf

from cultureqa.core.provenance import file_md5
from cultureqa.runs.tracking_server import wait_bound
from tests.test_scale_out import TRACK, _stage, _tracked_workspace

EVAL = Path("data/eval/synthetic/baselines.random/predictions.parquet")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _workspace(tmp_path: Path, uri: str, timeout_s: int = 2, retries: int = 1) -> Path:
    ws = tmp_path / "ws"
    _tracked_workspace(ws, uri)
    params = OmegaConf.load(ws / "params.yaml")
    params.tracking.timeout_s, params.tracking.retries = timeout_s, retries
    OmegaConf.save(params, ws / "params.yaml")
    return ws


def _assert_one_line(stderr: str, uri: str, reason: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"error: MLflow tracking server {uri} did not answer within ")
    assert reason in lines[0] and "-S tracking=sqlite" in lines[0]
    assert "the evaluation outputs are kept" in lines[0] and "Traceback" not in stderr


def test_no_server_on_the_port_fails_in_seconds_with_one_line(tmp_path: Path) -> None:
    uri = f"http://127.0.0.1:{_free_port()}"
    ws = _workspace(tmp_path, uri)
    before = file_md5(ws / EVAL)
    start = time.monotonic()
    done = _stage(ws, *TRACK)
    elapsed = time.monotonic() - start
    assert done.returncode == 2
    _assert_one_line(done.stderr, uri, "connection refused")
    assert elapsed < 60, elapsed  # process start and imports; the refusal itself is instant
    assert file_md5(ws / EVAL) == before  # the evaluation is untouched
    assert not (ws / "data" / "track").exists()  # no marker: DVC reruns the stage next time


class _DiesAfterHealth(BaseHTTPRequestHandler):
    """Answers ``/health``, then the server is shut down: the next request finds no one."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"OK")
        if self.path.rstrip("/").endswith("/health"):
            threading.Thread(target=_kill, args=(self.server,), daemon=True).start()

    def log_message(self, *args: object) -> None:
        return


def _kill(server: object) -> None:
    assert isinstance(server, ThreadingHTTPServer)
    server.shutdown()
    server.server_close()  # the port refuses from now on, as a killed server's does


def test_a_server_killed_mid_run_fails_within_the_bound_with_one_line(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DiesAfterHealth)
    uri = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    ws = _workspace(tmp_path, uri, timeout_s=2, retries=2)
    try:
        start = time.monotonic()
        done = _stage(ws, *TRACK)
        elapsed = time.monotonic() - start
    finally:
        server.server_close()
    assert done.returncode == 2
    _assert_one_line(done.stderr, uri, "")
    # the retries sleep 1 + 2 s; process start and imports take the rest
    assert elapsed < 60 + wait_bound(2, 2), elapsed
    assert (ws / EVAL).is_file() and not (ws / "data" / "track").exists()
