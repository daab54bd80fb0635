"""The stage error boundary: environment failures as one ``error: …`` line that says the fix.

Bugs keep their traceback; what a user can fix — a corrupt state database, a full disk, a folder
the stage may not write — becomes one line naming the file and the remedy, exit code 2. Outputs
are written to a temp file and renamed (:mod:`cultureqa.io`), so earlier outputs are intact.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from pathlib import Path

from cultureqa.paths import project_root, state_dir
from cultureqa.store_errors import (
    StoreLocationError,
    StoreSchemaError,
    TeamCapMismatch,
    describe_pg_error,
)

SQLITE_HEADER = b"SQLite format 3\x00"

_UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS}
_WRITABLE_FIX = (
    "make {folder} writable, or set CULTUREQA_STATE_DIR to a writable folder for the response store"
)


OPENED: set[Path] = set()
"""SQLite files this process opened (the response store registers itself): an error line names
these, not every database the project has."""


def state_databases() -> dict[Path, str]:
    """The SQLite files a stage may open, with what moving one aside costs."""
    return {
        state_dir() / "responses.sqlite": (
            "then rerun; every answer is requested again (API calls are paid again)"
        ),
        project_root() / "mlflow.db": ("then `rm -r data/track && dvc repro` logs the runs again"),
    }


def _involved(exc: BaseException) -> dict[Path, str]:
    """The databases ``exc`` can come from: MLflow's for SQLAlchemy errors, else those opened."""
    known = state_databases()
    mlflow_db = project_root() / "mlflow.db"
    if _is_sqlalchemy_db_error(exc):
        return {mlflow_db: known[mlflow_db]}
    opened = {p.resolve() for p in OPENED}
    chosen = {p: cost for p, cost in known.items() if p.resolve() in opened}
    for path in sorted(opened - {p.resolve() for p in known}):  # a store at a custom path
        chosen[path] = known[state_dir() / "responses.sqlite"]
    return chosen or known


def is_sqlite_file(path: Path) -> bool:
    """True when ``path`` starts with the SQLite header (an empty file is a fresh database)."""
    with path.open("rb") as fh:
        head = fh.read(len(SQLITE_HEADER))
    return head in (b"", SQLITE_HEADER)


def integrity(path: Path) -> str:
    """SQLite's own consistency check (read-only): ``ok``, ``damaged``, or ``unknown``.

    ``unknown`` when the check itself could not run (a full disk leaves no room for its
    temporary pages, an I/O error, a lock): that says nothing about the file, so it is never
    reported as damage. Only a check that ran and found faults, or a file SQLite refuses to
    read as a database, is ``damaged``.
    """
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            rows = db.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        text = str(exc).lower()
        return "damaged" if "malformed" in text or "not a database" in text else "unknown"
    return "ok" if rows == [("ok",)] else "damaged"


def passes_quick_check(path: Path) -> bool:
    """Whether the integrity check ran and found nothing (see :func:`integrity`)."""
    return integrity(path) == "ok"


_DISK_FULL = ("disk is full", "no space left")
_IO_ERROR = ("disk i/o error",)

FULL_BELOW_BYTES = 1 << 20
"""Free space under which SQLite's "disk I/O error" is a full disk: its journal and temporary
pages need room, and with a few KB left it reports the failed write as I/O, not as full."""


def describe_database_error(exc: BaseException) -> str:
    """Which state database failed and how to fix it, from a sqlite3/SQLAlchemy error.

    A full disk or an I/O error is told apart from a damaged file: moving a healthy response
    store aside would make every answer be requested, and paid, again, so that advice is given
    only when the file is no database or SQLite's integrity check ran and failed.
    """
    message = str(getattr(exc, "orig", None) or exc).splitlines()[0]
    involved = _involved(exc)
    lowered = message.lower()
    for path, cost in involved.items():
        if path.is_file() and not is_sqlite_file(path):
            return (
                f"{path}: not an SQLite database ({message}); move it aside "
                f"(mv {path} {path}.corrupt) and {cost}"
            )
    if any(k in lowered for k in _DISK_FULL):
        folders = " ".join(sorted({str(p.parent) for p in involved}))
        return (
            f"{_listed(involved)}: {message}: the disk is full, the database is not damaged; "
            f"free space (df -h {folders}) and rerun: stored answers are kept, none is paid again"
        )
    if any(k in lowered for k in _IO_ERROR) and (free := _free_bytes(involved)) is not None:
        folders = " ".join(sorted({str(p.parent) for p in involved}))
        return (
            f"{_listed(involved)}: {message}: the disk is full ({free:,} bytes free), the "
            f"database is not damaged; free space (df -h {folders}) and rerun: stored answers "
            "are kept, none is paid again"
        )
    verdicts = {path: integrity(path) for path in involved if path.is_file()}
    for path, verdict in verdicts.items():
        if verdict == "damaged":
            return (
                f"{path}: damaged SQLite database ({message}; its integrity check fails); move "
                f"it aside (mv {path} {path}.corrupt) and {involved[path]}"
            )
    if any(k in lowered for k in _IO_ERROR):
        checked = "passes" if verdicts and set(verdicts.values()) == {"ok"} else "could not run"
        return (
            f"{_listed(involved)}: {message} (its integrity check {checked}); the disk or file "
            "system failed a read or write: check it (dmesg, df -h) and rerun; keep the "
            "database where it is: moving it aside would pay for every answer again"
        )
    if "readonly" in lowered or "unable to open" in lowered:
        for path in involved:
            folder = path.parent
            if (path.exists() and not os.access(path, os.W_OK)) or (
                folder.exists() and not os.access(folder, os.W_OK)
            ):
                return f"{path}: not writable ({message}); {_WRITABLE_FIX.format(folder=folder)}"
        folders = " or ".join(sorted({str(p.parent) for p in involved}))
        return f"{_listed(involved)}: {message}; {_WRITABLE_FIX.format(folder=folders)}"
    return f"{_listed(involved)}: database error: {message}"


