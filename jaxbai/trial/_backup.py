"""Backups of a trial store: `backup` copies a trial, open or not, into one self-contained file.

The copy is made with SQLite's online backup from a reader (`jaxbai.trial._store.Store`), so it
is one committed state, and is verified before it appears (the module docstring of
`jaxbai.trial._store` says why an open trial is two files and a closed one is one).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from jaxbai.trial._files import fsync, install, uri
from jaxbai.trial._integrity import CorruptStoreError, main_file_is_sound
from jaxbai.trial._store import Store

__all__ = ["backup"]


def backup(source: Path, target: Path) -> None:
    """Copies the trial ``source`` into the new file ``target`` with SQLite's online backup.

    Safe while ``source`` is open in another process (the copy is one committed state) and on
    read-only media; ``source`` is verified first and the copy before it appears. The copy is one
    self-contained file (mode 0600) and the same trial: continue only one of the two.

    Raises:
      FileExistsError: ``target`` exists.
      ValueError, CorruptStoreError: ``source`` is not a sound trial store.
    """
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
