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

Integrity. ``log_sum`` is a multiset hash of the rows of ``assignments``: per row, four 64-bit
words (splitmix64 chains of participant, arm and outcome, one per seed), summed modulo 2⁶⁴ lane
by lane. Each write adds and subtracts the rows it changes (O(changes)); changing any field of
a row changes every lane of its hash. ``digest`` is SHA-256 of the meta rows (but
``session``), the snapshot row and ``log_sum``. Every open recomputes both (O(rows), one
vectorised pass) and refuses a store that disagrees, so a flipped bit of the state, the log or
the configuration is never continued. It detects corruption, not forgery: whoever can write
the file can recompute the digest.

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

One file at rest. While a writer has it open — or after it was killed — a trial is two files:
``x.trial`` and its log ``x.trial-wal``, which holds the records since the session began. A
writer marks the main file (``session``: a random token, moved into the main file by a
checkpoint before any record) and a clean `Store.close` clears the mark and checkpoints the log
into the main file, which SQLite then deletes: a closed trial is one self-contained file. On
open, a main file whose mark says a session is open but whose log is missing (a copy of
``x.trial`` alone, taken while open or after a crash) is refused, and so is a log whose
``store_id`` is not the main file's (another trial's log beside it): either would silently
drop records or mix two trials. `backup` copies a trial, open or not, into one file.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import secrets
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxbai.trial._schema1 as _schema1
import jaxbai.trial._schema2 as _schema2
from jaxbai.trial._config import SCHEMA_VERSION, STATE_FORMAT, Snapshot, TrialConfig, Windows

__all__ = ["SYNCHRONOUS", "Store", "backup"]

_SQLITE_MAGIC = b"SQLite format 3\x00"

SYNCHRONOUS = "FULL"
"""``PRAGMA synchronous`` of every connection: FULL fsyncs the log at each commit. Tests of
decisions rather than durability may set ``"OFF"``."""

CHECKPOINT_WAIT_S = 10.0
"""How long a writer retries moving the log into the main file while readers hold it."""

_TABLES = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE snapshot (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    samples INTEGER NOT NULL,
    data BLOB NOT NULL,
    windows TEXT NOT NULL,
    log_sum TEXT NOT NULL,
    digest TEXT NOT NULL
);
CREATE TABLE assignments (
    participant INTEGER PRIMARY KEY,
    arm INTEGER NOT NULL,
    outcome TEXT
);
"""

_READABLE_SCHEMAS = (str(SCHEMA_VERSION), "3", "2")
"""Schemas this code reads: 2 and 3 (no integrity fields) are upgraded by their first writer."""

_CORRUPT = (
    "is corrupted ({what}); it cannot be continued: restore it from a backup "
    "(python -m jaxbai.trial backup makes one)"
)


class CorruptStoreError(ValueError):
    """The store fails its integrity check or cannot be read as a database."""


# ------------------------------------------------------------------------------ file helpers
def _fsync(path: Path, flags: int = os.O_RDONLY) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temporary_prefix(path: Path) -> str:
    return f".{path.name}."


def _remove_stale_temporaries(path: Path) -> None:
    """Deletes the temporaries (and their SQLite side files) of a killed creation."""
    for stale in path.parent.glob(f"{_temporary_prefix(path)}*.tmp*"):
        stale.unlink(missing_ok=True)


def _lock(path: Path) -> int:
    """Takes ``flock(LOCK_EX)`` on the file ``path`` names, without waiting.

    The lock belongs to the inode, so every path to the file sees it. If ``path`` is replaced
    while the lock is taken (a migration), the new file is locked instead. ``fcntl`` is
    imported here, not at module level, so that jaxbai imports where it does not exist
    (Windows); only writing a trial needs it.

    Returns:
      The descriptor; closing it releases the lock.

    Raises:
      FileNotFoundError: no such file.
      RuntimeError: another process (or another open `jaxbai.trial.Trial`) holds the lock.
    """
    import fcntl

    while True:
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                return fd
        except BlockingIOError as err:
            os.close(fd)
            raise RuntimeError(
                f"trial {path} is open in another process (or through another path to the "
                "same file); close it there first"
            ) from err
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _log(path: Path) -> Path:
    return path.with_name(f"{path.name}-wal")


def _uri(path: Path, query: str) -> str:
    return f"{path.absolute().as_uri()}?{query}"


def _read_meta(db: sqlite3.Connection) -> dict[str, str]:
    return dict(db.execute("SELECT name, value FROM meta"))


def _main_file_meta(path: Path) -> dict[str, str]:
    """The meta table as the main file alone holds it (its log ignored)."""
    with contextlib.closing(sqlite3.connect(_uri(path, "mode=ro&immutable=1"), uri=True)) as db:
        return _read_meta(db)


_DAMAGE = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
"""SQLite's error codes for a damaged file (others — I/O, permissions, locks — are not)."""


