"""Backups of a trial store: `backup` copies a trial, open or not, into one self-contained file.

The copy is made with SQLite's online backup from a reader (`jaxbai.trial._store.Store`), so it
is one committed state, and is verified before it appears (the module docstring of
`jaxbai.trial._store` says why an open trial is two files and a closed one is one).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from jaxbai.trial._files import fsync, install, uri
from jaxbai.trial._integrity import CorruptStoreError, main_file_is_sound
from jaxbai.trial._store import Store

__all__ = ["backup"]


def backup(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Copies the trial ``source`` into the new, self-contained file ``target``.

    It uses SQLite's online backup, so it is safe while the trial is open in another process
    (the copy is one committed state, verified before it appears) and on read-only media. The
    copy (mode 0600) is the same trial: continue only one of the two.

    Raises:
      FileNotFoundError: no trial at ``source``.
      FileExistsError: ``target`` exists.
      ValueError: ``source`` is not a sound trial store (corrupted, missing or foreign log).
    """
    source, target = Path(source), Path(target)
    if not source.is_file():
        raise FileNotFoundError(f"no trial at {source}")
    reader = Store.open(source, writable=False)
    try:

        def write(temporary: Path) -> None:
            copy = sqlite3.connect(uri(temporary, "mode=rwc"), uri=True, isolation_level=None)
            try:
                reader._db.backup(copy)
                copy.execute("UPDATE meta SET value = '' WHERE name = 'session'")
            finally:
                copy.close()  # checkpoints the copy's log into it
            fsync(temporary)
            if "store_id" in reader._meta and not main_file_is_sound(temporary):
                raise CorruptStoreError(f"the copy of {source} failed its integrity check")

        install(target, write, exclusive=True)
    finally:
        reader.close()
