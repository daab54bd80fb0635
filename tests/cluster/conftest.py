"""A one-node SLURM cluster and a PostgreSQL server, each started once per test process.

The cluster tests skip, saying why, only where SLURM is not installed; a cluster that is
installed but does not come up fails them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cultureqa.testing.postgres import NoServer, PgServer, temporary_server
from cultureqa.testing.slurm_cluster import SLURMCTLD, SlurmCluster, available, one_node_cluster


@pytest.fixture(scope="session")
def slurm() -> Iterator[SlurmCluster]:
    why = available()
    if why is not None and SLURMCTLD in why:
        pytest.skip(f"no SLURM: {why}")
    with one_node_cluster() as cluster:
        yield cluster


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