@contextlib.contextmanager
def _readable(path: Path):
    """Turns SQLite's errors on a damaged file into `CorruptStoreError` naming ``path``."""
    try:
        yield
    except sqlite3.DatabaseError as err:
        name = getattr(err, "sqlite_errorname", None)  # Python ≥ 3.11
        if name not in _DAMAGE and (name or isinstance(err, sqlite3.OperationalError)):
            raise
        raise CorruptStoreError(f"trial {path} " + _CORRUPT.format(what=err)) from err


def _reader_uri(path: Path) -> str:
    """How a reader opens ``path``: through its log (``mode=ro``), or, on a read-only medium
    without a log (no writer can be there), as immutable, as SQLite cannot build the log's
    index there."""
    log = _log(path)
    read_only_medium = bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    if read_only_medium and not (log.exists() and log.stat().st_size):
        return _uri(path, "mode=ro&immutable=1")
    return _uri(path, "mode=ro")


def _rollback(db: sqlite3.Connection) -> None:
    """Rolls back an open transaction, keeping the error that caused it (SQLite may already
    have rolled back after an I/O error or a full disk)."""
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")


# ------------------------------------------------------------------------------ encoding
def _leaves(snap: Snapshot) -> list[np.ndarray]:
    key_data = np.asarray(jax.random.key_data(snap.key))
    return [key_data, *(np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(snap.state))]


def _layout(leaves: list[np.ndarray]) -> list[list[Any]]:
    return [[leaf.dtype.str, list(leaf.shape)] for leaf in leaves]


def _paths(state: Any) -> list[str]:
    return [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(state)[0]]


def _decode(data: bytes, layout: list[list[Any]]) -> list[np.ndarray]:
    """The arrays of a snapshot's ``data``, by its stored ``layout``."""
    arrays, offset = [], 0
    for dtype, shape in layout:
        like = np.zeros(shape, np.dtype(dtype))
        arrays.append(np.frombuffer(data, like.dtype, like.size, offset).reshape(like.shape))
        offset += like.nbytes
    if offset != len(data):
        raise ValueError("the trial store's snapshot does not match its layout")
    return arrays


def _encode_windows(windows: Windows) -> str:
    return json.dumps([[count, str(total)] for count, total in windows])


def _decode_windows(text: str) -> Windows:
    return tuple((int(count), Fraction(total)) for count, total in json.loads(text))


def _encode_config(config: TrialConfig) -> str:
    hexed = {"epsilon", "delta"}
    raw = {
        name: (None if value is None else float(value).hex()) if name in hexed else value
        for name, value in vars(config).items()
    }
    return json.dumps(raw, sort_keys=True)


def _decode_config(text: str) -> TrialConfig:
    raw = json.loads(text)
    for name in ("epsilon", "delta"):
        raw[name] = None if raw[name] is None else float.fromhex(raw[name])
    return TrialConfig(**raw)


def _snapshot_row(snap: Snapshot) -> tuple[int, bytes, str]:
    data = b"".join(leaf.tobytes() for leaf in _leaves(snap))
    return snap.samples, data, _encode_windows(snap.windows)


