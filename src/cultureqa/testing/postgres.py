"""A real, throwaway PostgreSQL server for tests and ``bench/`` (pgserver's binary, no install).

pgserver (a dev dependency) ships the server in its wheel; :func:`temporary_server` starts one on
a Unix socket inside a fresh temp folder (local only, like loopback), and stops and deletes it
after. Each caller takes databases of its own with :meth:`PgServer.database`.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class NoServer(RuntimeError):
    """No PostgreSQL server can be started here (pgserver missing, or initdb/pg_ctl failed)."""


@dataclass
class PgServer:
    """The running server: its data folder, and how to stop and start it again."""

    data: Path
    server: Any

    @property
    def uri(self) -> str:
        """URL of the ``postgres`` database (user ``postgres``, Unix socket)."""
        return str(self.server.get_uri())

    def database(self) -> str:
        """A fresh, empty database on this server: its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.uri, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.uri.replace("/postgres?", f"/{name}?", 1)

    def stop(self) -> None:
        """Stop the server now (``pg_ctl stop -m fast``: the server closes open connections)."""
        from pgserver._commands import pg_ctl  # type: ignore[attr-defined]

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.data, user=self.server.system_user)

    def start(self) -> None:
        """Start it again on the same data folder and socket (the rows survive)."""
        self.server.ensure_postgres_running()


@contextlib.contextmanager
def temporary_server() -> Iterator[PgServer]:
    """A server in a new temp folder, stopped and deleted on exit; :class:`NoServer` if none."""
    try:
        with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set" (harmless)
            warnings.simplefilter("ignore")
            import pgserver.postgres_server as pgserver
    except ImportError as exc:
        raise NoServer(f"pgserver is not installed ({exc}); make setup installs it") from exc
    data = Path(tempfile.mkdtemp(prefix="cqpg"))  # short: a Unix socket path has 107 bytes
    try:
        server = pgserver.get_server(data, cleanup_mode="stop")
    except Exception as exc:  # pgserver raises subprocess/assertion errors when initdb fails
        shutil.rmtree(data, ignore_errors=True)
        raise NoServer(f"pgserver could not start a server here ({exc})") from exc
    try:
        yield PgServer(data, server)
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)
