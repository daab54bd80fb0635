"""Answers that arrived after the response store failed: kept in a local file, stored next run.

When the store's server goes away mid-run, the requests already on the wire still come back,
and each was paid for. Dropping them would have the rerun pay for them again; so each such
answer is appended to a file of this machine (``<state dir>/unstored/<store>.jsonl``, one per
store location), and the next run on that store stores them before it sends anything
(:meth:`cultureqa.llm.store.ResponseStore.take_kept`). Both counts reach the run record
(``api.cache.kept_locally``, ``api.cache.stored_from_file``).

Lines are appended and flushed one batch at a time; a line cut short by a crash is skipped on
import, named in the log with its count.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cultureqa.core.paths import state_dir
from cultureqa.llm.store import StoredResponse, StoreLocation, shown

if TYPE_CHECKING:
    from cultureqa.llm.store import ResponseStore

log = logging.getLogger(__name__)


def unstored_file(location: StoreLocation) -> Path:
    """This machine's file of answers the store at ``location`` has not taken yet."""
    digest = hashlib.sha256(shown(location).encode("utf-8")).hexdigest()[:16]
    return state_dir() / "unstored" / f"{digest}.jsonl"


def keep(location: StoreLocation, rows: Sequence[StoredResponse]) -> Path:
    """Append ``rows`` to the file of ``location`` (flushed to disk); returns the file."""
    path = unstored_file(location)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(
        json.dumps({"store": shown(location), **r._asdict()}, ensure_ascii=False) + "\n"
        for r in rows
    )
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    return path


def store_kept(store: ResponseStore) -> int:
    """Store the answers kept for ``store``'s location, then delete the file; returns how many.

    The file is first renamed to one of this process, so two stages starting at once on one
    machine never store it twice. If storing fails, its lines go back to the file.
    """
    path = unstored_file(store.location)
    mine = path.with_name(f"{path.stem}.{os.getpid()}.storing")
    try:
        os.rename(path, mine)
    except FileNotFoundError:
        return 0
    rows, cut = [], 0
    for line in mine.read_text(encoding="utf-8").splitlines():
        try:
            data = json.loads(line)
            rows.append(
                StoredResponse(
                    data["key"], data["kind"], data["model"], data["status"], data["payload"]
                )
            )
        except (ValueError, KeyError, TypeError):
            cut += 1
    try:
        store.put(rows)
    except BaseException:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(mine.read_text(encoding="utf-8"))
        mine.unlink()
        raise
    mine.unlink()
    if cut:
        log.warning("%s: %d lines cut short by a crash were skipped", path, cut)
    log.warning(
        "stored %d answers kept in %s when the store failed in an earlier run", len(rows), path
    )
    return len(rows)
