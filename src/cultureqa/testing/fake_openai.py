"""A fake OpenAI-compatible chat server on 127.0.0.1 with latency and fault injection.

Used by integration tests and ``bench/``: it speaks ``POST /v1/chat/completions`` like vLLM or
OpenAI, replies through a user function, injects 429 (with Retry-After), 500, hangs, malformed
JSON and empty content at configured rates, and logs every request so tests can prove what a
client did or did not send.

It also speaks a minimal OpenAI Batch API (``POST /v1/files``, ``POST /v1/batches``,
``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``): each line of an uploaded JSONL file is
answered through the same responder and fault plan, the batch reports ``in_progress`` for
``batch_polls`` retrievals and then ``completed``, and ``batch_ops`` logs every call.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[list[dict[str, Any]]], str]


class _Server(ThreadingHTTPServer):
    # socketserver's default backlog of 5 drops connections under load (1 s SYN retries),
    # which would make the server, not the client, the bottleneck of a throughput bench.
    request_queue_size = 256
    daemon_threads = True


@dataclass
class FaultPlan:
    """Probabilities of each injected fault (drawn per request from a seeded RNG)."""

    rate_limit: float = 0.0
    server_error: float = 0.0
    hang: float = 0.0
    malformed: float = 0.0
    empty: float = 0.0
    bad_request: float = 0.0
    retry_after_s: float = 0.05
    hang_s: float = 5.0
    seed: int = 0
    omit_usage: bool = False
    """Replies carry no ``usage`` block, as older vLLM, llama.cpp's server, proxies and streams
    without ``stream_options`` send them; the server still bills what it counts (``billed``)."""
    fail_status: int = 0
    """When set (e.g. 401, 404), every request not scripted gets this HTTP status and an
    OpenAI-style error body: a wrong key, model name or endpoint."""
    script: list[str] = field(default_factory=list)
    """Explicit fault per request, in order ("ok", "429", "500", "hang", "malformed", "empty",
    "400", "401", "403", "404"); once exhausted, the probabilities apply."""


@dataclass
class RequestRecord:
    """One request as the server saw it."""

    t_start: float
    t_end: float
    messages: list[dict[str, Any]]
    outcome: str


class FakeOpenAIServer:
    """Threaded HTTP server; use as a context manager or start()/stop()."""

    def __init__(
        self,
        responder: Responder = lambda messages: "A",
        latency_s: float = 0.0,
        faults: FaultPlan | None = None,
        port: int = 0,
        log_path: str | None = None,
    ) -> None:
        self.responder = responder
        self._log = open(log_path, "a", encoding="utf-8") if log_path else None  # noqa: SIM115
        self.latency_s = latency_s
        self.faults = faults or FaultPlan()
        self.records: list[RequestRecord] = []
        self.billed: list[dict[str, int]] = []
        """Token usage of every 200 reply, as the server counts it, whether it sends it or not."""
        self.outcomes: list[str] = []
        """Fault drawn for each request, in arrival order (hung requests included at once)."""
        self._rng = random.Random(self.faults.seed)
        self._lock = threading.Lock()
        self.batch_polls = 0
        """Retrievals a batch answers ``in_progress`` before it is ``completed``."""
        self.batch_ops: list[tuple[str, str]] = []
        """Batch API calls in order: ("upload" | "create" | "retrieve" | "content", object id)."""
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._in_flight = 0
        self._hits = 0
        self.max_in_flight = 0
        self._httpd = _Server(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def hits(self) -> int:
        """Chat requests received so far, counted on arrival.

        ``records`` gets its entry only after the reply is written, so a client that has its
        reply can still find the last record missing; count requests here instead.
        """
        with self._lock:
            return self._hits

    @property
    def api_base(self) -> str:
        """Base URL to give litellm (``.../v1``)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FakeOpenAIServer:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _write_log(self, record: RequestRecord) -> None:
        if self._log is None:
            return
        content = json.dumps(record.messages, sort_keys=True)
        line = {
            "t_start": time.time() - (time.perf_counter() - record.t_start),
            "duration_s": record.t_end - record.t_start,
            "outcome": record.outcome,
            "request_sha": hashlib.sha256(content.encode()).hexdigest()[:16],
        }
        self._log.write(json.dumps(line) + "\n")
        self._log.flush()

    def _next_fault(self) -> str:
        with self._lock:
            index = len(self.records) + self._in_flight - 1
            if 0 <= index < len(self.faults.script):
                return self.faults.script[index]
            draw = self._rng.random()
        f = self.faults
        if f.fail_status:
            return str(f.fail_status)
        for name, p in (
            ("429", f.rate_limit),
            ("500", f.server_error),
            ("hang", f.hang),
            ("malformed", f.malformed),
            ("empty", f.empty),
            ("400", f.bad_request),
        ):
            if draw < p:
                return name
            draw -= p
        return "ok"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
            # Headers and body go out as two writes; with Nagle's algorithm the body then waits
            # for the client's delayed ACK (~40 ms), a stall real servers (uvicorn, vLLM) avoid.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # silence stderr access logs
                return

            def do_GET(self) -> None:
                server._batch_get(self)

            def do_POST(self) -> None:
                if self.path.rstrip("/").endswith(("/files", "/batches")):
                    return server._batch_post(self)
                t0 = time.perf_counter()
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server._hits += 1
                    server._in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server._in_flight)
                outcome = server._next_fault()
                with server._lock:
                    server.outcomes.append(outcome)
                try:
                    server._serve(self, body, outcome)
                finally:
                    with server._lock:
                        server._in_flight -= 1
                        record = RequestRecord(
                            t0, time.perf_counter(), body.get("messages", []), outcome
                        )
                        server.records.append(record)
                        server._write_log(record)

        return Handler

    def _serve(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], outcome: str) -> None:
        if outcome == "hang":
            time.sleep(self.faults.hang_s)
            return _send(handler, 504, {"error": {"message": "hung"}})
        time.sleep(self.latency_s)
        if outcome == "429":
            headers = {"Retry-After": str(self.faults.retry_after_s)}
            return _send(handler, 429, {"error": {"message": "rate limited"}}, headers)
        if outcome == "500":
            return _send(handler, 500, {"error": {"message": "boom"}})
        if outcome in _ERROR_MESSAGES:
            return _send(handler, int(outcome), {"error": {"message": _ERROR_MESSAGES[outcome]}})
        if outcome == "malformed":
            raw = b'{"id": "x", "choices": [ {"message": '
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(raw)))
            handler.end_headers()
            handler.wfile.write(raw)
            return None
        text = "" if outcome == "empty" else self.responder(body.get("messages", []))
        completion = _completion(body, text)
        with self._lock:
            self.billed.append(dict(completion["usage"]))
        if self.faults.omit_usage:
            del completion["usage"]
        return _send(handler, 200, completion)

    # --- minimal Batch API ----------------------------------------------------------------------

    def _batch_post(self, handler: BaseHTTPRequestHandler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("Content-Length", 0)))
        with self._lock:
            number = next(self._ids)
        if handler.path.rstrip("/").endswith("/files"):
            file_id = f"file-{number}"
            self.files[file_id] = _multipart_file(handler.headers.get("Content-Type", ""), raw)
            self.batch_ops.append(("upload", file_id))
            return _send(handler, 200, _file_object(file_id, len(self.files[file_id])))
        body = json.loads(raw or b"{}")
        batch_id = f"batch-{number}"
        lines = self.files[body["input_file_id"]].decode("utf-8").splitlines()
        answers = [self._batch_line(json.loads(line)) for line in lines if line.strip()]
        output_id, error_id = f"file-{number}-out", f"file-{number}-err"
        ok = [a for a in answers if a["error"] is None]
        self.files[output_id] = "".join(json.dumps(a) + "\n" for a in ok).encode()
        self.files[error_id] = "".join(json.dumps(a) + "\n" for a in answers if a["error"]).encode()
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": body.get("endpoint"),
            "input_file_id": body["input_file_id"], "completion_window": "24h",
            "status": "in_progress", "created_at": int(time.time()), "polls": 0,
            "output_file_id": output_id, "error_file_id": error_id,
            "request_counts": {"total": len(answers), "completed": len(ok),
                               "failed": len(answers) - len(ok)},
        }  # fmt: skip
        self.batch_ops.append(("create", batch_id))
        return _send(handler, 200, self._batch_view(batch_id, advance=False))

    def _batch_line(self, line: dict[str, Any]) -> dict[str, Any]:
        """One output line: the completion, or the HTTP error the fault plan draws for it."""
        with self._lock:  # the script counts batch lines like requests, in arrival order
            index = len(self.outcomes)
        script = self.faults.script
        outcome = script[index] if index < len(script) else self._next_fault()
        with self._lock:
            self.outcomes.append(outcome)
        answer: dict[str, Any] = {"id": f"req-{line['custom_id']}", "custom_id": line["custom_id"]}
        if outcome in ("ok", "empty"):
            text = "" if outcome == "empty" else self.responder(line["body"].get("messages", []))
            body = _completion(line["body"], text)
            with self._lock:
                self.billed.append(dict(body["usage"]))
            if self.faults.omit_usage:
                del body["usage"]
            return answer | {"response": {"status_code": 200, "body": body}, "error": None}
        status = int(outcome) if outcome.isdigit() else 500
        error = {"code": str(status), "message": _ERROR_MESSAGES.get(outcome, outcome)}
        return answer | {"response": {"status_code": status, "body": {"error": error}},
                         "error": error}  # fmt: skip

    def _batch_view(self, batch_id: str, advance: bool) -> dict[str, Any]:
        batch = self.batches[batch_id]
        if advance:
            batch["polls"] += 1
            if batch["polls"] > self.batch_polls:
                batch["status"] = "completed"
        view = {k: v for k, v in batch.items() if k != "polls"}
        if batch["status"] != "completed":
            view.update(output_file_id=None, error_file_id=None)
        return view

    def _batch_get(self, handler: BaseHTTPRequestHandler) -> None:
        parts = handler.path.strip("/").split("/")
        if len(parts) >= 3 and parts[-2] == "batches" and parts[-1] in self.batches:
            self.batch_ops.append(("retrieve", parts[-1]))
            return _send(handler, 200, self._batch_view(parts[-1], advance=True))
        if len(parts) >= 4 and parts[-1] == "content" and parts[-2] in self.files:
            self.batch_ops.append(("content", parts[-2]))
            raw = self.files[parts[-2]]
            handler.send_response(200)
            handler.send_header("Content-Type", "application/octet-stream")
            handler.send_header("Content-Length", str(len(raw)))
            handler.end_headers()
            handler.wfile.write(raw)
            return None
        return _send(handler, 404, {"error": {"message": f"no such object: {handler.path}"}})