# ------------------------------------------------------------------------------ integrity
_LANE_SEEDS = np.array(
    [0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89],
    dtype=np.uint64,
)
"""One seed per 64-bit lane of ``log_sum`` (digits of π)."""

_NULL_OUTCOME = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
"""The outcome word of a row without an outcome (a NaN pattern: stored outcomes are finite)."""

Row = tuple[int, int, "str | None"]
"""An assignments row: (participant, arm, outcome as ``float.hex`` or None)."""


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, a bijection of 64-bit words (arithmetic modulo 2⁶⁴)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _outcome_word(outcome: str | None) -> np.uint64:
    if outcome is None:
        return _NULL_OUTCOME
    return np.float64(float.fromhex(outcome)).view(np.uint64)


def _hashes(participants: np.ndarray, arms: np.ndarray, outcomes: np.ndarray) -> np.ndarray:
    """Per lane and row (shape (4, rows)), the row's hash: mix(mix(mix(seed ⊕ participant) ⊕
    arm) ⊕ outcome), a bijection of each field given the others."""
    h = _mix(_LANE_SEEDS[:, None] ^ participants.astype(np.uint64)[None, :])
    h = _mix(h ^ arms.astype(np.uint64))
    return _mix(h ^ outcomes)


def _rows_hashes(rows: list[Row]) -> np.ndarray:
    participants, arms, outcomes = zip(*rows, strict=True) if rows else ((), (), ())
    words = np.array([_outcome_word(o) for o in outcomes], np.uint64)
    return _hashes(np.asarray(participants, np.int64), np.asarray(arms, np.int64), words)


def _hex(lanes: np.ndarray) -> str:
    return lanes.astype(">u8").tobytes().hex()


def _updated(log_sum: str, added: list[Row], removed: list[Row]) -> str:
    """``log_sum`` after adding and removing rows (O(rows changed)); lanes wrap modulo 2⁶⁴."""
    hashes = _rows_hashes([*added, *removed])
    change = hashes[:, : len(added)].sum(axis=1) - hashes[:, len(added) :].sum(axis=1)
    return _hex(np.frombuffer(bytes.fromhex(log_sum), ">u8").astype(np.uint64) + change)


def _log_sum(db: sqlite3.Connection) -> str:
    """``log_sum`` recomputed from every assignments row (O(rows), vectorised)."""
    bare = db.execute("SELECT participant, arm FROM assignments WHERE outcome IS NULL")
    columns = np.array(bare.fetchall(), np.int64).reshape(-1, 2)
    nulls = np.full(len(columns), _NULL_OUTCOME, np.uint64)
    held = db.execute("SELECT participant, arm, outcome FROM assignments WHERE outcome NOT NULL")
    lanes = _hashes(columns[:, 0], columns[:, 1], nulls).sum(axis=1)
    return _hex(lanes + _rows_hashes(held.fetchall()).sum(axis=1))


@functools.lru_cache(maxsize=8)
def _meta_digest(fixed: tuple[tuple[str, str], ...]) -> str:
    return hashlib.sha256(json.dumps(fixed).encode()).hexdigest()


def _digest(meta: dict[str, str], row: tuple[int, bytes, str], log_sum: str) -> str:
    """SHA-256 of the meta rows' SHA-256 (but ``session``; computed once per meta table), the
    snapshot row and ``log_sum``."""
    samples, data, windows = row
    fixed = tuple(sorted((name, value) for name, value in meta.items() if name != "session"))
    digest = hashlib.sha256(json.dumps([_meta_digest(fixed), samples, windows, log_sum]).encode())
    digest.update(data)
    return digest.hexdigest()


def _stored_row(db: sqlite3.Connection) -> tuple[tuple[int, bytes, str], tuple[str, ...]]:
    """The snapshot row (samples, data, windows) and its integrity fields, as stored."""
    samples, data, windows, *integrity = db.execute("SELECT * FROM snapshot").fetchone()[1:]
    return (samples, data, windows), tuple(integrity)


