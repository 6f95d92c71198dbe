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

import json
import secrets
from pathlib import Path

import jaxbai.trial._schema1 as _schema1
from jaxbai.trial._codec import build_store, leaf_layout, snapshot_leaves, state_paths
from jaxbai.trial._config import SCHEMA_VERSION, STATE_FORMAT, Snapshot
from jaxbai.trial._files import install

__all__ = [
    "INTEGRITY_COLUMNS",
    "READABLE_SCHEMAS",
    "check_schema",
    "migrate_schema1",
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


def check_schema(path: Path, meta: dict[str, str]) -> None:
    """Refuses the store ``path`` if its meta table ``meta`` is not a trial store's of a schema
    this code reads (`READABLE_SCHEMAS`)."""
    if meta.get("format") != STATE_FORMAT:
        raise ValueError(f"{path} is not a jaxbai trial store")
    if meta.get("schema_version") not in READABLE_SCHEMAS:
        raise ValueError(
            f"unsupported trial schema version {meta.get('schema_version')!r} "
            f"(this jaxbai reads version {SCHEMA_VERSION} and migrates versions 1 to 3)"
        )


def migrate_schema1(path: Path) -> None:
    """Rewrites a schema-1 JSON state file as a store, atomically (temporary, rename)."""
    config, sensitive, snap, actions, pending = _schema1.read(path.read_bytes())
    assignments = list(enumerate(actions))
    if pending is not None:
        assignments.append((len(actions), pending))
    install(path, lambda t: build_store(t, config, sensitive, snap, assignments, snap.samples))


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
