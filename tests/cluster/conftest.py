"""A one-node SLURM cluster, started once per test process (PostgreSQL: ``tests/conftest.py``).

The cluster tests skip, saying why, only where SLURM is not installed (the accounting test:
where slurmdbd or MariaDB is not); a cluster that is installed but does not come up fails them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cultureqa.testing.slurm_cluster import (
    MARIADBD,
    SLURMCTLD,
    SLURMDBD,
    SlurmCluster,
    available,
    one_node_cluster,
)


@pytest.fixture(scope="session")
def slurm() -> Iterator[SlurmCluster]:
    why = available()
    if why is not None and SLURMCTLD in why:
        pytest.skip(f"no SLURM: {why}")
    with one_node_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def slurm_accounting() -> Iterator[SlurmCluster]:
    """The same cluster keeping SLURM's accounting in slurmdbd over MariaDB (``sacct``)."""
    why = available(accounting=True)
    if why is not None and any(name in why for name in (SLURMCTLD, SLURMDBD, MARIADBD)):
        pytest.skip(f"no SLURM accounting: {why}")
    with one_node_cluster(accounting=True) as cluster:
        yield cluster
