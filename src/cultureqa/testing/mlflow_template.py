"""A new, empty MLflow SQLite store made once per test process and copied for every later one.

Tests that run the track stages in-process each point MLflow at a fresh ``mlflow.db`` in their
own temporary project. MLflow creates its tables there by running every Alembic migration, about
1.4 CPU s per database, paid again by each such test. :func:`install` makes the test process do
that once, into a template, with MLflow's own ``_initialize_tables``; every later empty SQLite
database receives the template's pages through SQLite's backup API, the same tables, indexes and
``alembic_version`` MLflow would have written. A database that already holds any table (an older
schema to upgrade, a store a test prepared) and every other backend (PostgreSQL) go through
MLflow's own code as before. Stage processes and the pipeline never use this: it is installed by
``tests/conftest.py`` into the pytest process alone, and only once MLflow is imported there.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

TARGET = "mlflow.store.db.utils"
"""The MLflow module whose ``_initialize_tables`` the store calls on a database without tables."""

copies = {"template_built": 0, "copied": 0, "migrated_by_mlflow": 0}
"""What this process did, for a test of this module or a look in a debugger."""

_template: Path | None = None


def _sqlite_file(url: Any) -> str | None:
    """The file of a SQLite URL; None for another backend or an in-memory database."""
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    return str(url.database)


def _patch(module: ModuleType) -> None:
    original: Callable[[Any], None] = module._initialize_tables
    if getattr(original, "from_template", False):
        return

    def initialize_tables(engine: Any) -> None:
        global _template
        import sqlalchemy

        if _sqlite_file(engine.url) is None or sqlalchemy.inspect(engine).get_table_names():
            copies["migrated_by_mlflow"] += 1
            original(engine)
            return
        if _template is None:
            path = Path(tempfile.mkdtemp(prefix="mlflow-template-")) / "mlflow.db"
            template_engine = sqlalchemy.create_engine(f"sqlite:///{path}")
            try:
                original(template_engine)
            finally:
                template_engine.dispose()
            _template, copies["template_built"] = path, copies["template_built"] + 1
        raw = engine.raw_connection()
        try:
            with sqlite3.connect(_template) as source:
                source.backup(raw.driver_connection)
        finally:
            raw.close()
        copies["copied"] += 1

    initialize_tables.from_template = True  # type: ignore[attr-defined]
    initialize_tables.mlflow = original  # type: ignore[attr-defined]  # for the schema test
    module._initialize_tables = initialize_tables  # type: ignore[attr-defined]


class _Finder(importlib.abc.MetaPathFinder):
    """Runs :func:`_patch` right after MLflow's module is executed, wherever it is imported."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            _patch(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Patch MLflow's table creation in this process, now or when MLflow is first imported."""
    if TARGET in sys.modules:
        _patch(sys.modules[TARGET])
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
