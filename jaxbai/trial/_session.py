"""A writer's session on a trial store: the mark, the checkpoints, and a close that keeps the log.

A writer marks the main file as open (``session`` in ``meta``, moved into the main file by a
checkpoint before any record) and clears the mark when it closes; `jaxbai.trial._store` says
why. Two facts of SQLite shape this module:

* Closing the last connection to a database moves the log into the main file and deletes it.
  If the mark could not be cleared (a full disk), that would leave a main file marked open
  without its log, which every later open refuses as a copy taken without its log. A writer that
  could not clear its mark therefore closes while a reader (`close_writer`) holds the log open:
  SQLite then leaves it, and the store stays two files, both needed, until a writer reopens it.
* A checkpoint that completes restarts the log: the next transaction overwrites the log from
  its start instead of growing it. `end_session` checkpoints before clearing the mark, so the
  clearing transaction overwrites the space the session's own mark took (`begin_session`
  restarts the log without truncating it) and needs no new space on a full disk.
"""

from __future__ import annotations

import contextlib
import errno
import secrets
import sqlite3
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxbai.trial._files import log_path, uri

__all__ = [
    "CHECKPOINT_WAIT_S",
    "begin_session",
    "checkpoint",
    "close_left_open",
    "close_writer",
    "end_session",
]

CHECKPOINT_WAIT_S = 10.0
"""How long a writer retries moving the log into the main file while readers hold it."""


def checkpoint(db: sqlite3.Connection, mode: str) -> bool:
    """Moves the whole log into the main file (``PRAGMA wal_checkpoint(mode)``, mode RESTART or
    TRUNCATE), retrying while readers hold it (up to `CHECKPOINT_WAIT_S`); whether it
    succeeded."""
    deadline = time.monotonic() + CHECKPOINT_WAIT_S
    while True:
        busy, log, done = db.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        if not busy and log == done:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def begin_session(db: sqlite3.Connection, path: Path, mark: Callable[[str], None]) -> None:
    """Marks the main file as open (``mark``: writes the ``session`` row) and moves the mark
    into the main file, keeping the log's file (RESTART) for `end_session` to reuse.

    Raises:
      RuntimeError: readers held the log for `CHECKPOINT_WAIT_S`.
    """
    mark(secrets.token_hex(16))
    if not checkpoint(db, "RESTART"):
        raise RuntimeError(
            f"readers of trial {path} kept its log busy for {CHECKPOINT_WAIT_S:g} s; retry "
            "when they are done"
        )


def end_session(db: sqlite3.Connection, path: Path, mark: Callable[[str], None]) -> None:
    """Clears the mark and moves the log into the main file (one self-contained file).

    Raises:
      RuntimeError: the mark could not be cleared (the disk is full: the log must then be
        kept, `close_writer`), or it was but the log could not be moved (a reader held it, or
        the main file could not grow). Either way every acknowledged record is in the two
        files, and the next writer finishes the job.
    """
    log = log_path(path).name
    with contextlib.suppress(sqlite3.Error):  # the main file may be unable to grow
        checkpoint(db, "RESTART")
    try:
        mark("")
    except (sqlite3.Error, OSError) as err:
        cause = "the disk is full" if getattr(err, "errno", None) == errno.ENOSPC else err
        raise RuntimeError(
            f"trial {path} could not be closed cleanly ({cause}): it stays two files, "
            f"{path.name} and {log}, which together hold every acknowledged record; keep "
            "both, free space, and open it again"
        ) from err
    try:
        done = checkpoint(db, "TRUNCATE")
    except sqlite3.Error:
        done = False
    if not done:
        raise RuntimeError(
            f"trial {path}: its log {log} could not be moved into the main file (a reader "
            "held it, or the disk is full); nothing is lost, but the trial is two files, both "
            "needed, until a writer opens and closes it again"
        )


def _log_keeper(path: Path) -> sqlite3.Connection | None:
    """A reader holding ``path``'s log open (None if it cannot open)."""
    try:
        keeper = sqlite3.connect(uri(path, "mode=ro"), uri=True)
    except sqlite3.Error:
        return None
    try:
        keeper.execute("SELECT count(*) FROM meta").fetchone()
    except sqlite3.Error:
        keeper.close()
        return None
    return keeper


def close_writer(db: sqlite3.Connection, path: Path, keep_log: bool) -> None:
    """Closes a writer's connection; with ``keep_log``, while a reader holds the log, so that
    SQLite leaves it in place (the module docstring says why)."""
    keeper = _log_keeper(path) if keep_log else None
    try:
        db.close()
    finally:
        if keeper is not None:
            keeper.close()


def close_left_open(store: Any) -> None:
    """Closes a store (`jaxbai.trial._store.Store`) whose `Trial` was dropped or left open at
    exit: a `weakref.finalize` callback, holding the store, never the trial. A failure to end
    the session cannot be raised there; it is warned about, and the next writer finishes it."""
    try:
        store.close()
    except RuntimeError as err:
        warnings.warn(f"closing trial {store.path} left open: {err}", RuntimeWarning, stacklevel=1)
