"""Reading the schema-1 state file (one JSON document), for migration to the current store.

Schema 1 kept the whole trial in one JSON document (``format``, ``schema_version``,
``sensitive``, ``config``, ``key``, ``state``, ``actions``, ``pending_arm``, ``windows``), arrays
as dtype, shape and base64 bytes, floats of the configuration as hexadecimal strings, exact sums
as fractions, and was rewritten whole after every change. Its noise was the snapping mechanism;
after migration the trial's later releases use the discrete Laplace of
`jaxbai.mechanisms.discrete`, each still ε-DP (the publication says from which sample on).
"""

from __future__ import annotations

import base64
import binascii
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxbai.trial._algorithm import algorithm_entry, stored_config
from jaxbai.trial._config import STATE_FORMAT, Snapshot, TrialConfig
from jaxbai.trial._integrity import CORRUPT, CorruptStoreError

__all__ = ["read"]


_STORE_MARKS = (STATE_FORMAT.encode(), b"CREATE TABLE snapshot")
"""Bytes every trial store holds (its format tag, its snapshot table's definition) and no
other file is likely to."""


def _array(entry: dict[str, Any]) -> np.ndarray:
    raw = base64.b64decode(entry["data"])
    return np.frombuffer(raw, dtype=np.dtype(entry["dtype"])).reshape(entry["shape"]).copy()


def _float(x: str | None) -> float | None:
    return None if x is None else float.fromhex(x)


def read(data: bytes, path: Path) -> tuple[TrialConfig, bool, Snapshot, list[int], int | None]:
    """Decodes the schema-1 state file ``path``, whose bytes are ``data``.

    Returns:
      (configuration, sensitive, snapshot, actions, pending arm); the snapshot's state is the
      list of the state's leaves in the schema-1 (= schema-2) order, which the store migrates
      when it is first read (`jaxbai.trial._schema2`).

    Raises:
      CorruptStoreError: a damaged schema-1 file, or a damaged store whose header is lost (it
        carries a store's marks, `_STORE_MARKS`).
      ValueError: not a trial at all, a configuration no trial may run, or a rehearsal
        (``noise="prng"``) of a global-DP algorithm, which kept no exact sums of its open
        phases and so cannot continue with the current release.
    """
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        document = err
    if not isinstance(document, dict) or document.get("format") != STATE_FORMAT:
        if any(mark in data for mark in _STORE_MARKS):
            what = "its SQLite header or its JSON is not readable"
            raise CorruptStoreError(f"trial {path} " + CORRUPT.format(what=what))
        raise ValueError(f"{path} is not a jaxbai trial (neither a store nor a state file)")
    if document.get("schema_version") != 1:
        raise ValueError(
            f"{path}: unsupported trial schema version {document.get('schema_version')!r} in a "
            "JSON state file (this jaxbai migrates version 1)"
        )
    try:
        config, snap, actions = _decode(document)
        sensitive, pending = document["sensitive"], document["pending_arm"]
    except (KeyError, TypeError, ValueError, AttributeError, binascii.Error) as err:
        what = f"a schema-1 file: {type(err).__name__}: {err}"
        raise CorruptStoreError(f"trial {path} " + CORRUPT.format(what=what)) from err
    config = stored_config(f"schema-1 trial file {path} (no trial may run it)", config, sensitive)
    info = algorithm_entry(config).info(**config.options)
    if not snap.windows and info.privacy == "global":
        raise ValueError(
            "this schema-1 rehearsal (noise='prng') of a global-DP algorithm cannot be migrated: "
            "it kept no exact sums of its open phases; start a new rehearsal"
        )
    return config, sensitive, snap, actions, pending


def _decode(document: dict[str, Any]) -> tuple[TrialConfig, Snapshot, list[int]]:
    raw = document["config"]
    config = TrialConfig(
        algorithm=raw["algorithm"],
        options=raw["options"],
        num_arms=raw["num_arms"],
        epsilon=_float(raw["epsilon"]),
        delta=_float(raw["delta"]),
        clip=raw["clip"],
        noise=raw["noise"],
    )
    windows = tuple((int(c), Fraction(s)) for c, s in document["windows"])
    actions = [int(a) for a in _array(document["actions"])]
    snap = Snapshot(
        key=jax.random.wrap_key_data(jnp.asarray(_array(document["key"]))),
        state=[_array(entry) for entry in document["state"]],
        samples=len(actions),
        windows=windows,
    )
    return config, snap, actions
