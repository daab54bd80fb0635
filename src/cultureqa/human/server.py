"""Start Label Studio from its own environment (``.ls-venv``, ``make labelstudio``).

``python -m cultureqa.human.server --port 8080 --data-dir .labelstudio`` (what ``make
labelstudio-start`` runs) starts ``label-studio`` on loopback with SQLite in the data folder. On a
fresh folder it creates the first user from ``LABEL_STUDIO_USERNAME`` / ``LABEL_STUDIO_PASSWORD``
with the API token ``LABEL_STUDIO_USER_TOKEN`` (40 hex characters); legacy tokens are switched on
(``LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN``), which Label Studio 1.23 disables by default for new
organizations. Secrets only come from the environment. The tests start it with the same code.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[3]
LS_BIN = ROOT / ".ls-venv" / "bin" / "label-studio"
REQUIRED = ("LABEL_STUDIO_USERNAME", "LABEL_STUDIO_PASSWORD", "LABEL_STUDIO_USER_TOKEN")


class ServerError(RuntimeError):
    """Label Studio is not installed, lacks its settings, or did not come up."""


def environment(port: int, data_dir: Path) -> dict[str, str]:
    """The server's environment: the caller's, plus data folder, loopback host, legacy tokens."""
    env = dict(os.environ)
    missing = [k for k in REQUIRED if not env.get(k)]
    if missing:
        raise ServerError(f"set {', '.join(missing)} first (docs/human-validation.md)")
    if not re.fullmatch(r"[0-9a-f]{40}", env["LABEL_STUDIO_USER_TOKEN"]):
        raise ServerError("LABEL_STUDIO_USER_TOKEN must be 40 hex characters")
    env.update(
        LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN="true",
        LABEL_STUDIO_BASE_DATA_DIR=str(data_dir),
        LABEL_STUDIO_HOST=f"http://127.0.0.1:{port}",
        SENTRY_DSN="",
        FRONTEND_SENTRY_DSN="",
        COLLECT_ANALYTICS="false",
    )
    return env


def command(port: int, data_dir: Path) -> list[str]:
    """The ``label-studio start`` command line (no browser, loopback, SQLite in ``data_dir``)."""
    if not LS_BIN.exists():
        raise ServerError(f"{LS_BIN} is missing: run `make labelstudio` first")
    return [
        str(LS_BIN),
        "start",
        "--no-browser",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        "--internal-host",
        "127.0.0.1",
        "--username",
        os.environ.get("LABEL_STUDIO_USERNAME", ""),
        "--password",
        os.environ.get("LABEL_STUDIO_PASSWORD", ""),
        "--user-token",
        os.environ.get("LABEL_STUDIO_USER_TOKEN", ""),
    ]


def wait_healthy(url: str, process: subprocess.Popen[bytes] | None, timeout: float) -> float:
    """Poll ``/health`` until it answers 200; seconds waited. Raises if the process dies first."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if process is not None and process.poll() is not None:
            raise ServerError(f"label-studio exited with code {process.returncode} before /health")
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return time.monotonic() - start
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise ServerError(f"label-studio did not answer {url}/health within {timeout:.0f} s")


def add_user(data_dir: Path, port: int, username: str, password: str, token: str) -> None:
    """Create another annotator account (``label-studio init`` adds a user) with its own token."""
    env = environment(port, data_dir)
    done = subprocess.run(
        [
            str(LS_BIN),
            "init",
            "--data-dir",
            str(data_dir),
            "--username",
            username,
            "--password",
            password,
            "--user-token",
            token,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ServerError(f"label-studio user {username}: {done.stderr.strip()[-400:]}")


def main(argv: list[str] | None = None) -> int:
    """Run the server in the foreground until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".labelstudio")
    args = parser.parse_args(argv)
    try:
        env = environment(args.port, args.data_dir.resolve())
        cmd = command(args.port, args.data_dir.resolve())
    except ServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.data_dir.mkdir(parents=True, exist_ok=True)
    print(f"Label Studio on http://127.0.0.1:{args.port} (data in {args.data_dir}); Ctrl-C stops")
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
