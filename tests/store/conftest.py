"""A real PostgreSQL server for the store tests: one per test process, a database per test.

Tests skip, saying why, only when no server can be started here (:class:`NoServer`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cultureqa.testing.postgres import NoServer, PgServer, temporary_server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    try:
        with temporary_server() as server:
            yield server
    except NoServer as exc:
        pytest.skip(f"no PostgreSQL server: {exc}")


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A fresh database on the session's server."""
    return pg_server.database()
