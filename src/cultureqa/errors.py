"""The stage error boundary: environment failures as one ``error: …`` line that says the fix.

Bugs keep their traceback; what a user can fix — a corrupt state database, a full disk, a folder
the stage may not write — becomes one line naming the file and the remedy, exit code 2. Outputs
are written to a temp file and renamed (:mod:`cultureqa.io`), so earlier outputs are intact.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from cultureqa.paths import project_root, state_dir

SQLITE_HEADER = b"SQLite format 3\x00"

_UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS}
_WRITABLE_FIX = (
    "make {folder} writable, or set CULTUREQA_STATE_DIR to a writable folder for the response store"
)


def state_databases() -> dict[Path, str]:
    """The SQLite files a stage may open, with what moving one aside costs."""
    return {
        state_dir() / "responses.sqlite": (
            "then rerun; every answer is requested again (API calls are paid again)"
        ),
        project_root() / "mlflow.db": ("then `rm -r data/track && dvc repro` logs the runs again"),
    }


def is_sqlite_file(path: Path) -> bool:
    """True when ``path`` starts with the SQLite header (an empty file is a fresh database)."""
    with path.open("rb") as fh:
        head = fh.read(len(SQLITE_HEADER))
    return head in (b"", SQLITE_HEADER)


def passes_quick_check(path: Path) -> bool:
    """SQLite's own consistency check (read-only), for a file whose header is intact."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return bool(db.execute("PRAGMA quick_check").fetchone() == ("ok",))
    except sqlite3.DatabaseError:
        return False


def describe_database_error(exc: BaseException) -> str:
    """Which state database failed and how to fix it, from a sqlite3/SQLAlchemy error."""
    message = str(getattr(exc, "orig", None) or exc).splitlines()[0]
    for path, cost in state_databases().items():
        if path.is_file() and not is_sqlite_file(path):
            return (
                f"{path}: not an SQLite database ({message}); move it aside "
                f"(mv {path} {path}.corrupt) and {cost}"
            )
    for path, cost in state_databases().items():
        if path.is_file() and not passes_quick_check(path):
            return (
                f"{path}: damaged SQLite database ({message}); move it aside "
                f"(mv {path} {path}.corrupt) and {cost}"
            )
    lowered = message.lower()
    if "disk is full" in lowered or "disk i/o" in lowered:
        return f"{_db_list()}: {message}; free space on that disk and rerun"
    if "readonly" in lowered or "unable to open" in lowered:
        for path in state_databases():
            folder = path.parent
            if (path.exists() and not os.access(path, os.W_OK)) or (
                folder.exists() and not os.access(folder, os.W_OK)
            ):
                return f"{path}: not writable ({message}); {_WRITABLE_FIX.format(folder=folder)}"
        folders = " or ".join(sorted({str(p.parent) for p in state_databases()}))
        return f"{_db_list()}: {message}; {_WRITABLE_FIX.format(folder=folders)}"
    return f"{_db_list()}: database error: {message}"


def _db_list() -> str:
    return " or ".join(str(p) for p in state_databases())


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
