"""How a trial is written in its store: the tables, the encodings of its rows, a new store.

The encodings of the snapshot's ``data`` (the key data and state leaves, bit for bit, by their
``layout``) and ``windows``, and of the configuration (floats as hexadecimal strings); the
tables of schema 4 (`TABLES`) and ``build_store``, which writes a complete store into a new
file. The module docstring of `jaxbai.trial._store` describes the tables and their fields.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

import jax
import numpy as np

import jaxbai.trial._files as _files
from jaxbai.trial._config import SCHEMA_VERSION, STATE_FORMAT, Snapshot, TrialConfig, Windows
from jaxbai.trial._integrity import digest_of, log_sum_of

__all__ = [
    "TABLES",
    "build_store",
    "decode_config",
    "decode_data",
    "decode_meta",
    "decode_windows",
    "encode_config",
    "encode_windows",
    "leaf_layout",
    "snapshot_leaves",
    "snapshot_row",
    "state_paths",
]

TABLES = """
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


def snapshot_leaves(snap: Snapshot) -> list[np.ndarray]:
    key_data = np.asarray(jax.random.key_data(snap.key))
    return [key_data, *(np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(snap.state))]


def leaf_layout(leaves: list[np.ndarray]) -> list[list[Any]]:
    return [[leaf.dtype.str, list(leaf.shape)] for leaf in leaves]


def state_paths(state: Any) -> list[str]:
    return [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(state)[0]]


def decode_data(data: bytes, layout: list[list[Any]]) -> list[np.ndarray]:
    """The arrays of a snapshot's ``data``, by its stored ``layout``."""
    arrays, offset = [], 0
    for dtype, shape in layout:
        like = np.zeros(shape, np.dtype(dtype))
        arrays.append(np.frombuffer(data, like.dtype, like.size, offset).reshape(like.shape))
        offset += like.nbytes
    if offset != len(data):
        raise ValueError("the trial store's snapshot does not match its layout")
    return arrays


def encode_windows(windows: Windows) -> str:
    return json.dumps([[count, str(total)] for count, total in windows])


def decode_windows(text: str) -> Windows:
    return tuple((int(count), Fraction(total)) for count, total in json.loads(text))


def encode_config(config: TrialConfig) -> str:
    hexed = {"epsilon", "delta"}
    raw = {
        name: (None if value is None else float(value).hex()) if name in hexed else value
        for name, value in vars(config).items()
    }
    return json.dumps(raw, sort_keys=True)


def decode_config(text: str) -> TrialConfig:
    raw = json.loads(text)
    for name in ("epsilon", "delta"):
        raw[name] = None if raw[name] is None else float.fromhex(raw[name])
    return TrialConfig(**raw)


def decode_meta(
    meta: dict[str, str],
) -> tuple[TrialConfig, bool, int | None, list[list[Any]], list[str] | None]:
    """A store's meta table decoded: (configuration, sensitive, the sample of a migration from
    schema 1 or None, the layout of the key data and state leaves, the leaves' paths or None
    for schema 2). KeyError, TypeError, ValueError for a damaged table."""
    migrated = meta.get("migrated")
    return (
        decode_config(meta["config"]),
        bool(json.loads(meta["sensitive"])),
        None if migrated is None else json.loads(migrated)["samples"],
        json.loads(meta["layout"]),
        json.loads(meta["paths"]) if "paths" in meta else None,
    )


def snapshot_row(snap: Snapshot) -> tuple[int, bytes, str]:
    data = b"".join(leaf.tobytes() for leaf in snapshot_leaves(snap))
    return snap.samples, data, encode_windows(snap.windows)


def build_store(
    temporary: Path,
    config: TrialConfig,
    sensitive: bool,
    snap: Snapshot,
    assignments: Iterable[tuple[int, int]],
    migrated: int | None,
) -> None:
    """Writes a complete store into the (empty) file ``temporary`` and fsyncs it: schema 4, or
    schema 2 for a schema-1 file (``migrated``), whose state is the flat list of its leaves."""
    db = sqlite3.connect(_files.uri(temporary, "mode=rwc"), uri=True, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={_files.SYNCHRONOUS}")
        db.executescript(TABLES)
        db.execute("BEGIN IMMEDIATE")
        meta = {
            "format": STATE_FORMAT,
            "schema_version": str(SCHEMA_VERSION if migrated is None else 2),
            "store_id": secrets.token_hex(16),
            "sensitive": json.dumps(sensitive),
            "config": encode_config(config),
            "layout": json.dumps(leaf_layout(snapshot_leaves(snap))),
        }
        if migrated is None:
            meta["paths"] = json.dumps(state_paths(snap.state))
        else:
            meta["migrated"] = json.dumps({"schema_version": 1, "samples": migrated})
        db.executemany("INSERT INTO meta VALUES (?, ?)", [*meta.items(), ("session", "")])
        db.executemany("INSERT INTO assignments VALUES (?, ?, NULL)", assignments)
        row = snapshot_row(snap)
        log_sum = log_sum_of(db)
        db.execute(
            "INSERT INTO snapshot VALUES (0, ?, ?, ?, ?, ?)",
            (*row, log_sum, digest_of(meta, row, log_sum)),
        )
        db.execute("COMMIT")
    finally:
        db.close()  # checkpoints the log into the file and removes it
    _files.fsync(temporary)
