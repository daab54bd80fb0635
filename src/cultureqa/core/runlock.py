"""Spend once: one writer per stage output, and no stage outliving the ``dvc repro`` that ran it.

Killing ``dvc repro`` used to leave its stage running; the next ``dvc repro`` then started a second
copy beside it and both sent the same prompts. Two guards close that:

- :func:`output_lock` holds an ``flock`` on a lock file for the stage's outputs. A live holder is
  refused with its PID; the kernel drops the lock when its holder dies, so a lock left by a killed
  run is simply taken over (and the dead PID it names is logged and reported).
- :func:`exit_with_parent` stops the stage when the process that started it dies. DVC runs each
  command through ``$SHELL -c``, which does not exec the command, so the watchdog follows the
  ancestry up through shells to the first real parent (dvc, make, pytest) and watches that.
  It sends SIGTERM to the stage itself.
- :func:`stop_gracefully_on_signals`: the first SIGINT (Ctrl-C reaches the whole process group)
  or SIGTERM stops new requests while those in flight finish and are stored; a second aborts.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

SHELLS = frozenset({"sh", "dash", "bash", "zsh", "ksh", "fish", "busybox"})
"""Process names the watchdog looks through: DVC runs stage commands via ``$SHELL -c``."""


class OutputBusy(RuntimeError):
    """Another live process holds the lock on these outputs (a user error: rc 2)."""


class StageInterrupted(RuntimeError):
    """SIGINT/SIGTERM, or the parent died: the stage stopped, answers so far are stored."""


@dataclass
class LockInfo:
    """The held lock: where it lives, and the dead PID it was taken over from (if any)."""

    path: Path
    took_over_from: int | None = None


LOCK_SUFFIX = ".cultureqa-lock"


def lock_path(outputs: Path) -> Path:
    """Lock file for ``outputs``: beside them, ``<parent>/.<name>.cultureqa-lock``.

    Not inside the outputs (DVC deletes them before it runs a stage, and a deleted lock file
    locks nothing), and not in the state folder: a lock there followed ``CULTUREQA_STATE_DIR``,
    so two runs that differed only in it both wrote one output and paid for every prompt twice.
    Beside the outputs, every run that writes them meets the same lock, whatever its
    environment, while queued experiments (separate temp copies) never block each other.
    """
    return outputs.parent / f".{outputs.name}{LOCK_SUFFIX}"


@contextlib.contextmanager
def output_lock(outputs: Path, store: Path | str | None = None) -> Iterator[LockInfo]:
    """Hold the lock for ``outputs`` while the block runs; refuse if a live process holds it.

    ``store`` (the response store the run uses) is written into the lock, so a run refused
    while another one, on a different store, writes the same outputs names both stores.
    """
    path = lock_path(outputs)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputBusy(_busy(outputs, path, *_read_owner(fd), store)) from None
        info = LockInfo(path, _stale_owner(_read_owner(fd)[0]))
        if info.took_over_from is not None:
            log.warning(
                "took over the lock on %s left by PID %d, which is no longer running",
                outputs,
                info.took_over_from,
            )
        _write_owner(fd, store)
        try:
            yield info
        finally:
            os.ftruncate(fd, 0)  # released cleanly: no PID left to report as stale
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _shown(store: Path | str) -> str:
    """The store as a lock file names it (a URL without its password)."""
    from cultureqa.llm.store import shown  # cultureqa.llm imports this module

    return shown(store)


def _busy(
    outputs: Path, path: Path, pid: int | None, theirs: str | None, ours: Path | str | None
) -> str:
    """The refusal: who writes ``outputs``, and both stores when they differ."""
    who = f"PID {pid}" if pid else "another process"
    if theirs and ours is not None and theirs != _shown(ours):
        return (
            f"{outputs} is being written by {who} with response store {theirs}, while this run "
            f"uses {_shown(ours)} (CULTUREQA_STATE_DIR or CULTUREQA_STORE_URL differs): both "
            f"would pay for the same prompts; wait or kill it, and run with its store "
            f"(lock file {path})"
        )
    return f"{outputs} is being written by {who}; wait or kill it (lock file {path})"


def _read_owner(fd: int) -> tuple[int | None, str | None]:
    """PID and response store the lock file names (either may be absent)."""
    os.lseek(fd, 0, os.SEEK_SET)
    lines = os.read(fd, 4096).decode("utf-8", "replace").splitlines()
    pid = int(lines[0]) if lines and lines[0].strip().isdigit() else None
    store = lines[1].strip() if len(lines) > 1 and lines[1].strip() else None
    return pid, store


def _write_owner(fd: int, store: Path | str | None) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    text = f"{os.getpid()}\n" + (f"{_shown(store)}\n" if store is not None else "")
    os.write(fd, text.encode())


def _stale_owner(pid: int | None) -> int | None:
    """The PID a released lock still names, if that was another process (a killed run)."""
    return pid if pid is not None and pid != os.getpid() else None


def ancestry(pid: int | None = None) -> list[tuple[int, int]]:
    """``(pid, parent pid)`` pairs from ``pid`` up to the first parent that is not a shell."""
    chain = [(pid or os.getpid(), os.getppid() if pid is None else _parent_of(pid) or 0)]
    while chain[-1][1] > 1 and _name_of(chain[-1][1]) in SHELLS:
        shell = chain[-1][1]
        parent = _parent_of(shell)
        if parent is None:
            break
        chain.append((shell, parent))
    return chain


def orphaned(chain: list[tuple[int, int]]) -> bool:
    """Whether any process of ``chain`` lost its recorded parent (it died; we were reparented)."""
    me, parent = chain[0]
    if me == os.getpid() and os.getppid() != parent:
        return True
    return any(_parent_of(pid) != ppid for pid, ppid in chain[1:])


def exit_with_parent(poll_s: float = 0.5) -> threading.Event:
    """Start a daemon watchdog that stops this process once its starter is gone.

    Polling (not ``PR_SET_PDEATHSIG``): the death signal fires when the parent *thread* exits,
    which would kill stages that a thread pool started, and it cannot see through the shell
    that DVC puts between itself and the stage. Set the returned event to end the watchdog.
    """
    chain = ancestry()
    done = threading.Event()

    def watch() -> None:
        while not done.wait(poll_s):
            if orphaned(chain):
                log.warning("the process that started this stage is gone; stopping")
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()
    return done


_STOP = threading.Event()


_STOP_REASON: list[str] = []
_SIGNALLED = "the stage is stopping (signal or parent gone)"


def stop_requested() -> bool:
    """Whether SIGINT/SIGTERM (or the parent's death) asked this stage to stop sending."""
    return _STOP.is_set()


def stop_sending(reason: str) -> None:
    """Stop sending from inside the stage, as a first signal does, for ``reason``.

    The response store's failure calls it: requests queued for a slot are then answered as not
    sent (named with ``reason``) instead of going out with nowhere to store their answers.
    """
    if not _STOP.is_set():
        _STOP_REASON[:] = [reason]
        _STOP.set()


def stop_reason() -> str:
    """Why sending stopped: the reason given to :func:`stop_sending`, else the signal."""
    return _STOP_REASON[0] if _STOP_REASON else _SIGNALLED


def _on_stop_signal(signum: int, frame: object) -> None:
    if _STOP.is_set():  # the second signal: stop now, abandoning requests in flight
        raise KeyboardInterrupt
    _STOP.set()
    log.warning(
        "%s: sending no more requests; finishing those in flight (signal again to abort)",
        signal.Signals(signum).name,
    )


def stop_gracefully_on_signals() -> Callable[[], None]:
    """First SIGINT/SIGTERM: send nothing new, let paid-for requests land in the store.

    Cancelling in-flight requests would throw away answers the provider already billed, and
    the rerun would send those prompts again. A second signal aborts at once. Returns the
    function that restores the previous handlers (stages also run inside test processes).
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    _STOP.clear()
    _STOP_REASON.clear()
    previous = {sig: signal.signal(sig, _on_stop_signal) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore


@contextlib.contextmanager
def stage_guard(outputs: Path, store: Path | str | None = None) -> Iterator[LockInfo]:
    """Everything a spending stage needs: parent watchdog, graceful stop, output lock."""
    restore = stop_gracefully_on_signals()
    watchdog = exit_with_parent()
    try:
        with output_lock(outputs, store) as info:
            yield info
    except KeyboardInterrupt:
        raise StageInterrupted(
            f"aborted while writing {outputs}; answers received so far are in the "
            "response store, so a rerun sends only the rest"
        ) from None
    finally:
        watchdog.set()
        restore()


def _proc_stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name (Linux); None if gone or unknown."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def _parent_of(pid: int) -> int | None:
    fields = _proc_stat(pid)
    if fields is None or fields[0] == "Z":  # a zombie has exited already
        return None
    return int(fields[1])


def _name_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
