"""Migration of older trial stores to the current schema (`jaxbai.trial._config.SCHEMA_VERSION`).

Which schemas are read (`READABLE_SCHEMAS`, checked by ``check_schema``), and what each
migration changes: a schema-1 JSON state file is rewritten as a store by its first writer
(``migrate_schema1``: atomically, as schema 2); schemas 2 and 3 get their integrity fields from
their first writer (``INTEGRITY_COLUMNS``, ``with_integrity``), and a schema-2 store its layout
and leaf paths once its snapshot is read (``upgraded``). `jaxbai.trial._store.Store` runs each
change in one transaction; `jaxbai.trial._schema1` and `jaxbai.trial._schema2` read the old
layouts.
"""

from __future__ import annotations

import contextlib
import functools
import json
import secrets
import sqlite3
from pathlib import Path
from typing import NoReturn

import jaxbai.trial._schema1 as _schema1
from jaxbai.trial._codec import TABLES, build_store, leaf_layout, snapshot_leaves, state_paths
from jaxbai.trial._config import SCHEMA_VERSION, STATE_FORMAT, Snapshot
from jaxbai.trial._files import install
from jaxbai.trial._integrity import CORRUPT, CorruptStoreError

__all__ = [
    "INTEGRITY_COLUMNS",
    "READABLE_SCHEMAS",
    "check_pages",
    "check_schema",
    "migrate_schema1",
    "read_tables",
    "refuse_schema1_reader",
    "upgraded",
    "with_integrity",
]

READABLE_SCHEMAS = (str(SCHEMA_VERSION), "3", "2")
"""Schemas this code reads: 2 and 3 (no integrity fields) are upgraded by their first writer."""

INTEGRITY_COLUMNS = (
    ("ALTER TABLE snapshot ADD COLUMN log_sum TEXT NOT NULL DEFAULT ''", ()),
    ("ALTER TABLE snapshot ADD COLUMN digest TEXT NOT NULL DEFAULT ''", ()),
)
"""The statements that give a schema-2 or 3 snapshot table its integrity columns."""


SCHEMA2_TABLES = TABLES.replace(",\n    log_sum TEXT NOT NULL,\n    digest TEXT NOT NULL", "")
"""The tables of schemas 2 and 3: schema 4's without the integrity columns."""

_MASTER = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
"""The definition of every table and index of a database, in a fixed order."""

Tables = tuple[tuple[str, str, str, "str | None"], ...]


def read_tables(db: sqlite3.Connection) -> Tables:
    """The definitions of the store's tables and indexes (`_MASTER`)."""
    return tuple(db.execute(_MASTER).fetchall())


def _tables_of(script: str, *alterations: tuple[str, tuple[()]]) -> Tables:
    with contextlib.closing(sqlite3.connect(":memory:")) as db:
        db.executescript(script)
        for sql, _ in alterations:
            db.execute(sql)
        return read_tables(db)


@functools.cache
def _schema_tables(integrity: bool) -> tuple[Tables, ...]:
    """The table definitions a store may have: with integrity fields, schema 4's as created or
    as schemas 2 and 3 are given them (SQLite appends the added columns to the definition);
    without, schemas 2 and 3's."""
    if integrity:
        return _tables_of(TABLES), _tables_of(SCHEMA2_TABLES, *INTEGRITY_COLUMNS)
    return (_tables_of(SCHEMA2_TABLES),)


def _damaged(path: Path, what: str) -> CorruptStoreError:
    return CorruptStoreError(f"trial {path} " + CORRUPT.format(what=what))


def check_schema(path: Path, meta: dict[str, str], tables: Tables) -> None:
    """Refuses the store ``path`` unless its meta table ``meta`` names a schema this code reads
    (`READABLE_SCHEMAS`) and its tables (``tables``, `read_tables`) are exactly that schema's.

    Raises:
      CorruptStoreError: the tables are a trial store's but the meta table does not match them
        (a damaged store), or the other way round.
      ValueError: not a trial store, or a schema this code does not read (a newer jaxbai's).
    """
    schema = meta.get("schema_version")
    ours = tables in (*_schema_tables(True), *_schema_tables(False))
    if meta.get("format") != STATE_FORMAT or schema not in READABLE_SCHEMAS:
        newer = isinstance(schema, str) and schema.isdigit() and int(schema) > SCHEMA_VERSION
        if meta.get("format") == STATE_FORMAT and newer:
            raise ValueError(
                f"trial {path} has schema version {schema}, written by a newer jaxbai (this one "
                f"reads version {SCHEMA_VERSION} and migrates versions 1 to 3): upgrade jaxbai"
            )
        if ours or meta.get("format") == STATE_FORMAT:
            raise _damaged(path, f"format {meta.get('format')!r}, schema version {schema!r}")
        raise ValueError(f"{path} is not a jaxbai trial store")
    integrity = "store_id" in meta
    expected = {"2": integrity, "3": False, str(SCHEMA_VERSION): True}[schema]
    if integrity != expected or integrity != ("session" in meta):
        raise _damaged(path, f"its meta table does not match schema {schema}")
    if tables not in _schema_tables(integrity):
        raise _damaged(path, f"its tables are not schema {schema}'s")


def check_pages(path: Path, db: sqlite3.Connection) -> None:
    """Refuses a store whose pages fail SQLite's integrity check (a damaged index or b-tree,
    which reads might pass over until a write trips on it)."""
    (result,) = db.execute("PRAGMA integrity_check(1)").fetchone()
    if result != "ok":
        raise _damaged(path, f"SQLite's integrity check: {result}")


def migrate_schema1(path: Path) -> None:
    """Rewrites a schema-1 JSON state file as a store, atomically (temporary, rename)."""
    config, sensitive, snap, actions, pending = _schema1.read(path.read_bytes(), path)
    assignments = list(enumerate(actions))
    if pending is not None:
        assignments.append((len(actions), pending))
    install(path, lambda t: build_store(t, config, sensitive, snap, assignments, snap.samples))


def refuse_schema1_reader(path: Path) -> NoReturn:
    """Refuses to read ``path``, which is not a SQLite store in WAL mode: a store's marks
    without its header mean a damaged store, a sound schema-1 file must first be migrated by a
    writer (readers write nothing), anything else is not a trial (`_schema1.read` says which)."""
    _schema1.read(path.read_bytes(), path)
    raise ValueError(f"{path} is a schema-1 state file: open it for writing once to migrate it")


def with_integrity(meta: dict[str, str]) -> dict[str, str]:
    """A schema-2 or 3 store's meta table with its integrity fields, a new ``store_id`` and an
    empty ``session`` (schema 3 becomes 4)."""
    meta = {**meta, "store_id": secrets.token_hex(16), "session": ""}
    if meta["schema_version"] == "3":
        meta["schema_version"] = str(SCHEMA_VERSION)
    return meta


def upgraded(meta: dict[str, str], snap: Snapshot) -> dict[str, str]:
    """A schema-2 store's meta table as schema 4: the layout and leaf paths of ``snap``, its
    snapshot read through the algorithm's state."""
    return {
        **meta,
        "schema_version": str(SCHEMA_VERSION),
        "layout": json.dumps(leaf_layout(snapshot_leaves(snap))),
        "paths": json.dumps(state_paths(snap.state)),
    }
