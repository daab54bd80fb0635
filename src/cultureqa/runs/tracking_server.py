"""A tracking server that is down costs a bounded, configured wait and one line, never minutes.

MLflow's HTTP client retries a refused or hanging request 7 times with a backoff factor of 2 and a
120 s timeout per attempt: a lost server stalled a track stage for over 4 minutes and ended in
pages of chained tracebacks. Here the wait is configured (``tracking.timeout_s``,
``tracking.retries``; ``-S tracking.timeout_s=30``) and handed to MLflow through its own
environment variables, the server's ``/health`` is asked once before anything is logged, and
whatever MLflow raises on the way (server killed mid-run) becomes one line naming the server, the
stage to rerun and the local fallback. Evaluation outputs are separate DVC outputs of other
stages, so they are kept.
"""

from __future__ import annotations

import logging
import os
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from cultureqa.core.config import ParamsError

TIMEOUT_S = 10
"""Default seconds one request to the tracking server may take (MLflow's own default: 120)."""
RETRIES = 2
"""Default retries of a failed request (MLflow's own default: 7, with backoff up to 2 minutes)."""
BACKOFF_FACTOR = 1
"""urllib3's backoff: sleeps of 1, 2, 4 … s between retries (no jitter, so the bound holds)."""


class TrackingServerError(ParamsError):
    """The tracking server did not answer within the configured wait (or refused the request)."""


def wait_bound(timeout_s: float, retries: int) -> float:
    """The longest a request can take: every attempt timing out, plus the backoff sleeps."""
    return float((retries + 1) * timeout_s + sum(BACKOFF_FACTOR * 2**k for k in range(retries)))


def bound_requests(tracking: Mapping[str, Any]) -> float:
    """Give MLflow's HTTP client the configured timeout and retries; return the wait bound.

    MLflow reads these variables at each request, so setting them here (before any tracking call
    of this process) applies to every request the stage makes.
    """
    timeout_s = int(tracking.get("timeout_s") or TIMEOUT_S)
    configured = tracking.get("retries")
    retries = int(configured) if configured is not None else RETRIES
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(timeout_s)
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = str(retries)
    os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"] = str(BACKOFF_FACTOR)
    os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_JITTER"] = "0"
    return wait_bound(timeout_s, retries)


def configured_bound() -> float:
    """The bound set by :func:`bound_requests` for this process (MLflow's defaults otherwise)."""
    timeout_s = int(os.environ.get("MLFLOW_HTTP_REQUEST_TIMEOUT", TIMEOUT_S))
    return wait_bound(timeout_s, int(os.environ.get("MLFLOW_HTTP_REQUEST_MAX_RETRIES", RETRIES)))


def message(uri: str, reason: str) -> str:
    """The one line a user gets: which server, why, the bound, and the two ways on."""
    stage = os.environ.get("DVC_STAGE")
    rerun = f"`dvc repro -s {stage}`" if stage else "rerun the track stage"
    return (
        f"MLflow tracking server {uri} did not answer within {configured_bound():.0f} s "
        f"({reason}); start it (mlflow server --host HOST --port PORT) and {rerun}, or log "
        "locally with -S tracking=sqlite; the evaluation outputs are kept "
        "(wait: tracking.timeout_s, tracking.retries)"
    )


def check_reachable(uri: str) -> None:
    """Ask the server's ``/health`` once, within the configured timeout; raise one line if not."""
    timeout_s = int(os.environ.get("MLFLOW_HTTP_REQUEST_TIMEOUT", TIMEOUT_S))
    try:
        with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=timeout_s):
            return
    except urllib.error.HTTPError as exc:
        reason = f"/health answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = _reason(exc)
    raise TrackingServerError(message(uri, reason))


@contextmanager
def server_errors(uri: str | None) -> Iterator[None]:
    """Turn what MLflow raises when a server goes away mid-run into :class:`TrackingServerError`.

    urllib3's per-retry WARNINGs are held back while the bounded retries run: the final line says
    what happened. Without a server (``uri`` None: the project's sqlite database) nothing changes.
    """
    if uri is None:
        yield
        return
    import requests
    from mlflow.exceptions import MlflowException

    pool = logging.getLogger("urllib3.connectionpool")
    level = pool.level
    pool.setLevel(logging.ERROR)
    try:
        yield
    except (MlflowException, requests.RequestException) as exc:
        raise TrackingServerError(message(uri, _reason(exc))) from None
    finally:
        pool.setLevel(level)


def _reason(exc: BaseException) -> str:
    """The innermost cause in a few words (``Connection refused``, ``timed out``, HTTP 503)."""
    text = str(exc)
    for marker in ("Connection refused", "timed out", "Max retries exceeded", "Name or service"):
        if marker in text:
            return "connection refused" if marker == "Connection refused" else marker.lower()
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)[:120]
    return text.splitlines()[0][:120] if text else type(exc).__name__