def _verified(
    db: sqlite3.Connection, meta: dict[str, str]
) -> tuple[tuple[int, bytes, str], str] | None:
    """The snapshot row and ``log_sum`` if they match the stored digest, else None."""
    row, (stored_sum, digest) = _stored_row(db)
    log_sum = _log_sum(db)
    if log_sum != stored_sum or _digest(meta, row, log_sum) != digest:
        return None
    return row, log_sum


def _main_file_is_sound(path: Path) -> bool:
    """Whether the main file alone (its log ignored) passes the integrity check."""
    with contextlib.suppress(sqlite3.DatabaseError):
        with contextlib.closing(sqlite3.connect(_uri(path, "mode=ro&immutable=1"), uri=True)) as db:
            return _verified(db, _read_meta(db)) is not None
    return False


# ------------------------------------------------------------------------------ building
def _install(
    path: Path, write: Callable[[Path], None], *, exclusive: bool = False, lock: bool = False
) -> int | None:
    """Builds ``path`` atomically: ``write`` fills (and fsyncs) a mode-0600 temporary file in
    the same directory, which is then renamed over ``path`` (or hard-linked to it when
    ``exclusive``: FileExistsError if it exists); finally the directory is fsynced. A crash at
    any point leaves either the old file or the new one, never a mix.

    Returns:
      With ``lock``, the descriptor of the writer's lock on the new file, taken before it
      appeared under ``path`` (no other process can open it first); else None.
    """
    fd, name = tempfile.mkstemp(prefix=_temporary_prefix(path), suffix=".tmp", dir=path.parent)
    os.close(fd)
    temporary, lock_fd = Path(name), None
    try:
        write(temporary)
        lock_fd = _lock(temporary) if lock else None
        if exclusive:
            os.link(temporary, path)
        else:
            os.replace(temporary, path)
        _fsync(path.parent)
    except BaseException:
        if lock_fd is not None:
            os.close(lock_fd)
        raise
    finally:
        temporary.unlink(missing_ok=True)
    return lock_fd


