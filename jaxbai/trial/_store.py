"""Storage of a trial: one SQLite database with O(1) writes per record, and the lock.

The store (schema 3) has three tables:

* ``meta(name, value)``: ``format``, ``schema_version``, ``sensitive``, ``config`` (JSON, floats
  as hexadecimal strings), ``layout`` (dtype and shape of the key data and of every state leaf),
  ``paths`` (the path of every state leaf in the algorithm's state) and, for a store migrated
  from a schema-1 JSON file, ``migrated`` (the sample it happened at). A schema-2 store (no
  ``paths``; a flat Top Two state) is migrated when its snapshot is first read, in one
  transaction (`jaxbai.trial._schema2`); a schema-1 file becomes a schema-2 store first.
* ``snapshot``: one row, rewritten by every applied outcome: ``samples`` (outcomes applied),
  ``data`` (the key data and state leaves, bit for bit) and ``windows`` (per arm, count and
  exact sum of the unreleased observations, as fractions).
* ``assignments(participant, arm, outcome)``: every issued assignment, participant ids being
  sample indices. Ids below ``samples`` are applied; the others are open, or hold an outcome
  (``float.hex``) that arrived before an earlier participant's. Applying it clears it again.

The database runs in WAL mode with ``synchronous=FULL``: a write transaction appends the pages
it changes to the log and fsyncs it, so a record costs the same however long the trial is, and a
process killed at any instant leaves the last committed transaction. Issuing assignments commits
without the fsync (``synchronous=NORMAL`` for that transaction): a killed process keeps it all
the same, a power failure may lose it, but assignments are a deterministic function of the
stored state (``select``, ``plan``), so they are issued again identically, and the next outcome's
fsync covers the log before it. A new store is built in a temporary file and linked into place,
so creation is atomic too. Files are created with mode
0600 (SQLite gives its ``-wal`` and ``-shm`` files the database's mode).
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
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

__all__ = ["SYNCHRONOUS", "Store", "lock"]

_SQLITE_MAGIC = b"SQLite format 3\x00"

SYNCHRONOUS = "FULL"
"""``PRAGMA synchronous`` of every connection: FULL fsyncs the log at each commit. Tests of
decisions rather than durability may set ``"OFF"``."""

_TABLES = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE snapshot (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    samples INTEGER NOT NULL,
    data BLOB NOT NULL,
    windows TEXT NOT NULL
);
CREATE TABLE assignments (
    participant INTEGER PRIMARY KEY,
    arm INTEGER NOT NULL,
    outcome TEXT
);
"""


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


def lock(path: Path) -> int:
    """Takes the exclusive advisory lock ``<path>.lock`` (mode 0600) without waiting.

    ``fcntl`` is imported here, not at module level, so that jaxbai imports where it does not
    exist (Windows); only running a trial needs it.

    Returns:
      The lock file's descriptor; closing it releases the lock.

    Raises:
      RuntimeError: another process holds the lock.
    """
    import fcntl

    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as err:
        os.close(fd)
        raise RuntimeError(f"trial {path} is open in another process") from err
    return fd


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


# ------------------------------------------------------------------------------ the store
def _install(path: Path, write: Callable[[Path], None], *, exclusive: bool = False) -> None:
    """Builds ``path`` atomically: ``write`` fills (and fsyncs) a mode-0600 temporary file in
    the same directory, which is then renamed over ``path`` (or hard-linked to it when
    ``exclusive``: FileExistsError if it exists); finally the directory is fsynced. A crash at
    any point leaves either the old file or the new one, never a mix."""
    fd, name = tempfile.mkstemp(prefix=_temporary_prefix(path), suffix=".tmp", dir=path.parent)
    os.close(fd)
    temporary = Path(name)
    try:
        write(temporary)
        if exclusive:
            os.link(temporary, path)
        else:
            os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    _fsync(path.parent)


