"""The integrity check of a trial store: ``log_sum``, ``digest`` and `CorruptStoreError`.

``log_sum`` is a multiset hash of the rows of ``assignments``: per row, four 64-bit words
(splitmix64 chains of participant, arm and outcome, one per seed), summed modulo 2⁶⁴ lane by
lane. Each write adds and subtracts the rows it changes (O(changes): ``updated_log_sum``);
changing any field of a row changes every lane of its hash. ``digest`` is SHA-256 of the meta
rows (but ``session``), the snapshot row and ``log_sum`` (``digest_of``; ``row_statement``
writes it with the row). Every open recomputes both (``log_sum_of``: O(rows), one vectorised
pass; ``verify``) and refuses a store that disagrees, so a flipped bit of the state, the log or
the configuration is never continued. It detects corruption, not forgery: whoever can write
the file can recompute the digest. ``readable`` turns SQLite's errors on a damaged file into
`CorruptStoreError`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from jaxbai.trial._files import read_meta, uri

__all__ = [
    "CORRUPT",
    "CorruptStoreError",
    "Row",
    "digest_of",
    "log_sum_of",
    "main_file_is_sound",
    "readable",
    "row_statement",
    "stored_row",
    "updated_log_sum",
    "verify",
]

CORRUPT = (
    "is damaged: restore it from a backup ({what}; python -m jaxbai.trial backup makes "
    "backups of a sound trial)"
)


class CorruptStoreError(ValueError):
    """The store fails its integrity check or cannot be read as a database."""


_ENVIRONMENT = (
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
    "SQLITE_NOMEM",
    "SQLITE_READONLY",
    "SQLITE_INTERRUPT",
    "SQLITE_IOERR",
    "SQLITE_FULL",
    "SQLITE_CANTOPEN",
    "SQLITE_PERM",
    "SQLITE_PROTOCOL",
    "SQLITE_AUTH",
    "SQLITE_NOLFS",
)
"""SQLite's error codes (prefixes) for a failure of the environment (locks, disk, memory,
permissions), not of the file's contents."""

_ENVIRONMENT_MESSAGES = (
    "database is locked",
    "database table is locked",
    "unable to open database file",
    "disk I/O error",
    "database or disk is full",
    "attempt to write a readonly database",
    "out of memory",
    "interrupted",
)
"""The same failures' messages, for Pythons without ``sqlite_errorname`` (before 3.11)."""

_DECODING = (ValueError, TypeError, KeyError, IndexError, OverflowError, UnicodeError)
"""What decoding a store's values raises when they are not what the store wrote."""


def _environmental(err: sqlite3.DatabaseError) -> bool:
    name = getattr(err, "sqlite_errorname", "")
    if name:
        return name.startswith(_ENVIRONMENT)
    return str(err).startswith(_ENVIRONMENT_MESSAGES)


@contextlib.contextmanager
def readable(path: Path):
    """Reading a store: every error of a damaged file becomes `CorruptStoreError` naming
    ``path`` — SQLite's (but those of the environment: locks, disk, permissions) and those of
    decoding values the store did not write. Checks that refuse a store with their own
    message run outside this block."""
    try:
        yield
    except CorruptStoreError:
        raise
    except sqlite3.DatabaseError as err:
        if _environmental(err):
            raise
        raise CorruptStoreError(f"trial {path} " + CORRUPT.format(what=err)) from err
    except _DECODING as err:
        what = f"{type(err).__name__}: {err}"
        raise CorruptStoreError(f"trial {path} " + CORRUPT.format(what=what)) from err


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


def updated_log_sum(log_sum: str, added: list[Row], removed: list[Row]) -> str:
    """``log_sum`` after adding and removing rows (O(rows changed)); lanes wrap modulo 2⁶⁴."""
    hashes = _rows_hashes([*added, *removed])
    change = hashes[:, : len(added)].sum(axis=1) - hashes[:, len(added) :].sum(axis=1)
    return _hex(np.frombuffer(bytes.fromhex(log_sum), ">u8").astype(np.uint64) + change)


def log_sum_of(db: sqlite3.Connection) -> str:
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


def digest_of(meta: dict[str, str], row: tuple[int, bytes, str], log_sum: str) -> str:
    """SHA-256 of the meta rows' SHA-256 (but ``session``; computed once per meta table), the
    snapshot row and ``log_sum``."""
    samples, data, windows = row
    fixed = tuple(sorted((name, value) for name, value in meta.items() if name != "session"))
    digest = hashlib.sha256(json.dumps([_meta_digest(fixed), samples, windows, log_sum]).encode())
    digest.update(data)
    return digest.hexdigest()


def stored_row(db: sqlite3.Connection) -> tuple[tuple[int, bytes, str], tuple[str, ...]]:
    """The snapshot row (samples, data, windows) and its integrity fields, as stored."""
    samples, data, windows, *integrity = db.execute("SELECT * FROM snapshot").fetchone()[1:]
    return (samples, data, windows), tuple(integrity)


def verify(
    db: sqlite3.Connection, meta: dict[str, str]
) -> tuple[tuple[int, bytes, str], str] | None:
    """The snapshot row and ``log_sum`` if they match the stored digest, else None."""
    row, (stored_sum, digest) = stored_row(db)
    log_sum = log_sum_of(db)
    if log_sum != stored_sum or digest_of(meta, row, log_sum) != digest:
        return None
    return row, log_sum


def main_file_is_sound(path: Path) -> bool:
    """Whether the main file alone (its log ignored) passes the integrity check."""
    with contextlib.suppress(sqlite3.DatabaseError):
        with contextlib.closing(sqlite3.connect(uri(path, "mode=ro&immutable=1"), uri=True)) as db:
            return verify(db, read_meta(db)) is not None
    return False


def row_statement(
    meta: dict[str, str], row: tuple[int, bytes, str], log_sum: str
) -> tuple[str, tuple[Any, ...]]:
    """The UPDATE that writes the snapshot row with its ``log_sum`` and digest."""
    return (
        "UPDATE snapshot SET samples = ?, data = ?, windows = ?, log_sum = ?, digest = ?",
        (*row, log_sum, digest_of(meta, row, log_sum)),
    )