def _free_bytes(paths: dict[Path, str]) -> int | None:
    """The least free space under the databases' folders, when below :data:`FULL_BELOW_BYTES`."""
    free = []
    for path in paths:
        folder = next((p for p in (path.parent, *path.parents) if p.exists()), None)
        if folder is not None:
            try:
                free.append(shutil.disk_usage(folder).free)
            except OSError:  # the file system cannot say: the line does not guess
                continue
    least = min(free, default=None)
    return least if least is not None and least < FULL_BELOW_BYTES else None


def _listed(paths: dict[Path, str]) -> str:
    return " or ".join(str(p) for p in paths)


def describe_os_error(exc: OSError) -> str:
    """A file-system failure as ``<file>: <what happened>; <fix>``."""
    where = exc.filename
    reason = exc.strerror or " ".join(str(a) for a in exc.args) or str(exc)
    text = " ".join(str(a) for a in exc.args) or str(exc)
    code = exc.errno if exc.errno is not None else _errno_in(text)
    if code == errno.ENOSPC:
        folder = Path(str(where)).parent
        return (
            f"{where}: no space left on device; free space (df -h {folder}) and rerun "
            "(outputs of earlier runs are intact)"
        )
    if code in _UNWRITABLE:
        if _within(Path(str(where)), state_dir()):
            return f"{where}: cannot write ({reason}); {_WRITABLE_FIX.format(folder=state_dir())}"
        return (
            f"{where}: cannot write ({reason}); make the folder writable and rerun "
            "(outputs of earlier runs are intact)"
        )
    return f"{where}: {reason}"


def _within(path: Path, folder: Path) -> bool:
    return path.resolve() == folder.resolve() or folder.resolve() in path.resolve().parents


def _errno_in(text: str) -> int | None:
    """The errno of an OSError that carries it only in its text (pyarrow: "[Errno 28] ...")."""
    for code in (errno.ENOSPC, *_UNWRITABLE):
        if f"[Errno {code}]" in text or os.strerror(code) in text:
            return code
    return None


def one_line(exc: BaseException) -> str | None:
    """The error line for an environment failure, or None when ``exc`` is a bug (traceback)."""
    if type(exc).__module__.startswith("psycopg"):  # the PostgreSQL response store
        return describe_pg_error(exc)
    if isinstance(exc, StoreLocationError | StoreSchemaError | TeamCapMismatch):
        return str(exc)
    if isinstance(exc, sqlite3.DatabaseError):
        return describe_database_error(exc)
    if _is_sqlalchemy_db_error(exc):
        return describe_database_error(exc)  # MLflow's SQLAlchemy store wraps sqlite3's error
    if isinstance(exc, OSError) and exc.filename is not None:
        return describe_os_error(exc)  # file-system failures name their file (io.atomic_path)
    return None


def _is_sqlalchemy_db_error(exc: BaseException) -> bool:
    cause: BaseException | None = exc
    while cause is not None:
        if type(cause).__module__.startswith("sqlalchemy") and isinstance(
            getattr(cause, "orig", None), sqlite3.DatabaseError
        ):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


class ConfigTypeError(TypeError):
    """A parameter has the wrong type; the message names the key.

    Defined here, below ``config`` and ``spend``, so both raise it without importing each other
    (``cultureqa.config`` re-exports it).
    """
