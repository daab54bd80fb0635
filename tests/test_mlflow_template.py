"""The test processes' MLflow template store: the same database MLflow's migrations write."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cultureqa.testing import mlflow_template


def _schema(path: Path) -> tuple[list[tuple[str, str, list[str]]], list[tuple[str]]]:
    """Every table and index with its definition's lines sorted: MLflow's own migrations list a
    table's constraints in an order that differs from one run to the next."""
    with sqlite3.connect(path) as db:
        objects = db.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        version = db.execute("SELECT version_num FROM alembic_version").fetchall()
    lines = [(kind, name, sorted(line.strip().rstrip(",") for line in (sql or "").splitlines()))
             for kind, name, sql in objects]  # fmt: skip
    return lines, version


def test_a_new_store_is_a_copy_with_mlflows_own_schema_and_works(tmp_path: Path) -> None:
    import sqlalchemy
    from mlflow.store.db import utils
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    assert getattr(utils._initialize_tables, "from_template", False), "conftest installs it"
    reference = tmp_path / "reference.db"
    engine = sqlalchemy.create_engine(f"sqlite:///{reference}")
    utils._initialize_tables.mlflow(engine)  # MLflow's migrations, unpatched
    engine.dispose()

    copied = mlflow_template.copies["copied"]
    store = SqlAlchemyStore(f"sqlite:///{tmp_path / 'mlflow.db'}", (tmp_path / "art").as_uri())
    assert mlflow_template.copies["copied"] == copied + 1
    assert _schema(tmp_path / "mlflow.db") == _schema(reference)
    assert _schema(reference)[1], "MLflow stamped its Alembic revision"

    experiment = store.create_experiment("e")
    run = store.create_run(experiment, "u", 0, [], "r")
    from mlflow.entities import Metric

    store.log_metric(run.info.run_id, Metric("accuracy", 0.5, 0, 0))
    assert store.get_run(run.info.run_id).data.metrics == {"accuracy": 0.5}


def test_a_database_that_holds_a_table_goes_through_mlflow_and_keeps_it(tmp_path: Path) -> None:
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    path = tmp_path / "mlflow.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
        db.execute("INSERT INTO notes VALUES ('kept')")
    before = dict(mlflow_template.copies)
    SqlAlchemyStore(f"sqlite:///{path}", (tmp_path / "art").as_uri())
    assert mlflow_template.copies["copied"] == before["copied"]
    assert mlflow_template.copies["migrated_by_mlflow"] == before["migrated_by_mlflow"] + 1
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT text FROM notes").fetchall() == [("kept",)]
        assert "experiments" in {r[0] for r in db.execute("SELECT name FROM sqlite_master")}


@pytest.mark.parametrize("url", ["postgresql://u@h/db", "sqlite://", "sqlite:///:memory:"])
def test_other_backends_and_memory_databases_are_not_copied(url: str) -> None:
    import sqlalchemy

    assert mlflow_template._sqlite_file(sqlalchemy.engine.make_url(url)) is None
    assert mlflow_template._sqlite_file(sqlalchemy.engine.make_url("sqlite:////tmp/m.db"))
