"""What the response store's failures say: one line each, naming the store and the fix.

Below both :mod:`cultureqa.errors` (the stage error boundary, which prints these lines) and
:mod:`cultureqa.llm.store` (which raises them): neither imports the other, so the boundary
never loads the store and the store never loads the boundary.
"""

from __future__ import annotations

import re
from pathlib import Path

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


_DOWN = (
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
_NO_HOST = ("could not translate host name", "failed to resolve host")
_MISSING_DB = re.compile(r'database "[^"]*" does not exist')
_AUTH = ("password authentication failed", "no password supplied", "role", "pg_hba.conf")
_FULL = ("no space left on device", "could not extend file", "disk full")


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
        line = _known(each, where)
        if line is not None:
            return line
    return f"{where}: database error: {first_line(exc)}"


def _known(exc: BaseException, where: str) -> str | None:
    """The line for a failure of a known kind (disk, login, database, server), else None."""
    message = first_line(exc)
    lowered = message.lower()
    state = getattr(exc, "sqlstate", None) or ""
    kept = "answers already stored are kept, a rerun sends only the rest"
    if state == "53100" or any(k in lowered for k in _FULL):
        return (
            f"{where}: the database server's disk is full ({message}); free space on the "
            f"server (or raise its quota) and rerun: the store is not damaged, {kept}"
        )
    if state.startswith("28") or (
        any(k in lowered for k in _AUTH) and ("auth" in lowered or "does not exist" in lowered)
    ):
        return (
            f"{where}: authentication failed ({message}); put the user in CULTUREQA_STORE_URL "
            "and its password in PGPASSWORD or ~/.pgpass (never in conf/ or git), or ask the "
            "server's admin to allow this machine in pg_hba.conf"
        )
    if state == "3D000" or _MISSING_DB.search(message):
        return (
            f"{where}: the database does not exist on that server ({message}); create it there "
            "(createdb --owner USER NAME) or fix the database name in CULTUREQA_STORE_URL"
        )
    if any(k in lowered for k in _NO_HOST):
        return (
            f"{where}: unknown host ({message}); fix the host name in CULTUREQA_STORE_URL "
            "(a name this machine resolves, or the server's IP address)"
        )
    if state.startswith(("57P", "08")) or any(k in lowered for k in _DOWN):
        return (
            f"{where}: the PostgreSQL server is down or unreachable ({message}); start it, or "
            f"fix host and port in CULTUREQA_STORE_URL, and rerun: {kept}"
        )
    return None
