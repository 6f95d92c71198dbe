"""Storage of a trial: atomic durable writes, the lock, and the JSON codec of the state file.

The state file is one JSON document (``format``, ``schema_version``, ``sensitive``, ``config``,
``key``, ``state``, ``actions``, ``pending_arm``, ``windows``). Arrays are stored as dtype, shape
and base64 bytes, so they round-trip bit for bit; floats of the configuration as hexadecimal
strings; exact sums as fractions.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxbai.trial._config import SCHEMA_VERSION, STATE_FORMAT, Snapshot, TrialConfig

__all__ = [
    "atomic_write",
    "decode_config",
    "decode_snapshot",
    "encode",
    "lock",
    "remove_stale_temporaries",
]


# ------------------------------------------------------------------------------ file helpers
def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temporary_pattern(path: Path) -> tuple[str, str]:
    return f".{path.name}.", ".tmp"


def atomic_write(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Replaces (or, if ``exclusive``, creates) ``path`` with ``data``, atomically and durably.

    The bytes go to a mode-0600 temporary file in the same directory, which is fsynced and then
    renamed over ``path`` (or hard-linked to it when ``exclusive``); finally the directory is
    fsynced. A crash at any point leaves either the old file or the new one, never a mix.

    Args:
      path: the destination.
      data: the full new contents.
      exclusive: fail with FileExistsError if ``path`` exists.

    Example:
      >>> import tempfile
      >>> path = Path(tempfile.mkdtemp()) / "notes.txt"
      >>> atomic_write(path, b"first", exclusive=True)
      >>> atomic_write(path, b"second")
      >>> path.read_bytes()
      b'second'
    """
    prefix, suffix = _temporary_pattern(path)
    fd, temporary = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if exclusive:
            os.link(temporary, path)
            os.unlink(temporary)
        else:
            os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    _fsync_directory(path.parent)


def remove_stale_temporaries(path: Path) -> None:
    """Deletes temporaries of `atomic_write` that a killed process left next to ``path``."""
    prefix, suffix = _temporary_pattern(path)
    for stale in path.parent.glob(f"{prefix}*{suffix}"):
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
def _encode_array(array: Any) -> dict[str, Any]:
    arr = np.asarray(array)
    return {
        "dtype": arr.dtype.str,
        "shape": list(arr.shape),
        "data": base64.b64encode(arr.tobytes()).decode("ascii"),
    }


def _decode_array(entry: dict[str, Any]) -> np.ndarray:
    raw = base64.b64decode(entry["data"])
    return np.frombuffer(raw, dtype=np.dtype(entry["dtype"])).reshape(entry["shape"]).copy()


def _encode_float(x: float | None) -> str | None:
    return None if x is None else float(x).hex()


def _decode_float(x: str | None) -> float | None:
    return None if x is None else float.fromhex(x)


def _encode_state(state: Any) -> list[dict[str, Any]]:
    return [_encode_array(leaf) for leaf in jax.tree_util.tree_leaves(state)]


def _decode_state(entries: list[dict[str, Any]], template: Any) -> Any:
    leaves, treedef = jax.tree_util.tree_flatten(template)
    if len(entries) != len(leaves):
        raise ValueError("state file does not match the algorithm's state layout")
    decoded = []
    for entry, leaf in zip(entries, leaves, strict=True):
        arr = _decode_array(entry)
        if arr.shape != leaf.shape or arr.dtype != leaf.dtype:
            raise ValueError("state file does not match the algorithm's state layout")
        decoded.append(jnp.asarray(arr))
    return jax.tree_util.tree_unflatten(treedef, decoded)


def encode(config: TrialConfig, snap: Snapshot, sensitive: bool) -> bytes:
    """The state file's bytes for ``snap`` of a trial configured by ``config``.

    Args:
      config: the trial's configuration.
      snap: the snapshot to save.
      sensitive: whether the state holds raw-reward statistics (marks the file).
    """
    document = {
        "format": STATE_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "sensitive": sensitive,
        "config": {
            "algorithm": config.algorithm,
            "options": config.options,
            "num_arms": config.num_arms,
            "epsilon": _encode_float(config.epsilon),
            "delta": _encode_float(config.delta),
            "clip": config.clip,
            "noise": config.noise,
        },
        "key": _encode_array(jax.random.key_data(snap.key)),
        "state": _encode_state(snap.state),
        "actions": _encode_array(np.asarray(snap.actions, np.int32)),
        "pending_arm": snap.pending,
        "windows": [[count, str(total)] for count, total in snap.windows],
    }
    return (json.dumps(document, sort_keys=True, indent=1) + "\n").encode()


def decode_config(document: dict[str, Any]) -> TrialConfig:
    """The configuration of a parsed state file.

    Raises:
      ValueError: not a trial state file, or an unsupported schema version.
    """
    if document.get("format") != STATE_FORMAT:
        raise ValueError("not a jaxbai trial state file")
    if document.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(
            f"unsupported trial schema version {document.get('schema_version')!r} "
            f"(this jaxbai reads version {SCHEMA_VERSION})"
        )
    raw = document["config"]
    return TrialConfig(
        algorithm=raw["algorithm"],
        options=raw["options"],
        num_arms=raw["num_arms"],
        epsilon=_decode_float(raw["epsilon"]),
        delta=_decode_float(raw["delta"]),
        clip=raw["clip"],
        noise=raw["noise"],
    )


def decode_snapshot(document: dict[str, Any], template: Any) -> Snapshot:
    """The snapshot of a parsed state file (after `decode_config` accepted it).

    Args:
      document: the parsed state file.
      template: a state of the trial's algorithm with the right layout (e.g. a fresh ``init``).

    Raises:
      ValueError: the stored state does not match the template's layout.
    """
    return Snapshot(
        key=jax.random.wrap_key_data(jnp.asarray(_decode_array(document["key"]))),
        state=_decode_state(document["state"], template),
        actions=tuple(int(a) for a in _decode_array(document["actions"])),
        pending=document["pending_arm"],
        windows=tuple((int(c), Fraction(s)) for c, s in document["windows"]),
    )
