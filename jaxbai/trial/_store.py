"""Storage of a trial: one SQLite database with O(1) writes per record, owned by one process.

The store (schema 4) has three tables:

* ``meta(name, value)``: ``format``, ``schema_version``, ``store_id`` (random, fixed at
  creation), ``sensitive``, ``config`` (JSON, floats as hexadecimal strings), ``layout`` (dtype
  and shape of the key data and of every state leaf), ``paths`` (the path of every state leaf in
  the algorithm's state), ``session`` (see below) and, for a store migrated from a schema-1
  JSON file, ``migrated`` (the sample it happened at).
* ``snapshot``: one row, rewritten by every write: ``samples`` (outcomes applied), ``data``
  (the key data and state leaves, bit for bit), ``windows`` (per arm, count and exact sum of
  the unreleased observations, as fractions), ``log_sum`` and ``digest`` (integrity, below).
* ``assignments(participant, arm, outcome)``: every issued assignment, participant ids being
  sample indices. Ids below ``samples`` are applied; the others are open, or hold an outcome
  (``float.hex``) that arrived before an earlier participant's. Applying it clears it again.

Integrity. ``log_sum`` (a multiset hash of the rows of ``assignments``) and ``digest``
(SHA-256 of the meta rows, the snapshot row and ``log_sum``) are recomputed by every open, which
refuses a store that disagrees; `jaxbai.trial._integrity` describes them.

Durability. The database runs in WAL mode with ``synchronous=FULL``: a write transaction
appends the pages it changes to the log and fsyncs it, so a record costs the same however long
the trial is, and a process killed at any instant leaves the last committed transaction.
Issuing assignments commits without the fsync (``synchronous=NORMAL`` for that transaction): a
killed process keeps it all the same, a power failure may lose it, but assignments are a
deterministic function of the stored state (``select``, ``plan``), so they are issued again
identically, and the next outcome's fsync covers the log before it. A new store is built in a
temporary file and linked into place, so creation is atomic too. Files are created with mode
0600 (SQLite gives its ``-wal`` and ``-shm`` files the database's mode).

Ownership. A writer holds ``flock(LOCK_EX)`` on the database file itself (its inode), so no
second path to it — a symbolic or hard link, a renamed or relative path — opens a second
writer. Readers (`Store.open` with ``writable=False``: status, publication, backup) take no
lock and write nothing, so they work beside a writer and on read-only media. WAL needs a local
file system (not NFS), and so does the lock.

One file at rest. While a writer has it open — or after it was killed, or could not close
cleanly on a full disk — a trial is two files: ``x.trial`` and its log ``x.trial-wal``, which
holds the records since the session began. A writer marks the main file (``session``) before
any record and clears the mark when it closes, leaving one self-contained file
(`jaxbai.trial._session`). On open, a main file marked open whose log is missing (a copy of
``x.trial`` alone, taken while open or after a crash) is refused, and so is a log whose
``store_id`` is not the main file's (another trial's log beside it): either would silently
drop records or mix two trials. `jaxbai.trial._backup.backup` copies a trial, open or not,
into one file.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxbai.trial._files as _files
import jaxbai.trial._schema2 as _schema2
from jaxbai.trial._algorithm import stored_config
from jaxbai.trial._codec import (
    build_store,
    decode_data,
    decode_meta,
    decode_windows,
    leaf_layout,
    snapshot_row,
    state_paths,
)
from jaxbai.trial._config import Snapshot, TrialConfig
from jaxbai.trial._files import (
    acquire,
    check_log_owner,
    check_log_present,
    check_owner,
    check_writable_medium,
    install,
    log_path,
    main_file_meta,
    read_meta,
    reader_uri,
    remove_stale_temporaries,
    rollback,
    uri,
    writing,
)
from jaxbai.trial._integrity import (
    CORRUPT,
    CorruptStoreError,
    log_sum_of,
    main_file_is_sound,
    readable,
    row_statement,
    stored_row,
    updated_log_sum,
    verify,
)
from jaxbai.trial._migration import (
    INTEGRITY_COLUMNS,
    check_pages,
    check_schema,
    migrate_schema1,
    read_tables,
    refuse_schema1_reader,
    upgraded,
    with_integrity,
)
from jaxbai.trial._session import begin_session, close_writer, end_session

__all__ = ["Store"]

_SQLITE_MAGIC = b"SQLite format 3\x00"


class Store:
    """One trial's database; see the module docstring for its tables, lock and integrity.

    Build one with `Store.create` or `Store.open`; `close` it (a writer's lock is held until
    then).
    """

    def __init__(
        self,
        path: Path,
        db: sqlite3.Connection,
        lock_fd: int | None,
        verified: tuple[tuple[int, bytes, str], str] | None = None,
    ) -> None:
        self.path = path
        self._db = db
        self._lock_fd = lock_fd
        self._writable = lock_fd is not None
        self._pid = os.getpid()
        self._synchronous = _files.SYNCHRONOUS
        with readable(path):
            self._meta, tables = read_meta(db), read_tables(db)
        check_schema(path, self._meta, tables)
        with readable(path):
            if verified is None:  # else the reader checked the pages
                check_pages(path, db)
            if lock_fd is not None and "store_id" not in self._meta:
                self._add_integrity()
            self._row, self._log_sum = verified or self._verified_row()
            self._issued = self._read_issued()
            meta = decode_meta(self._meta)
        if db.in_transaction:  # a reader's: later reads (actions) take committed prefixes
            db.execute("COMMIT")
        self.config, self.sensitive, self.migrated_at, self._layout, self._paths = meta

    @property
    def writable(self) -> bool:
        """Whether this store was opened for writing (it then holds the lock)."""
        return self._writable

    def check_writer(self) -> None:
        """RuntimeError unless this process may write through this store now
        (`jaxbai.trial._files.check_owner`); run before every write and before a trial computes
        one."""
        if not self.writable:
            raise RuntimeError(f"trial {self.path} is open read-only: reopen it to write")
        check_owner(self.path, self._lock_fd, self._pid)

    def _verified_row(self) -> tuple[tuple[int, bytes, str], str]:
        """The snapshot row and ``log_sum``, checked against the digest (schema 4).

        Raises:
          CorruptStoreError: they disagree; the message says whether the main file alone is
            sound (then its log is another trial's or damaged).
        """
        if "store_id" not in self._meta:  # schemas 2 and 3, read-only: nothing to verify
            return stored_row(self._db)[0], ""
        verified = verify(self._db, self._meta)
        if verified is not None:
            return verified
        log = log_path(self.path)
        if log.exists() and log.stat().st_size and main_file_is_sound(self.path):
            raise CorruptStoreError(
                f"the log {log.name} does not match trial {self.path} (another trial's log, or "
                f"a damaged one): restore the trial's own log, or a backup; move {log.name} "
                "away only if it is not this trial's, as it holds its records since it was "
                "last opened"
            )
        raise CorruptStoreError(
            f"trial {self.path} " + CORRUPT.format(what="its digest does not match")
        )

    def _add_integrity(self) -> None:
        """Gives a schema-2 or 3 store its integrity fields (schema 3 becomes 4), in one
        transaction; the contents are trusted as they are, having no digest to check."""
        meta = with_integrity(self._meta)
        self._transaction(
            *INTEGRITY_COLUMNS,
            *(("INSERT OR REPLACE INTO meta VALUES (?, ?)", item) for item in meta.items()),
        )
        self._meta = meta
        self._store_row(stored_row(self._db)[0], log_sum_of(self._db))

    @classmethod
    def create(cls, path: Path, config: TrialConfig, sensitive: bool, snap: Snapshot) -> Store:
        """Creates the store at ``path`` atomically (FileExistsError if it exists) and opens
        it for writing."""

        def write(temporary: Path) -> None:
            build_store(temporary, config, sensitive, snap, (), None)

        lock_fd = install(path, write, exclusive=True, lock=True)
        assert lock_fd is not None
        try:
            return cls._connect(path, lock_fd)
        except BaseException:
            _files.release(lock_fd)
            raise

    @classmethod
    def open(cls, path: Path, *, writable: bool = True) -> Store:
        """Opens the store at ``path``; a writer first migrates a schema-1 JSON state file.

        Args:
          path: the store.
          writable: False opens it read-only: no lock, no write, no migration (status,
            publication and backups, also on read-only media and beside a writer).

        Raises:
          FileNotFoundError: no such file.
          RuntimeError: (writable) another process has the store open for writing.
          ValueError: not a trial store, an unsupported schema, a schema-1 file that cannot be
            migrated (or, read-only, any schema-1 file), a missing or foreign log.
          CorruptStoreError: the store fails its integrity check.
        """
        path = Path(os.path.realpath(path))  # SQLite names the log after the real file
        if writable:
            check_writable_medium(path)
            remove_stale_temporaries(path)
        lock_fd = acquire(path) if writable else None
        try:
            with open(path, "rb") as handle:
                head = handle.read(len(_SQLITE_MAGIC))
            if head != _SQLITE_MAGIC:
                if lock_fd is None:
                    refuse_schema1_reader(path)
                migrate_schema1(path)
                _files.release(lock_fd)
                lock_fd = None
                lock_fd = acquire(path)
            reader = cls._connect(path, None)  # checks the log and the digest, writing nothing
            if "store_id" not in reader._meta:  # schemas 2 and 3 have no digest: create's checks
                try:
                    reader.config = stored_config(f"trial {path}", reader.config, reader.sensitive)
                except BaseException:
                    reader.close()
                    raise
            if lock_fd is None:
                return reader
            verified = reader._row, reader._log_sum
            reader.close()
            return cls._connect(path, lock_fd, verified if "store_id" in reader._meta else None)
        except BaseException:
            if lock_fd is not None:
                _files.release(lock_fd)
            raise

    @classmethod
    def _connect(
        cls,
        path: Path,
        lock_fd: int | None,
        verified: tuple[tuple[int, bytes, str], str] | None = None,
    ) -> Store:
        """A writer (``lock_fd``: the lock held) or a reader (None) of a checked store; a
        reader reads the log's check, the snapshot and the open assignments in one read
        transaction (one consistent state), then ends it so as not to hold a writer's
        checkpoints back."""
        with open(path, "rb") as handle:
            head = handle.read(20)
        if head[18:20] != b"\x02\x02":  # the format's read and write versions: 2 is WAL
            refuse_schema1_reader(path)  # a store's marks: damaged; else not a trial
        if lock_fd is None:
            with readable(path):
                main = main_file_meta(path)
            check_log_present(path, main)
        with readable(path):
            # always a URI built from the path: a name like "file:a.trial" is never read as one
            name = reader_uri(path) if lock_fd is None else uri(path, "mode=rw")
            db = sqlite3.connect(name, uri=True, isolation_level=None)
        try:
            if lock_fd is None:
                with readable(path):
                    db.execute("BEGIN")
                    view = read_meta(db)
                check_log_owner(path, main, view)
            else:
                db.execute(f"PRAGMA synchronous={_files.SYNCHRONOUS}")
            store = cls(path, db, lock_fd, verified)
            if lock_fd is not None:
                begin_session(db, path, store._set_session)
            return store
        except BaseException:
            close_writer(db, path, keep_log=lock_fd is not None)
            raise

    # --- sessions -----------------------------------------------------------------------------
    def _set_session(self, token: str) -> None:
        self._transaction(("UPDATE meta SET value = ? WHERE name = 'session'", (token,)))
        self._meta["session"] = token

    def close(self) -> None:
        """Closes the database and releases the lock. A writer first ends its session
        (`jaxbai.trial._session.end_session`), leaving one self-contained file.

        Raises:
          RuntimeError: (once closed) the session could not be ended — a full disk, a reader
            holding the log: the store stays two files, ``x.trial`` and ``x.trial-wal``, which
            together hold every acknowledged record, and the next writer finishes the job.
        """
        if os.getpid() != self._pid:  # a fork: the connection is the parent's, the lock gone
            return
        owner = self.writable and self._owns_path()
        failure = None
        try:
            if owner:
                end_session(self._db, self.path, self._set_session)
        except RuntimeError as err:
            failure = err
        finally:
            close_writer(self._db, self.path, keep_log=owner and bool(self._meta["session"]))
            if self._lock_fd is not None:
                _files.release(self._lock_fd)
                self._lock_fd = None
        if failure is not None:
            raise failure

    def _owns_path(self) -> bool:
        """Whether `check_writer` passes (a replaced or removed file is not written again)."""
        try:
            self.check_writer()
        except RuntimeError:
            return False
        return True

    # --- reading ------------------------------------------------------------------------------
    def snapshot(self, template: Any) -> Snapshot:
        """The stored snapshot; ``template`` is a state of the algorithm with the right layout.

        Raises:
          ValueError: the stored state does not match the template's layout.
        """
        samples, data, windows = self._row
        leaves, treedef = jax.tree_util.tree_flatten(template)
        expected = [np.asarray(jax.random.key_data(jax.random.key(0))), *map(np.asarray, leaves)]
        arrays = decode_data(data, self._layout)
        if self._paths is None:
            arrays = [arrays[0], *_schema2.state_leaves(arrays[1:], template)]
        paths = state_paths(template) if self._paths is None else self._paths
        if leaf_layout(arrays) != leaf_layout(expected) or paths != state_paths(template):
            raise ValueError("the trial store does not match the algorithm's state layout")
        key = jax.random.wrap_key_data(jnp.asarray(arrays[0]))
        state = jax.tree_util.tree_unflatten(treedef, [jnp.asarray(a) for a in arrays[1:]])
        snap = Snapshot(key, state, samples, decode_windows(windows))
        if self._paths is None and self.writable:
            self._upgrade(snap)
        return snap

    def _upgrade(self, snap: Snapshot) -> None:
        """Rewrites a schema-2 store's snapshot and layout as schema 4, in one transaction."""
        meta = upgraded(self._meta, snap)
        row = snapshot_row(snap)
        self._transaction(
            *(("INSERT OR REPLACE INTO meta VALUES (?, ?)", item) for item in meta.items()),
            row_statement(meta, row, self._log_sum),
        )
        self._meta, self._row = meta, row
        self._layout, self._paths = json.loads(meta["layout"]), state_paths(snap.state)

    def issued(self) -> tuple[dict[int, int], dict[int, float]]:
        """Assignments not yet applied (participant → arm) and held outcomes (participant →
        outcome) at the stored snapshot, both in participant order (read when the store was
        opened, in the same transaction as the snapshot)."""
        return self._issued

    def _read_issued(self) -> tuple[dict[int, int], dict[int, float]]:
        rows = self._db.execute(
            "SELECT participant, arm, outcome FROM assignments WHERE participant >= ? "
            "ORDER BY participant",
            (self._row[0],),
        ).fetchall()
        held = {p: float.fromhex(outcome) for p, _, outcome in rows if outcome is not None}
        return {p: arm for p, arm, _ in rows}, held

    def actions(self, samples: int) -> list[int]:
        """The arms of the first ``samples`` participants, a_1, …, a_n."""
        rows = self._db.execute(
            "SELECT arm FROM assignments WHERE participant < ? ORDER BY participant", (samples,)
        )
        return [arm for (arm,) in rows]

    # --- writing ------------------------------------------------------------------------------
    def _transaction(self, *statements: tuple[str, Iterable[Any]]) -> None:
        """Runs ``statements`` in one write transaction; on an error, rolls back and raises
        that error (never one of the rollback's)."""
        self.check_writer()
        db = self._db
        with writing(self.path):
            db.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in statements:
                    db.execute(sql, tuple(args))
                db.execute("COMMIT")
            except BaseException:
                rollback(db)
                raise

    def _store_row(self, row: tuple[int, bytes, str], log_sum: str) -> None:
        self._transaction(row_statement(self._meta, row, log_sum))
        self._row, self._log_sum = row, log_sum

    def _changed_rows(self, participants: Iterable[int]) -> dict[int, tuple[int, str | None]]:
        """(arm, outcome) of each given participant's row, as stored."""
        query = "SELECT arm, outcome FROM assignments WHERE participant = ?"
        return {p: self._db.execute(query, (p,)).fetchone() for p in participants}

    def write(
        self,
        snap: Snapshot | None = None,
        issue: Iterable[tuple[int, int]] = (),
        hold: Iterable[tuple[int, float]] = (),
        release: Iterable[int] = (),
        fsync: bool = True,
    ) -> None:
        """One atomic transaction, durable once it returns (see the module docstring).

        Args:
          snap: the new snapshot, if outcomes were applied.
          issue: new (participant, arm) assignments.
          hold: (participant, outcome) pairs received ahead of an earlier participant's.
          release: participants whose held outcomes were applied (cleared).
          fsync: False to commit without waiting for the disk (assignments only).

        Raises:
          RuntimeError: the store is open read-only, this process is a fork of the one that
            opened it, or the path no longer names the opened file (`check_writer`).
          OSError: the disk is full or failed (`jaxbai.trial._files.writing`); nothing was
            changed.
          sqlite3.Error: another failure of the write; nothing was changed.
        """
        db = self._db
        if not fsync and self._synchronous == "FULL":
            db.execute("PRAGMA synchronous=NORMAL")
            try:
                self.write(snap, issue, hold, release)
            finally:
                db.execute("PRAGMA synchronous=FULL")
            return
        self.check_writer()
        issue = list(issue)
        changes: dict[int, str | None] = {p: float(z).hex() for p, z in hold}
        changes.update((p, None) for p in release)
        row = self._row if snap is None else snapshot_row(snap)
        with writing(self.path):
            self._write_rows(row, issue, changes)

    def _write_rows(
        self,
        row: tuple[int, bytes, str],
        issue: list[tuple[int, int]],
        changes: dict[int, str | None],
    ) -> None:
        """`write`'s transaction: the new ``row``, the ``issue``d assignments and the outcome
        ``changes``, with the updated ``log_sum``."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            stored = self._changed_rows(changes)
            log_sum = updated_log_sum(
                self._log_sum,
                [
                    *((p, arm, None) for p, arm in issue),
                    *((p, a, changes[p]) for p, (a, _) in stored.items()),
                ],
                [(p, arm, old) for p, (arm, old) in stored.items()],
            )
            db.executemany("INSERT INTO assignments VALUES (?, ?, NULL)", issue)
            db.executemany(
                "UPDATE assignments SET outcome = ? WHERE participant = ?",
                ((outcome, p) for p, outcome in changes.items()),
            )
            db.execute(*row_statement(self._meta, row, log_sum))
            db.execute("COMMIT")
        except BaseException:
            rollback(db)
            raise
        self._row, self._log_sum = row, log_sum