def _build(
    temporary: Path,
    config: TrialConfig,
    sensitive: bool,
    snap: Snapshot,
    assignments: Iterable[tuple[int, int]],
    migrated: int | None,
) -> None:
    """Writes a complete store into the (empty) file ``temporary`` and fsyncs it: schema 4, or
    schema 2 for a schema-1 file (``migrated``), whose state is the flat list of its leaves."""
    db = sqlite3.connect(temporary, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
        db.executescript(_TABLES)
        db.execute("BEGIN IMMEDIATE")
        meta = {
            "format": STATE_FORMAT,
            "schema_version": str(SCHEMA_VERSION if migrated is None else 2),
            "store_id": secrets.token_hex(16),
            "sensitive": json.dumps(sensitive),
            "config": _encode_config(config),
            "layout": json.dumps(_layout(_leaves(snap))),
        }
        if migrated is None:
            meta["paths"] = json.dumps(_paths(snap.state))
        else:
            meta["migrated"] = json.dumps({"schema_version": 1, "samples": migrated})
        db.executemany("INSERT INTO meta VALUES (?, ?)", [*meta.items(), ("session", "")])
        db.executemany("INSERT INTO assignments VALUES (?, ?, NULL)", assignments)
        row = _snapshot_row(snap)
        log_sum = _log_sum(db)
        db.execute(
            "INSERT INTO snapshot VALUES (0, ?, ?, ?, ?, ?)",
            (*row, log_sum, _digest(meta, row, log_sum)),
        )
        db.execute("COMMIT")
    finally:
        db.close()  # checkpoints the log into the file and removes it
    _fsync(temporary)


# ------------------------------------------------------------------------------ opening
def _check_log_present(path: Path, main: dict[str, str]) -> None:
    """Refuses a main file (``main``: its meta table alone) whose mark says a session is open
    while its log is missing; run before SQLite looks for the log."""
    log = _log(path)
    if main.get("session") and not log.exists():
        raise ValueError(
            f"trial {path} was not closed cleanly and its log {log.name} is missing: the log "
            f"holds the records since it was opened. Put {log.name} back beside {path.name} "
            "(an open or interrupted trial is both files; python -m jaxbai.trial backup "
            "copies one into a single file)"
        )


def _check_log_owner(path: Path, main: dict[str, str], view: dict[str, str]) -> None:
    """Refuses a log that belongs to another store: ``view``, the meta table SQLite reads
    through the log, names another ``store_id`` than ``main``, the main file's alone."""
    if main.get("store_id") != view.get("store_id"):
        log = _log(path)
        raise ValueError(
            f"the log {log.name} beside {path} belongs to another trial: move it away and put "
            f"back {path.name}'s own log (or restore a backup); nothing was changed"
        )


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
        self._synchronous = SYNCHRONOUS
        with _readable(path):
            self._meta = _read_meta(db)
            self._check_schema()
            if lock_fd is not None and "store_id" not in self._meta:
                self._add_integrity()
            self._row, self._log_sum = verified or self._verified_row()
            self._issued = self._read_issued()
        if db.in_transaction:  # a reader's: later reads (actions) take committed prefixes
            db.execute("COMMIT")
        try:
            self._paths = json.loads(self._meta["paths"]) if "paths" in self._meta else None
            self.config = _decode_config(self._meta["config"])
            self.sensitive = bool(json.loads(self._meta["sensitive"]))
            migrated = self._meta.get("migrated")
            self.migrated_at = None if migrated is None else json.loads(migrated)["samples"]
            self._layout = json.loads(self._meta["layout"])
        except (KeyError, TypeError, ValueError) as err:
            what = f"its meta table: {type(err).__name__} {err}"
            raise CorruptStoreError(f"trial {path} " + _CORRUPT.format(what=what)) from err

    @property
    def writable(self) -> bool:
        """Whether this store was opened for writing (it then holds the lock)."""
        return self._lock_fd is not None

    def _check_schema(self) -> None:
        meta = self._meta
        if meta.get("format") != STATE_FORMAT:
            raise ValueError(f"{self.path} is not a jaxbai trial store")
        if meta.get("schema_version") not in _READABLE_SCHEMAS:
            raise ValueError(
                f"unsupported trial schema version {meta.get('schema_version')!r} "
                f"(this jaxbai reads version {SCHEMA_VERSION} and migrates versions 1 to 3)"
            )

    def _verified_row(self) -> tuple[tuple[int, bytes, str], str]:
        """The snapshot row and ``log_sum``, checked against the digest (schema 4).

        Raises:
          CorruptStoreError: they disagree; the message says whether the main file alone is
            sound (then its log is another trial's or damaged).
        """
        if "store_id" not in self._meta:  # schemas 2 and 3, read-only: nothing to verify
            return _stored_row(self._db)[0], ""
        verified = _verified(self._db, self._meta)
        if verified is not None:
            return verified
        log = _log(self.path)
        if log.exists() and log.stat().st_size and _main_file_is_sound(self.path):
            raise CorruptStoreError(
                f"the log {log.name} does not match trial {self.path} (another trial's log, or "
                f"a damaged one): restore the trial's own log, or a backup; move {log.name} "
                "away only if it is not this trial's, as it holds its records since it was "
                "last opened"
            )
        raise CorruptStoreError(
            f"trial {self.path} " + _CORRUPT.format(what="its digest does not match")
        )

    def _add_integrity(self) -> None:
        """Gives a schema-2 or 3 store its integrity fields (schema 3 becomes 4), in one
        transaction; the contents are trusted as they are, having no digest to check."""
        meta = {**self._meta, "store_id": secrets.token_hex(16), "session": ""}
        if meta["schema_version"] == "3":
            meta["schema_version"] = str(SCHEMA_VERSION)
        self._transaction(
            ("ALTER TABLE snapshot ADD COLUMN log_sum TEXT NOT NULL DEFAULT ''", ()),
            ("ALTER TABLE snapshot ADD COLUMN digest TEXT NOT NULL DEFAULT ''", ()),
            *(("INSERT OR REPLACE INTO meta VALUES (?, ?)", item) for item in meta.items()),
        )
        self._meta = meta
        self._store_row(_stored_row(self._db)[0], _log_sum(self._db))

    @classmethod
    def create(cls, path: Path, config: TrialConfig, sensitive: bool, snap: Snapshot) -> Store:
        """Creates the store at ``path`` atomically (FileExistsError if it exists) and opens
        it for writing."""

        def write(temporary: Path) -> None:
            _build(temporary, config, sensitive, snap, (), None)

        lock_fd = _install(path, write, exclusive=True, lock=True)
        assert lock_fd is not None
        try:
            return cls._connect(path, lock_fd)
        except BaseException:
            os.close(lock_fd)
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
            _remove_stale_temporaries(path)
        lock_fd = _lock(path) if writable else None
        try:
            with open(path, "rb") as handle:
                head = handle.read(len(_SQLITE_MAGIC))
            if head != _SQLITE_MAGIC:
                if lock_fd is None:
                    raise ValueError(
                        f"{path} is a schema-1 state file (or not a trial): open it for writing "
                        "once to migrate it"
                    )
                cls._migrate(path)
                os.close(lock_fd)
                lock_fd = None
                lock_fd = _lock(path)
            reader = cls._connect(path, None)  # checks the log and the digest, writing nothing
            if lock_fd is None:
                return reader
            verified = reader._row, reader._log_sum
            reader.close()
            return cls._connect(path, lock_fd, verified if "store_id" in reader._meta else None)
        except BaseException:
            if lock_fd is not None:
                os.close(lock_fd)
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
            raise ValueError(f"{path} is not a trial store (not in WAL mode)")
        with _readable(path):
            if lock_fd is None:
                main = _main_file_meta(path)
                _check_log_present(path, main)
                db = sqlite3.connect(_reader_uri(path), uri=True, isolation_level=None)
            else:
                db = sqlite3.connect(path, isolation_level=None)
        try:
            with _readable(path):
                if lock_fd is None:
                    db.execute("BEGIN")
                    _check_log_owner(path, main, _read_meta(db))
                else:
                    db.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
            store = cls(path, db, lock_fd, verified)
            if lock_fd is not None:
                store._begin_session()
            return store
        except BaseException:
            db.close()
            raise

    @staticmethod
    def _migrate(path: Path) -> None:
        """Rewrites a schema-1 JSON state file as a store, atomically (temporary, rename)."""
        config, sensitive, snap, actions, pending = _schema1.read(path.read_bytes())
        assignments = list(enumerate(actions))
        if pending is not None:
            assignments.append((len(actions), pending))
        _install(path, lambda t: _build(t, config, sensitive, snap, assignments, snap.samples))

    # --- sessions -----------------------------------------------------------------------------
    def _checkpoint(self) -> bool:
        """Moves the whole log into the main file, retrying while readers hold it (up to
        `CHECKPOINT_WAIT_S`); whether it succeeded."""
        deadline = time.monotonic() + CHECKPOINT_WAIT_S
        while True:
            busy, log, done = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy and log == done:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)

    def _set_session(self, token: str) -> None:
        self._transaction(("UPDATE meta SET value = ? WHERE name = 'session'", (token,)))
        self._meta["session"] = token

    def _begin_session(self) -> None:
        """Marks the main file as open (see the module docstring), before any record."""
        self._set_session(secrets.token_hex(16))
        if not self._checkpoint():
            raise RuntimeError(
                f"readers of trial {self.path} kept its log busy for {CHECKPOINT_WAIT_S:g} s; "
                "retry when they are done"
            )

    def close(self) -> None:
        """Closes the database and releases the lock. A writer first clears its session mark
        and checkpoints, leaving one self-contained file; if that fails (a full disk, a
        reader holding the log), the store stays two files, still complete, and the next
        writer finishes the job."""
        try:
            if self.writable:
                with contextlib.suppress(sqlite3.Error):
                    self._set_session("")
                    self._checkpoint()
        finally:
            self._db.close()
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    # --- reading ------------------------------------------------------------------------------
    def snapshot(self, template: Any) -> Snapshot:
        """The stored snapshot; ``template`` is a state of the algorithm with the right layout.

        Raises:
          ValueError: the stored state does not match the template's layout.
        """
        samples, data, windows = self._row
        leaves, treedef = jax.tree_util.tree_flatten(template)
        expected = [np.asarray(jax.random.key_data(jax.random.key(0))), *map(np.asarray, leaves)]
        arrays = _decode(data, self._layout)
        if self._paths is None:
            arrays = [arrays[0], *_schema2.state_leaves(arrays[1:], template)]
        paths = _paths(template) if self._paths is None else self._paths
        if _layout(arrays) != _layout(expected) or paths != _paths(template):
            raise ValueError("the trial store does not match the algorithm's state layout")
        key = jax.random.wrap_key_data(jnp.asarray(arrays[0]))
        state = jax.tree_util.tree_unflatten(treedef, [jnp.asarray(a) for a in arrays[1:]])
        snap = Snapshot(key, state, samples, _decode_windows(windows))
        if self._paths is None and self.writable:
            self._upgrade(snap)
        return snap

    def _upgrade(self, snap: Snapshot) -> None:
        """Rewrites a schema-2 store's snapshot and layout as schema 4, in one transaction."""
        meta = {
            **self._meta,
            "schema_version": str(SCHEMA_VERSION),
            "layout": json.dumps(_layout(_leaves(snap))),
            "paths": json.dumps(_paths(snap.state)),
        }
        row = _snapshot_row(snap)
        self._transaction(
            *(("INSERT OR REPLACE INTO meta VALUES (?, ?)", item) for item in meta.items()),
            _row_statement(meta, row, self._log_sum),
        )
        self._meta, self._row = meta, row
        self._layout, self._paths = json.loads(meta["layout"]), _paths(snap.state)

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
        if not self.writable:
            raise RuntimeError(f"trial {self.path} is open read-only")
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for sql, args in statements:
                db.execute(sql, tuple(args))
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise

    def _store_row(self, row: tuple[int, bytes, str], log_sum: str) -> None:
        self._transaction(_row_statement(self._meta, row, log_sum))
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
          RuntimeError: the store is open read-only.
          sqlite3.Error, OSError: the write failed (a full disk, say); nothing was changed.
        """
        db = self._db
        if not fsync and self._synchronous == "FULL":
            db.execute("PRAGMA synchronous=NORMAL")
            try:
                self.write(snap, issue, hold, release)
            finally:
                db.execute("PRAGMA synchronous=FULL")
            return
        if not self.writable:
            raise RuntimeError(f"trial {self.path} is open read-only")
        issue = list(issue)
        changes: dict[int, str | None] = {p: float(z).hex() for p, z in hold}
        changes.update((p, None) for p in release)
        row = self._row if snap is None else _snapshot_row(snap)
        db.execute("BEGIN IMMEDIATE")
        try:
            stored = self._changed_rows(changes)
            log_sum = _updated(
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
            db.execute(*_row_statement(self._meta, row, log_sum))
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise
        self._row, self._log_sum = row, log_sum


def _row_statement(
    meta: dict[str, str], row: tuple[int, bytes, str], log_sum: str
) -> tuple[str, tuple[Any, ...]]:
    """The UPDATE that writes the snapshot row with its ``log_sum`` and digest."""
    return (
        "UPDATE snapshot SET samples = ?, data = ?, windows = ?, log_sum = ?, digest = ?",
        (*row, log_sum, _digest(meta, row, log_sum)),
    )


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
            copy = sqlite3.connect(temporary, isolation_level=None)
            try:
                reader._db.backup(copy)
                copy.execute("UPDATE meta SET value = '' WHERE name = 'session'")
            finally:
                copy.close()  # checkpoints the copy's log into it
            _fsync(temporary)
            if "store_id" in reader._meta and not _main_file_is_sound(temporary):
                raise CorruptStoreError(f"the copy of {source} failed its integrity check")

        _install(target, write, exclusive=True)
    finally:
        reader.close()