def _multipart_file(content_type: str, raw: bytes) -> bytes:
    """The ``file`` part of a multipart/form-data upload (the OpenAI SDK's file upload)."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    for part in message.iter_parts():
        if part.get_param("name", header="content-disposition") == "file":
            payload = part.get_payload(decode=True)
            return payload if isinstance(payload, bytes) else b""
    raise ValueError("upload without a 'file' part")


def _file_object(file_id: str, size: int) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "bytes": size, "created_at": int(time.time()),
            "filename": "batch.jsonl", "purpose": "batch", "status": "processed"}  # fmt: skip


_ERROR_MESSAGES = {
    "400": "bad request",
    "401": "Incorrect API key provided",
    "403": "You do not have access to this model",
    "404": "The model does not exist",
}


def _completion(body: dict[str, Any], text: str) -> dict[str, Any]:
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    completion_tokens = len(text.split())
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _send(
    handler: BaseHTTPRequestHandler,
    status: int,
    payload: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> None:
    raw = json.dumps(payload).encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(raw)
    except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout): fine
        pass


def model_config(name: str, server: FakeOpenAIServer, temperature: float = 0.0) -> dict[str, Any]:
    """A ``conf/model`` entry that sends to ``server`` through litellm (key in CULTUREQA_TEST_KEY).

    What the build tests give the LLM generator, the judge panel and the translator.
    """
    return {
        "id": name, "backend": "litellm", "batch_size": 1, "concurrency": 4,
        "decoding": {"temperature": temperature, "max_tokens": 512, "seed": None},
        "options": {"litellm_model": f"openai/{name}", "api_base": server.api_base,
                    "api_key_env": "CULTUREQA_TEST_KEY", "drop_params": True},
        "retry": {"attempts": 2, "initial_wait_s": 0.01, "max_wait_s": 0.05, "timeout_s": 10.0},
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT: ``python -m cultureqa.testing.fake_openai --latency 0.2``.

    Prints ``READY <port>`` once listening, so a parent process can read the port.
    """
    parser = argparse.ArgumentParser(description="fake OpenAI-compatible chat server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--reply", default="A", help="content of every successful reply")
    parser.add_argument("--log", default=None, help="append one JSON line per request here")
    for fault in ("rate-limit", "server-error", "hang", "malformed", "empty", "bad-request"):
        parser.add_argument(f"--{fault}", type=float, default=0.0, help="probability")
    parser.add_argument("--hang-s", type=float, default=5.0)
    parser.add_argument("--retry-after-s", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fail-status", type=int, default=0, help="answer every request so")
    parser.add_argument("--no-usage", action="store_true", help="send replies without usage")
    args = parser.parse_args(argv)
    plan = FaultPlan(
        rate_limit=args.rate_limit,
        server_error=args.server_error,
        hang=args.hang,
        malformed=args.malformed,
        empty=args.empty,
        bad_request=args.bad_request,
        retry_after_s=args.retry_after_s,
        hang_s=args.hang_s,
        seed=args.seed,
        fail_status=args.fail_status,
        omit_usage=args.no_usage,
    )
    reply = args.reply
    server = FakeOpenAIServer(lambda m: reply, args.latency, plan, args.port, args.log)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server.start()
    print(f"READY {server.api_base.rsplit(':', 1)[1].split('/')[0]}", flush=True)
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
