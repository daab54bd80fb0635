"""The stage error boundary: environment failures as one ``error: …`` line that says the fix.

Bugs keep their traceback; what a user can fix — a corrupt state database, a full disk, a folder
the stage may not write, a PostgreSQL response store that is down, unknown or refuses the login —
becomes one line naming the file or server and the remedy, exit code 2. Outputs are written to a
temp file and renamed (:mod:`cultureqa.core.io`), so earlier outputs are intact.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
from pathlib import Path

from cultureqa.core.paths import project_root, state_dir

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


# -- the response store's lines ---------------------------------------------------------------
# Defined here, below ``cultureqa.llm.store`` (which raises them and imports this module), so the
# boundary never imports the store.

OPENED_URLS: list[str] = []
"""PostgreSQL stores this process opened (newest last): an error line names the server."""


class StoreLocationError(ValueError):
    """``CULTUREQA_STORE_URL`` (or a copy argument) names no store this project can open."""


class StoreSchemaError(RuntimeError):
    """The database holds tables of the store's names that are not a response store."""


class TeamCapMismatch(ValueError):
    """A stage's ``spend.budget_usd`` differs from the cap its team budget was created with."""


def shown(location: Path | str) -> str:
    """The location for messages and lock files: a resolved path, or the URL without password."""
    if isinstance(location, Path):
        return str(location.resolve())
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(location)
    except Exception:  # psycopg.ProgrammingError for a malformed URL: show what was given
        return location.split("@")[-1]
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = parts.get("host") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    host = "(socket)" if str(host).startswith("/") else host
    return f"postgresql://{user}{host}{port}/{parts.get('dbname', '')}"


def first_line(exc: BaseException) -> str:
    """The first non-blank line of an error (libpq's messages run over several)."""
    return next(
        (line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__
    )


_PG_DOWN = (
    "connection refused",
    "could not connect",
    "no such file or directory",
    "timeout expired",
    "server closed the connection",
    "terminating connection",
    "consuming input failed",
    "connection is lost",
    "connection is closed",
    "the connection is closed",
    "the database system is shutting down",
    "the database system is starting up",
    "connection failed",
)
_PG_NO_HOST = ("could not translate host name", "failed to resolve host")
_PG_MISSING_DB = re.compile(r'database "[^"]*" does not exist')
_PG_AUTH = ("password authentication failed", "no password supplied", "role", "pg_hba.conf")
_PG_FULL = ("no space left on device", "could not extend file", "disk full")


def describe_pg_error(exc: BaseException) -> str:
    """A PostgreSQL failure as one line: which server, what happened, the fix.

    Told apart by SQLSTATE where the server sent one, else by libpq's message (a refused
    connection has no SQLSTATE). Every line says that stored answers are kept: the store is on
    the server, and a rerun sends only what it lacks. The exceptions it was raised during count
    too: a server stopped under a batch insert surfaces as psycopg's "cannot exit pipeline mode
    while busy", raised while handling the lost connection.
    """
    where = shown(OPENED_URLS[-1]) if OPENED_URLS else "the PostgreSQL response store"
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for each in chain:
        line = _known_pg(each, where)
        if line is not None:
            return line
    return f"{where}: database error: {first_line(exc)}"


def _known_pg(exc: BaseException, where: str) -> str | None:
    """The line for a failure of a known kind (disk, login, database, server), else None."""
    message = first_line(exc)
    lowered = message.lower()
    state = getattr(exc, "sqlstate", None) or ""
    kept = "answers already stored are kept, a rerun sends only the rest"
    if state == "53100" or any(k in lowered for k in _PG_FULL):
        return (
            f"{where}: the database server's disk is full ({message}); free space on the "
            f"server (or raise its quota) and rerun: the store is not damaged, {kept}"
        )
    if state.startswith("28") or (
        any(k in lowered for k in _PG_AUTH) and ("auth" in lowered or "does not exist" in lowered)
    ):
        return (
            f"{where}: authentication failed ({message}); put the user in CULTUREQA_STORE_URL "
            "and its password in PGPASSWORD or ~/.pgpass (never in conf/ or git), or ask the "
            "server's admin to allow this machine in pg_hba.conf"
        )
    if state == "3D000" or _PG_MISSING_DB.search(message):
        return (
            f"{where}: the database does not exist on that server ({message}); create it there "
            "(createdb --owner USER NAME) or fix the database name in CULTUREQA_STORE_URL"
        )
    if any(k in lowered for k in _PG_NO_HOST):
        return (
            f"{where}: unknown host ({message}); fix the host name in CULTUREQA_STORE_URL "
            "(a name this machine resolves, or the server's IP address)"
        )
    if state.startswith(("57P", "08")) or any(k in lowered for k in _PG_DOWN):
        return (
            f"{where}: the PostgreSQL server is down or unreachable ({message}); start it, or "
            f"fix host and port in CULTUREQA_STORE_URL, and rerun: {kept}"
        )
    return None


class ConfigTypeError(TypeError):
    """A parameter has the wrong type; the message names the key.

    Defined here, below ``config`` and ``spend``, so both raise it without importing each other
    (``cultureqa.core.config`` re-exports it).
    """