def _build(
    temporary: Path,
    config: TrialConfig,
    sensitive: bool,
    snap: Snapshot,
    assignments: Iterable[tuple[int, int]],
    migrated: int | None,
) -> None:
    """Writes a complete store into the (empty) file ``temporary`` and fsyncs it: schema 3, or
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
            "sensitive": json.dumps(sensitive),
            "config": _encode_config(config),
            "layout": json.dumps(_layout(_leaves(snap))),
        }
        if migrated is None:
            meta["paths"] = json.dumps(_paths(snap.state))
        else:
            meta["migrated"] = json.dumps({"schema_version": 1, "samples": migrated})
        db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        db.execute("INSERT INTO snapshot VALUES (0, ?, ?, ?)", _snapshot_row(snap))
        db.executemany("INSERT INTO assignments VALUES (?, ?, NULL)", assignments)
        db.execute("COMMIT")
    finally:
        db.close()  # checkpoints the log into the file and removes it
    _fsync(temporary)


class Store:
    """One trial's database; see the module docstring for its tables.

    Build one with `Store.create` or `Store.open`; the caller holds the trial's `lock`.
    """

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self._db = db
        self._synchronous = SYNCHRONOUS
        meta = dict(db.execute("SELECT name, value FROM meta"))
        if meta.get("format") != STATE_FORMAT:
            raise ValueError("not a jaxbai trial store")
        if meta.get("schema_version") not in (str(SCHEMA_VERSION), "2"):
            raise ValueError(
                f"unsupported trial schema version {meta.get('schema_version')!r} "
                f"(this jaxbai reads version {SCHEMA_VERSION} and migrates versions 1 and 2)"
            )
        self._paths = json.loads(meta["paths"]) if "paths" in meta else None
        self.config = _decode_config(meta["config"])
        self.sensitive = bool(json.loads(meta["sensitive"]))
        self.migrated_at = json.loads(meta["migrated"])["samples"] if "migrated" in meta else None
        self._layout = json.loads(meta["layout"])

    @classmethod
    def _connect(cls, path: Path) -> Store:
        db = sqlite3.connect(path, isolation_level=None)
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                raise ValueError(f"{path} is not a trial store (not in WAL mode)")
            db.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
            return cls(path, db)
        except BaseException:
            db.close()
            raise

    @classmethod
    def create(cls, path: Path, config: TrialConfig, sensitive: bool, snap: Snapshot) -> Store:
        """Creates the store at ``path`` atomically (FileExistsError if it exists)."""
        _install(path, lambda t: _build(t, config, sensitive, snap, (), None), exclusive=True)
        return cls._connect(path)

    @classmethod
    def open(cls, path: Path) -> Store:
        """Opens the store at ``path``, first migrating a schema-1 JSON state file in place.

        Raises:
          FileNotFoundError: no such file.
          ValueError: not a trial store, an unsupported schema, or a schema-1 file that cannot
            be migrated.
        """
        _remove_stale_temporaries(path)
        with open(path, "rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
        if head != _SQLITE_MAGIC:
            cls._migrate(path)
        return cls._connect(path)

    @staticmethod
    def _migrate(path: Path) -> None:
        """Rewrites a schema-1 JSON state file as a store, atomically (temporary, rename)."""
        config, sensitive, snap, actions, pending = _schema1.read(path.read_bytes())
        assignments = list(enumerate(actions))
        if pending is not None:
            assignments.append((len(actions), pending))
        _install(path, lambda t: _build(t, config, sensitive, snap, assignments, snap.samples))

    def close(self) -> None:
        """Closes the database (committed transactions are already durable)."""
        self._db.close()

    # --- reading ------------------------------------------------------------------------------
    def snapshot(self, template: Any) -> Snapshot:
        """The stored snapshot; ``template`` is a state of the algorithm with the right layout.

        Raises:
          ValueError: the stored state does not match the template's layout.
        """
        samples, data, windows = self._db.execute(
            "SELECT samples, data, windows FROM snapshot"
        ).fetchone()
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
        if self._paths is None:
            self._upgrade(snap)
        return snap

    def _upgrade(self, snap: Snapshot) -> None:
        """Rewrites a schema-2 store's snapshot and layout as schema 3, in one transaction."""
        rows = {
            "schema_version": str(SCHEMA_VERSION),
            "layout": json.dumps(_layout(_leaves(snap))),
            "paths": json.dumps(_paths(snap.state)),
        }
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", rows.items())
            self._db.execute("UPDATE snapshot SET data = ?", (_snapshot_row(snap)[1],))
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._layout, self._paths = json.loads(rows["layout"]), _paths(snap.state)

    def issued(self, samples: int) -> tuple[dict[int, int], dict[int, float]]:
        """Assignments not yet applied (participant → arm) and held outcomes (participant →
        outcome), both in participant order."""
        rows = self._db.execute(
            "SELECT participant, arm, outcome FROM assignments WHERE participant >= ? "
            "ORDER BY participant",
            (samples,),
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
        """
        db = self._db
        if not fsync and self._synchronous == "FULL":
            db.execute("PRAGMA synchronous=NORMAL")
            try:
                self.write(snap, issue, hold, release)
            finally:
                db.execute("PRAGMA synchronous=FULL")
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("INSERT INTO assignments VALUES (?, ?, NULL)", issue)
            db.executemany(
                "UPDATE assignments SET outcome = ? WHERE participant = ?",
                ((float(z).hex(), p) for p, z in hold),
            )
            db.executemany(
                "UPDATE assignments SET outcome = NULL WHERE participant = ?",
                ((p,) for p in release),
            )
            if snap is not None:
                db.execute(
                    "UPDATE snapshot SET samples = ?, data = ?, windows = ?", _snapshot_row(snap)
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
